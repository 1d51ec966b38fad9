package org.sparseflow.dataflow.compile;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;
import org.sparseflow.dataflow.hw.ChipSpec;

/**
 * Partitions fused kernels into sections that fit the chip's compute units and on-chip memory
 * (greedy, in execution order; a fused kernel is never split across sections unless it does not fit
 * alone, then its ops are placed one by one, and a single op that still does not fit is split into
 * parts along its output). Then places each section: compute units in proportion to each stage's
 * work (FLOPs / efficiency), memory units in proportion to each stage's buffers.
 */
public final class Sectioner {
  /** Stream tile for tensors without a token dimension (parameters, optimizer state). */
  static final double NON_TOKEN_TILE_BYTES = 256 * 1024;

  private final ChipSpec chip;
  private final OpGraph graph;
  private final double tileFraction;

  public Sectioner(ChipSpec chip, OpGraph graph, long tokensPerMicroBatch) {
    this.chip = chip;
    this.graph = graph;
    this.tileFraction =
        tokensPerMicroBatch <= 0
            ? 1.0
            : Math.min(1.0, (double) chip.tileTokens() / tokensPerMicroBatch);
  }

  /** Efficiency of an op on this chip (fraction of the per-unit peak it sustains). */
  public static double efficiency(ChipSpec chip, OpNode op) {
    switch (op.kind()) {
      case LINEAR:
      case BATCHED_MATMUL:
        return chip.systolicEfficiency();
      case SPARSE_LINEAR:
        if (!op.sparsity().isSparse()) {
          return chip.systolicEfficiency();
        }
        // the compiler may also run a sparse weight densely (zeros included) when that is faster
        // per useful FLOP: dense path = systolic efficiency x density
        return Math.max(
            chip.sparseEfficiency(op.sparsity().family()),
            chip.systolicEfficiency() * op.sparsity().density());
      default:
        return chip.simdEfficiency();
    }
  }

  /** Dataflow mode: fused kernels packed into sections. */
  public List<Section> sectionDataflow(List<FusedKernel> kernels) {
    List<Section> out = new ArrayList<>();
    List<FusedKernel> curKernels = new ArrayList<>();
    List<OpNode> cur = new ArrayList<>();
    Deque<FusedKernel> queue = new ArrayDeque<>(kernels);
    while (!queue.isEmpty()) {
      FusedKernel k = queue.pollFirst();
      if (!cur.isEmpty() && group(cur.get(0).phase()) != group(k.phase())) {
        out.add(place(out.size(), curKernels, cur, 1));
        curKernels = new ArrayList<>();
        cur = new ArrayList<>();
      }
      List<OpNode> candidate = new ArrayList<>(cur);
      candidate.addAll(k.ops());
      if (fits(footprint(candidate, 1))) {
        cur = candidate;
        curKernels.add(k);
        continue;
      }
      if (!cur.isEmpty()) {
        out.add(place(out.size(), curKernels, cur, 1));
        curKernels = new ArrayList<>();
        cur = new ArrayList<>();
        queue.addFirst(k);
        continue;
      }
      if (k.ops().size() > 1) {
        // does not fit alone: place its ops one by one
        for (int i = k.ops().size() - 1; i >= 0; i--) {
          queue.addFirst(new FusedKernel(k.index(), k.rule() + "(split)", List.of(k.ops().get(i))));
        }
        continue;
      }
      out.add(place(out.size(), List.of(k), k.ops(), splitFactorFor(k.ops().get(0))));
    }
    if (!cur.isEmpty()) {
      out.add(place(out.size(), curKernels, cur, 1));
    }
    return out;
  }

  /** Kernel-by-kernel mode: every op its own section, all tensors through off-chip memory. */
  public List<Section> sectionKernelByKernel() {
    List<Section> out = new ArrayList<>();
    for (OpNode op : graph.ops()) {
      FusedKernel k = new FusedKernel(out.size(), "single", List.of(op));
      int split = fits(footprint(List.of(op), 1)) ? 1 : splitFactorFor(op);
      out.add(place(out.size(), List.of(k), List.of(op), split));
    }
    return out;
  }

  private static int group(Phase p) {
    return p == Phase.OPTIMIZER ? 1 : 0;
  }

  public boolean fits(Footprint f) {
    return f.onChipBytes() <= chip.onChipMemoryBytes()
        && f.memoryUnits() <= chip.memoryUnits()
        && f.stages() <= chip.computeUnits();
  }

  private int splitFactorFor(OpNode op) {
    Footprint one = footprint(List.of(op), 1);
    double free = chip.onChipMemoryBytes() - one.bufferBytes();
    if (free <= 0) {
      throw new IllegalArgumentException(
          "op '"
              + op.name()
              + "' cannot be mapped on "
              + chip.name()
              + ": its stream buffers alone ("
              + (long) one.bufferBytes()
              + " B) exceed on-chip memory ("
              + (long) chip.onChipMemoryBytes()
              + " B)");
    }
    int k = (int) Math.max(2, Math.ceil(one.residentBytes() / free));
    while (!fits(footprint(List.of(op), k))) {
      k = (int) Math.ceil(k * 1.25) + 1;
      if (k > 1_000_000) {
        throw new IllegalArgumentException(
            "op '" + op.name() + "' cannot be split to fit " + chip.name());
      }
    }
    return k;
  }

