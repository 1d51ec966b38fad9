package org.sparseflow.dataflow.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.sparseflow.dataflow.compile.Footprint;
import org.sparseflow.dataflow.compile.FusedKernel;
import org.sparseflow.dataflow.compile.Fuser;
import org.sparseflow.dataflow.compile.FusionRule;
import org.sparseflow.dataflow.compile.FusionRules;
import org.sparseflow.dataflow.compile.Section;
import org.sparseflow.dataflow.compile.Sectioner;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.TensorKind;
import org.sparseflow.dataflow.hw.ChipSpec;

/**
 * Times a training step on a dataflow chip. Per section (per micro-batch):
 *
 * <pre>
 *   compute   = max over stages of FLOPs_i / (units_i * unitPeak * eff_i)      (pipeline steady
 * state)
 *   network   = bytes between stages / on-chip bandwidth
 *   offChip   = streamed activation bytes in + out / off-chip bandwidth
 *   setup     = weight (+ gradient accumulator) bytes / off-chip bandwidth      (not overlapped, as
 * DFModel's Setup)
 *   fillDrain = (stages - 1) * compute / tiles                                 (tiles = tokens /
 * tileTokens)
 *   switch    = sectionSwitch * splitFactor
 *   section   = max(compute, network, offChip) + (setup + fillDrain + switch) / G
 * </pre>
 *
 * G (micro-batches per section pass) is how many micro-batches stream through a section per
 * configuration load: as many as off-chip memory can hold saved activations for, next to the model
 * state, capped at the micro-batches of one step. Times are per micro-batch. Step = microBatches *
 * sum(forward/backward sections) + sum(optimizer sections). SIMULATED.
 */
public final class DataflowSimulator {
  private final ChipSpec chip;
  private final List<FusionRule> rules;

  public DataflowSimulator(ChipSpec chip) {
    this(chip, FusionRules.builtin());
  }

  public DataflowSimulator(ChipSpec chip, List<FusionRule> rules) {
    this.chip = chip;
    this.rules = List.copyOf(rules);
  }

  public ChipSpec chip() {
    return chip;
  }

  /**
   * Token rows per micro-batch: explicit value, or the largest leading dimension of an activation.
   */
  public static long tokens(OpGraph g, long explicit) {
    if (explicit > 0) {
      return explicit;
    }
    long best = 1;
    for (var t : g.tensors()) {
      if (t.kind() == TensorKind.ACTIVATION && t.shape().length >= 2) {
        best = Math.max(best, t.shape()[0]);
      }
    }
    return best;
  }

  public SimulationReport simulate(OpGraph g, ExecutionMode mode, long tokensPerMicroBatch) {
    long tokens = tokens(g, tokensPerMicroBatch);
    Sectioner sectioner = new Sectioner(chip, g, tokens);
    List<Section> sections;
    if (mode == ExecutionMode.DATAFLOW) {
      List<FusedKernel> kernels = new Fuser(rules).fuse(g);
      sections = sectioner.sectionDataflow(kernels);
    } else {
      sections = sectioner.sectionKernelByKernel();
    }
    double tiles = Math.max(1.0, (double) tokens / chip.tileTokens());
    int perPass = microBatchesPerPass(g);
    List<SectionTiming> st = new ArrayList<>();
    List<KernelTiming> kt = new ArrayList<>();
    double micro = 0, opt = 0;
    for (Section s : sections) {
      SectionTiming t =
          timeSection(s, g.microBatches(), tiles, s.phase() == Phase.OPTIMIZER ? 1 : perPass);
      st.add(t);
      if (s.phase() == Phase.OPTIMIZER) {
        opt += t.totalS() * t.repeats();
      } else {
        micro += t.totalS();
      }
      attributeKernels(s, t, kt);
    }
    List<String> notes = new ArrayList<>();
    notes.add(
        "All times are SIMULATED by an analytical model (docs/dataflow-model.md), not measured.");
    notes.add(
        String.format(
            Locale.ROOT,
            "%d sections, %d tiles of %d tokens per micro-batch, %d micro-batches per step, %d per"
                + " section pass",
            sections.size(),
            (long) tiles,
            chip.tileTokens(),
            g.microBatches(),
            perPass));
    return SimulationReport.ofStep(
        chip.name(), "dataflow-chip", mode.label(), g, micro, opt, chip.peakFlops(), st, kt, notes);
  }

