package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.DoubleRange;
import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.compile.Fuser;
import org.sparseflow.dataflow.compile.Section;
import org.sparseflow.dataflow.compile.Sectioner;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.sim.DataflowSimulator;
import org.sparseflow.dataflow.sim.ExecutionMode;
import org.sparseflow.dataflow.sim.GpuSimulator;

class SimulatorPropertiesTest {
  private static final ChipSpec SN10 = ChipSpec.builtin("sn10");
  private static final ChipSpec SN30 = ChipSpec.builtin("sn30");

  @Provide
  Arbitrary<GptSpec> specs() {
    return Combinators.combine(
            Arbitraries.integers().between(1, 3),
            Arbitraries.of(32, 64, 128, 256),
            Arbitraries.of(1, 2, 4),
            Arbitraries.of(16, 64, 256),
            Arbitraries.of(0.0, 0.5, 0.75, 0.875, 0.95),
            Arbitraries.of("unstructured", "block16", "2:4"),
            Arbitraries.of("none", "attention", "full"))
        .as(
            (l, d, h, seq, sp, pat, rc) ->
                new GptSpec()
                    .name("prop")
                    .layers(l)
                    .dModel(d)
                    .heads(h)
                    .ffn(4 * d)
                    .seq(seq)
                    .batch(1)
                    .vocab(512)
                    .sparsity(pat.equals("2:4") && sp > 0 ? 0.5 : sp)
                    .pattern(pat)
                    .recompute(rc));
  }

  @Property(tries = 25)
  void everyOpIsMappedExactlyOnceAndNoSectionExceedsCapacity(@ForAll("specs") GptSpec spec) {
    OpGraph g = GptGraphBuilder.build(spec, 2);
    for (ChipSpec chip : List.of(SN10, SN30)) {
      Sectioner sec = new Sectioner(chip, g, (long) spec.getBatch() * spec.getSeq());
      for (List<Section> sections :
          List.of(
              sec.sectionDataflow(Fuser.withBuiltinRules().fuse(g)), sec.sectionKernelByKernel())) {
        Map<Integer, Integer> count = new HashMap<>();
        for (Section s : sections) {
          for (OpNode op : s.ops()) {
            count.merge(op.id(), 1, Integer::sum);
          }
          assertTrue(
              sec.fits(s.footprint()), "section " + s.name() + " over capacity: " + s.footprint());
          int units = s.placement().stream().mapToInt(Section.StagePlacement::computeUnits).sum();
          assertTrue(units <= chip.computeUnits(), "placement uses " + units + " units");
        }
        assertEquals(g.ops().size(), count.size());
        assertTrue(count.values().stream().allMatch(c -> c == 1));
      }
    }
  }

  @Property(tries = 20)
  void moreBandwidthOrComputeNeverMakesAStepSlower(
      @ForAll("specs") GptSpec spec, @ForAll @DoubleRange(min = 1.0, max = 4.0) double factor) {
    OpGraph g = GptGraphBuilder.build(spec, 2);
    long tokens = (long) spec.getBatch() * spec.getSeq();
    for (ExecutionMode mode : ExecutionMode.values()) {
      double base = new DataflowSimulator(SN30).simulate(g, mode, tokens).stepSeconds();
      double bw =
          new DataflowSimulator(SN30.scaled(1, factor, factor))
              .simulate(g, mode, tokens)
              .stepSeconds();
      double cu =
          new DataflowSimulator(SN30.scaled(factor, 1, 1)).simulate(g, mode, tokens).stepSeconds();
      assertTrue(bw <= base * (1 + 1e-12), mode + ": more bandwidth slower " + bw + " > " + base);
      assertTrue(cu <= base * (1 + 1e-12), mode + ": more compute slower " + cu + " > " + base);
    }
  }

  @Property(tries = 30)
  void higherSparsityNeverAddsFlops(
      @ForAll("specs") GptSpec spec,
      @ForAll @DoubleRange(min = 0.0, max = 0.99) double a,
      @ForAll @DoubleRange(min = 0.0, max = 0.99) double b) {
    double lo = Math.min(a, b), hi = Math.max(a, b);
    GptSpec s = spec.copy().pattern("unstructured");
    double fLo = GptGraphBuilder.build(s.copy().sparsity(lo), 1).totalFlops();
    double fHi = GptGraphBuilder.build(s.copy().sparsity(hi), 1).totalFlops();
    assertTrue(
        fHi <= fLo * (1 + 1e-12),
        "sparsity " + hi + " has " + fHi + " FLOPs > " + fLo + " at " + lo);
  }

  @Property(tries = 15)
  void gpuRooflineIsMonotoneInBandwidthAndDenseUnstructuredCostsTheSame(
      @ForAll("specs") GptSpec spec) {
    GpuSpec a100 = GpuSpec.builtin("a100-40gb");
    GpuSpec faster = GpuSpec.builtin("a100-80gb"); // same compute, more bandwidth
    OpGraph g = GptGraphBuilder.build(spec, 1);
    assertTrue(
        new GpuSimulator(faster).simulate(g).stepSeconds()
            <= new GpuSimulator(a100).simulate(g).stepSeconds());
    if (spec.getPattern().equals("unstructured") && spec.getSparsity() > 0) {
      OpGraph dense = GptGraphBuilder.build(spec.copy().sparsity(0), 1);
      // unstructured sparsity runs dense on the GPU: the same time as the dense model
      assertEquals(
          new GpuSimulator(a100).simulate(dense).stepSeconds(),
          new GpuSimulator(a100).simulate(g).stepSeconds(),
          1e-9);
    }
  }
}
