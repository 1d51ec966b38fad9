package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import org.sparseflow.dataflow.api.Simulate;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.cluster.GpuTrainingModel;
import org.sparseflow.dataflow.cluster.ParallelConfig;
import org.sparseflow.dataflow.cluster.TransformerShape;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.sim.ChipCollectives;

/** Communication properties: more bandwidth is never slower; more chips never add work per chip. */
class CommunicationPropertiesTest {
  private static final ClusterSpec DGX = ClusterSpec.builtin("dgx-a100-80gb");
  private static final ChipSpec SN30 = ChipSpec.builtin("sn30");

  /** Small GPT shapes (so that every parallel layout fits) with a valid parallel configuration. */
  @Provide
  Arbitrary<Object[]> layouts() {
    return Combinators.combine(
            Arbitraries.of(1, 2, 4, 8),
            Arbitraries.of(1, 2, 4),
            Arbitraries.of(1, 2, 4, 16),
            Arbitraries.of(1, 2),
            Arbitraries.of("none", "attention", "full"),
            Arbitraries.of(true, false))
        .as(
            (t, p, d, mb, rc, overlap) -> {
              TransformerShape m = new TransformerShape("prop", 8, 1024, 16, 4096, 8192, 512);
              ParallelConfig c = new ParallelConfig(t, p, d, mb, 64 * mb, 1, rc, overlap);
              return new Object[] {m, c};
            });
  }

  @Property(tries = 40)
  void moreLinkBandwidthNeverMakesAGpuIterationSlower(
      @ForAll("layouts") Object[] layout, @ForAll @DoubleRange(min = 1.0, max = 8.0) double f) {
    TransformerShape m = (TransformerShape) layout[0];
    ParallelConfig c = (ParallelConfig) layout[1];
    double base = new GpuTrainingModel(DGX).simulate(m, c).iterationSeconds();
    double fast =
        new GpuTrainingModel(DGX.withLinkBandwidthScaled(f)).simulate(m, c).iterationSeconds();
    assertTrue(fast <= base * (1 + 1e-12), c + ": x" + f + " bandwidth " + fast + " > " + base);
  }

  @Property(tries = 40)
  void moreChipLinkBandwidthNeverMakesTheGradientReductionSlower(
      @ForAll @IntRange(min = 1, max = 64) int chips,
      @ForAll @DoubleRange(min = 1e6, max = 1e11) double bytes,
      @ForAll @DoubleRange(min = 1.0, max = 8.0) double f) {
    double base = ChipCollectives.allReduceSeconds(SN30, bytes, chips);
    double fast = ChipCollectives.allReduceSeconds(SN30.withLinkBandwidthScaled(f), bytes, chips);
    assertTrue(fast <= base * (1 + 1e-12), chips + " chips: " + fast + " > " + base);
    assertTrue(base >= 0);
  }

  @Property(tries = 20)
  void moreChipsNeverMeanMoreWorkPerChip(
      @ForAll @IntRange(min = 1, max = 32) int a,
      @ForAll @IntRange(min = 1, max = 32) int b,
      @ForAll("batches") int globalBatch) {
    int lo = Math.min(a, b);
    int hi = Math.max(a, b);
    GptSpec s = GptSpec.preset("gpt-mini").globalBatch(globalBatch).sparsity(0.75);
    OpGraph few = Simulate.graph(s, lo);
    OpGraph many = Simulate.graph(s, hi);
    assertTrue(
        many.stepFlops() <= few.stepFlops() * (1 + 1e-12),
        hi + " chips: " + many.stepFlops() + " FLOP per chip > " + few.stepFlops() + " at " + lo);
  }

  @Provide
  Arbitrary<Integer> doublings() {
    return Arbitraries.of(1, 2, 4);
  }

  @Provide
  Arbitrary<Integer> batches() {
    return Arbitraries.integers().between(1, 256);
  }

  @Property(tries = 30)
  void moreDataParallelGpusNeverMeanMoreWorkPerGpu(
      @ForAll("layouts") Object[] layout, @ForAll("doublings") int k) {
    TransformerShape m = (TransformerShape) layout[0];
    ParallelConfig c = (ParallelConfig) layout[1];
    ParallelConfig wider =
        new ParallelConfig(
            c.tensor(),
            c.pipeline(),
            c.data() * k,
            c.microBatch(),
            c.globalBatch() * 4,
            1,
            c.recompute(),
            c.overlapDataParallel());
    ParallelConfig narrow =
        new ParallelConfig(
            c.tensor(),
            c.pipeline(),
            c.data(),
            c.microBatch(),
            c.globalBatch() * 4,
            1,
            c.recompute(),
            c.overlapDataParallel());
    GpuTrainingModel model = new GpuTrainingModel(DGX);
    var r1 = model.simulate(m, narrow);
    var r2 = model.simulate(m, wider);
    assertTrue(
        r2.hardwareFlops() / r2.gpus() <= r1.hardwareFlops() / r1.gpus() * (1 + 1e-12),
        narrow + " vs " + wider);
  }
}
