package org.sparseflow.mst;

import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntUnaryOperator;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.Axpy;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.packed.PackedBlockLinear;

/**
 * The one implementation of MST's changes to an optimizer step u of a sparse weight, shared by the
 * DL4J and SameDiff adapters: the density-aware scale s ({@link MstCore#updateScale}) and, for
 * Adam, the bias correction c of units whose optimizer state was reset ({@link
 * MstCore#resetUnitCorrection}). The step applied becomes s·c·u.
 */
final class UpdateScaler {

  /**
   * Set false by tests to compare the direct-buffer path of {@link #addOnYoungUnits} with the ND4J
   * one.
   */
  static boolean FAST_CORRECTION = true;

  private final MstCore core;
  private final Map<String, INDArray> correctionBuffers = new HashMap<>();

  UpdateScaler(MstCore core) {
    this.core = core;
  }

  /** Whether any step changes at all (a scale exponent or reset bias correction is configured). */
  boolean active() {
    return core.config().getUpdateScaleExponent() != 0 || core.config().isResetBiasCorrection();
  }

  /**
   * DL4J: the optimizer already applied W -= u; turns that into W -= s·c·u, i.e. W += (1 - s·c) u.
   *
   * @param betas Adam's β1, β2 for the bias correction, or null (no correction)
   */
  void correctAppliedStep(String name, INDArray w, INDArray u, double[] betas) {
    double s = core.updateScale(name);
    if (s != 1.0) {
      Nd4j.exec(new Axpy(u, w, w, 1.0 - s)); // W += (1 - s) u, in place
    }
    float[] c = unitCorrection(name, betas);
    if (c != null) {
      addOnYoungUnits(name, w, u, s, c); // W += s (1 - c) u: W += (1 - s c) u in all
    }
  }

  /**
   * DL4J, packed storage: as {@link #correctAppliedStep} for the step u the optimizer applied to a
   * packed weight w (its kept blocks, slot by slot); {@code slotOfUnit} gives a block's packed slot
   * (-1 when not kept).
   */
  void correctAppliedPackedStep(
      String name, INDArray w, INDArray u, double[] betas, IntUnaryOperator slotOfUnit) {
    double s = core.updateScale(name);
    if (s != 1.0) {
      Nd4j.exec(new Axpy(u, w, w, 1.0 - s)); // W += (1 - s) u, in place
    }
    float[] c = unitCorrection(name, betas);
    if (c == null) {
      return;
    }
    LayerMask m = core.masks().get(name);
    int b = m.pattern().blockSize();
    for (int unit = 0; unit < c.length; unit++) {
      int slot = c[unit] == 1f || !m.isUnitActive(unit) ? -1 : slotOfUnit.applyAsInt(unit);
      if (slot >= 0) { // W += s (1 - c) u on the young block: W += (1 - s c) u in all
        PackedBlockLinear.block(w, slot, b)
            .addi(PackedBlockLinear.block(u, slot, b).mul(s * (1.0 - c[unit])));
      }
    }
  }

  /**
   * SameDiff: scales the step u in place before the optimizer applies it: u = s·c·u.
   *
   * @param betas Adam's β1, β2 for the bias correction, or null (no correction)
   */
  void scaleStep(String name, INDArray u, double[] betas) {
    double s = core.updateScale(name);
    float[] c = unitCorrection(name, betas);
    if (c != null) {
      addOnYoungUnits(name, u, u, -1.0, c); // u -= (1 - c) u: u = c u
    }
    if (s != 1.0) {
      u.muli(s);
    }
  }