  /**
   * Whether a tensor used by op is held whole on chip (weights, gradient accumulators, second
   * matmul operand).
   */
  static boolean resident(OpNode op, Tensor t) {
    if (op.kind() == OpKind.OPTIMIZER) {
      return false;
    }
    if (op.kind() == OpKind.LINEAR || op.kind() == OpKind.SPARSE_LINEAR) {
      return t.kind() == TensorKind.WEIGHT || t.kind() == TensorKind.WEIGHT_GRAD;
    }
    if (op.kind() == OpKind.BATCHED_MATMUL) {
      return op.inputs().size() > 1 && op.inputs().get(1) == t;
    }
    return false;
  }

  private double tile(Tensor t) {
    if (t.kind() == TensorKind.ACTIVATION || t.kind() == TensorKind.INPUT) {
      return t.bytes() * tileFraction;
    }
    return Math.min(t.bytes(), NON_TOKEN_TILE_BYTES);
  }

  private int units(double bytes) {
    return (int) Math.max(1, Math.ceil(bytes / chip.bytesPerMemoryUnit()));
  }

  /** Footprint of ops mapped together, each resident tensor divided into {@code split} parts. */
  public Footprint footprint(List<OpNode> ops, int split) {
    Set<Integer> inSection = new HashSet<>();
    for (OpNode o : ops) {
      inSection.add(o.id());
    }
    Map<Integer, Boolean> seen = new HashMap<>();
    Tally sum = new Tally();
    int stages = 0;
    for (OpNode op : ops) {
      if (op.kind() != OpKind.LAYOUT) {
        stages++;
      }
      for (Tensor t : op.inputs()) {
        OpNode p = graph.producer(t);
        boolean internal = p != null && inSection.contains(p.id());
        boolean res = resident(op, t);
        if (internal) {
          sum.network += t.bytes();
        }
        if (seen.putIfAbsent(t.id(), Boolean.TRUE) != null) {
          continue;
        }
        if (res) {
          sum.keep(t.bytes() / split);
          if (!internal) {
            boolean param =
                t.kind() == TensorKind.WEIGHT
                    || t.kind() == TensorKind.OPTIMIZER_STATE
                    || t.kind() == TensorKind.WEIGHT_GRAD;
            if (param) {
              sum.setup += t.bytes() / split;
            } else {
              sum.in += t.bytes();
            }
          }
        } else if (internal) {
          sum.buffer(chip.bufferDepth() * tile(t));
        } else {
          sum.buffer(2 * tile(t));
          sum.in += op.readBytes(t);
        }
      }
      for (Tensor t : op.outputs()) {
        boolean allInside = true;
        List<OpNode> cons = graph.consumers(t);
        for (OpNode c : cons) {
          if (!inSection.contains(c.id())) {
            allInside = false;
            break;
          }
        }
        boolean leaves = cons.isEmpty() || !allInside;
        boolean res = resident(op, t);
        if (seen.putIfAbsent(t.id(), Boolean.TRUE) != null) {
          continue;
        }
        if (res) {
          sum.keep(t.bytes() / split);
          // gradient accumulator across micro-batches: read before, written after streaming
          if (leaves) {
            sum.setup += 2 * t.bytes() / split;
          }
        } else if (leaves) {
          sum.outB += t.bytes() / split;
          sum.buffer(2 * tile(t) / split);
        }
        // internal edges get their buffer at the consumer side (counted when the consumer reads it)
      }
    }
    // capacity fields are per part; traffic fields are totals over all parts (streamed inputs are
    // re-read by every part of a split op, outputs and parameters are moved once in total)
    return new Footprint(
        sum.resident,
        sum.buffers,
        sum.mus,
        stages,
        sum.in * split,
        sum.outB * split,
        sum.setup * split,
        sum.network);
  }

  /** The running totals of {@link #footprint}. */
  private final class Tally {
    double resident;
    double buffers;
    double in;
    double outB;
    double setup;
    double network;
    int mus;

    /** A resident tensor part of {@code bytes}: kept on chip in memory units of its own. */
    void keep(double bytes) {
      resident += bytes;
      mus += units(bytes);
    }

    /** A streaming buffer of {@code bytes} in memory units of its own. */
    void buffer(double bytes) {
      buffers += bytes;
      mus += units(bytes);
    }
  }

  /** Places a section: compute units in proportion to FLOPs/efficiency, memory units to buffers. */
  private Section place(int index, List<FusedKernel> kernels, List<OpNode> ops, int split) {
    Footprint f = footprint(ops, split);
    List<OpNode> staged = new ArrayList<>();
    double totalWork = 0;
    for (OpNode o : ops) {
      if (o.kind() == OpKind.LAYOUT) {
        continue;
      }
      staged.add(o);
      totalWork += o.flops() / efficiency(chip, o);
    }
    // every stage gets one unit, the rest is shared in proportion to work; floor() keeps the
    // allocation monotone in the number of units (more units never shrink a stage)
    int cu = chip.computeUnits();
    int[] alloc = new int[staged.size()];
    int spare = Math.max(0, cu - staged.size());
    for (int i = 0; i < staged.size(); i++) {
      OpNode o = staged.get(i);
      double share = totalWork > 0 ? (o.flops() / efficiency(chip, o)) / totalWork : 0;
      alloc[i] = 1 + (int) Math.floor(share * spare);
    }
    List<Section.StagePlacement> placement = new ArrayList<>();
    int muPerStage = staged.isEmpty() ? 0 : Math.max(1, f.memoryUnits() / staged.size());
    int si = 0;
    for (OpNode o : ops) {
      if (o.kind() == OpKind.LAYOUT) {
        placement.add(new Section.StagePlacement(o, 0, 1, 1.0));
      } else {
        placement.add(new Section.StagePlacement(o, alloc[si++], muPerStage, efficiency(chip, o)));
      }
    }
    return new Section(index, kernels, ops, split, f, placement);
  }
}