  /**
   * Micro-batches that stream through each section per configuration load: limited by off-chip
   * memory for the activations saved between forward and backward, after the model state.
   */
  public int microBatchesPerPass(OpGraph g) {
    double saved = 0, state = 0;
    Set<Integer> counted = new HashSet<>();
    for (OpNode op : g.ops()) {
      if (op.phase() == Phase.OPTIMIZER) {
        for (var t : op.inputs()) {
          if (counted.add(t.id())) {
            state += t.bytes();
          }
        }
        continue;
      }
      if (op.phase() != Phase.FORWARD) {
        continue;
      }
      for (var t : op.outputs()) {
        for (OpNode c : g.consumers(t)) {
          if (c.phase() == Phase.BACKWARD) {
            saved += t.bytes();
            break;
          }
        }
      }
    }
    if (saved <= 0) {
      return g.microBatches();
    }
    double free = chip.offChipCapacityBytes() - state;
    int n = (int) Math.floor(free / saved);
    return Math.max(1, Math.min(g.microBatches(), n));
  }

  SectionTiming timeSection(Section s, int microBatches, double tiles, int perPass) {
    Footprint f = s.footprint();
    double unitPeak = chip.flopsPerComputeUnit();
    double compute = 0;
    int cuUsed = 0;
    for (Section.StagePlacement p : s.placement()) {
      cuUsed += p.computeUnits();
      if (p.computeUnits() == 0 || p.op().flops() == 0) {
        continue;
      }
      double t = p.op().flops() / (p.computeUnits() * unitPeak * p.efficiency());
      compute = Math.max(compute, t);
    }
    double network = f.networkBytes() / chip.onChipBandwidth();
    double offChip = (f.streamInBytes() + f.streamOutBytes()) / chip.offChipBandwidth();
    double setup = f.setupBytes() / chip.offChipBandwidth();
    double fill = Math.max(0, f.stages() - 1) * compute / tiles / perPass;
    double sw = chip.sectionSwitchSeconds() * s.splitFactor() / perPass;
    setup /= perPass;
    double overlapped = Math.max(compute, Math.max(network, offChip));
    double total = overlapped + setup + fill + sw;
    String bound;
    if (setup > overlapped) {
      bound = "weight-load";
    } else if (overlapped == compute) {
      bound = "compute";
    } else if (overlapped == offChip) {
      bound = "off-chip";
    } else {
      bound = "network";
    }
    int repeats = s.phase() == Phase.OPTIMIZER ? 1 : microBatches;
    double util = total > 0 ? s.flops() / (total * chip.peakFlops()) : 0;
    return new SectionTiming(
        s.index(),
        s.name(),
        s.phase().name(),
        s.kernels().size(),
        s.ops().size(),
        f.stages(),
        s.splitFactor(),
        repeats,
        s.flops(),
        compute,
        network,
        offChip,
        setup,
        fill,
        sw,
        total,
        bound,
        util,
        f.onChipBytes(),
        f.memoryUnits(),
        cuUsed,
        f.streamInBytes() + f.streamOutBytes() + f.setupBytes());
  }

  private void attributeKernels(Section s, SectionTiming t, List<KernelTiming> out) {
    Map<Integer, Double> work = new HashMap<>();
    double total = 0;
    for (FusedKernel k : s.kernels()) {
      double w = 0;
      for (OpNode o : k.ops()) {
        w += o.kind() == OpKind.LAYOUT ? 0 : o.flops() / Sectioner.efficiency(chip, o);
      }
      work.put(k.index(), w);
      total += w;
    }
    for (FusedKernel k : s.kernels()) {
      double share = total > 0 ? work.get(k.index()) / total : 1.0 / s.kernels().size();
      double time = t.totalS() * share;
      double util = time > 0 ? k.flops() / (time * chip.peakFlops()) : 0;
      out.add(
          new KernelTiming(
              out.size(),
              k.name(),
              k.rule(),
              s.index(),
              k.ops().size(),
              t.repeats(),
              k.flops(),
              time,
              t.bound(),
              util));
    }
  }
}