  /**
   * SameDiff, packed storage: as {@link #scaleStep} for the step u of a packed weight (its kept
   * blocks, slot by slot); {@code slotOfUnit} gives a block's packed slot (-1 when not kept).
   */
  void scalePackedStep(String name, INDArray u, double[] betas, IntUnaryOperator slotOfUnit) {
    double s = core.updateScale(name);
    float[] c = unitCorrection(name, betas);
    if (c != null) {
      LayerMask m = core.masks().get(name);
      int b = m.pattern().blockSize();
      // a block's values are b * b consecutive floats of the row-major packed array: scaled in
      // place on the buffer (one small ND4J op per young block cost ~40 % of a gpt-mini MST step)
      boolean direct = FAST_CORRECTION && u.dataType() == DataType.FLOAT && u.ordering() == 'c';
      FloatBuffer ub = direct ? floatsOf(u.reshape('c', u.length() / b, b)) : null;
      for (int unit = 0; unit < c.length; unit++) {
        int slot = c[unit] == 1f || !m.isUnitActive(unit) ? -1 : slotOfUnit.applyAsInt(unit);
        if (slot < 0) {
          continue;
        }
        if (direct) {
          for (int i = slot * b * b, end = i + b * b; i < end; i++) {
            ub.put(i, ub.get(i) * c[unit]);
          }
        } else {
          PackedBlockLinear.block(u, slot, b).muli(c[unit]);
        }
      }
    }
    if (s != 1.0) {
      u.muli(s);
    }
  }

  private float[] unitCorrection(String name, double[] betas) {
    return betas == null || !core.config().isResetBiasCorrection()
        ? null
        : core.resetUnitCorrection(name, core.step(), betas[0], betas[1]);
  }

  /**
   * target += k·(1 - c_unit)·u on the active units whose factor c_unit is not 1 (pruned units have
   * a zero step; units never reset have c = 1). {@code target} may be {@code u} itself: every
   * element is read before it is written.
   */
  private void addOnYoungUnits(String name, INDArray target, INDArray u, double k, float[] c) {
    LayerMask m = core.masks().get(name);
    if (addOnYoungUnitsDirect(target, u, k, c, m)) {
      return;
    }
    INDArray f = correctionBuffer(name, target);
    f.assign(Nd4j.create(m.unitsToElements(c), new long[] {m.rows(), m.cols()}, 'c'));
    f.rsubi(1.0).muli(k).muli(u);
    target.addi(f);
  }

  /**
   * The direct path of {@link #addOnYoungUnits}, straight on the float buffers, so the cost follows
   * the active young units, not the layer size.
   *
   * @return false when the arrays are not plain float matrices (the caller then uses ND4J ops)
   */
  private static boolean addOnYoungUnitsDirect(
      INDArray w, INDArray u, double k0, float[] unitFactor, LayerMask m) {
    if (!FAST_CORRECTION
        || w.dataType() != DataType.FLOAT
        || u.dataType() != DataType.FLOAT
        || w.rank() != 2
        || u.rank() != 2) {
      return false;
    }
    FloatBuffer wb = floatsOf(w);
    FloatBuffer ub = floatsOf(u);
    long w0 = w.stride(0);
    long w1 = w.stride(1);
    long u0 = u.stride(0);
    long u1 = u.stride(1);
    int b = m.pattern().blockSize(); // 1 for element and N:M units
    int blockCols = m.cols() / b;
    for (int unit = 0; unit < unitFactor.length; unit++) {
      float c = unitFactor[unit];
      if (c == 1f || !m.isUnitActive(unit)) {
        continue;
      }
      float k = (float) (k0 * (1.0 - c));
      int r0 = (unit / blockCols) * b;
      int c0 = (unit % blockCols) * b;
      for (int r = r0; r < r0 + b; r++) {
        for (int col = c0; col < c0 + b; col++) {
          int wi = (int) (r * w0 + col * w1);
          wb.put(wi, wb.get(wi) + k * ub.get((int) (r * u0 + col * u1)));
        }
      }
    }
    return true;
  }

  /**
   * The memory of a float array from element 0 through its last element, indexed by r * stride(0) +
   * c * stride(1).
   */
  private static FloatBuffer floatsOf(INDArray a) {
    long addr = NativeAddress.of(a);
    long span = 1 + (a.size(0) - 1) * a.stride(0) + (a.size(1) - 1) * a.stride(1);
    return RawPointers.floatBuffer(addr, span);
  }

  private INDArray correctionBuffer(String name, INDArray like) {
    return correctionBuffers.computeIfAbsent(
        name, k -> Nd4j.createUninitialized(like.dataType(), like.shape(), like.ordering()));
  }
}
