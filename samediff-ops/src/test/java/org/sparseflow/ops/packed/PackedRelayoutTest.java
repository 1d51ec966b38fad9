package org.sparseflow.ops.packed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * What MST on packed storage builds on: moving packed values between layouts (with spare capacity),
 * finding a block's slot, and the dense gradient's block norms computed one block row at a time,
 * each against a dense reference in double precision.
 */
class PackedRelayoutTest {

  static PackedLayout layout(int rows, int cols, int b, double density, long seed) {
    return PackedLayout.of((BlockMask) PatternSpec.block(b).random(rows, cols, density, seed));
  }

  @Test
  void slotOfFindsEveryKeptBlockAndOnlyThose() {
    PackedLayout l = layout(48, 80, 8, 0.4, 1);
    int found = 0;
    for (int unit = 0; unit < l.blockRows() * l.blockCols(); unit++) {
      int slot = l.slotOf(unit);
      BlockMask m = l.toMask();
      boolean kept = m.isKept((unit / l.blockCols()) * 8L, (unit % l.blockCols()) * 8L);
      assertEquals(kept, slot >= 0, "unit " + unit);
      if (slot >= 0) {
        assertEquals(unit / l.blockCols(), l.blockRowOf(slot));
        found++;
      }
    }
    assertEquals(l.keptBlocks(), found);
    assertEquals(-1, l.slotOf(-1));
    assertEquals(-1, l.slotOf(l.blockRows() * l.blockCols()));
  }

  @Test
  void relayoutKeepsSharedBlocksZeroesNewOnesAndSpareSlots() {
    PackedLayout from = layout(32, 64, 8, 0.5, 2);
    PackedLayout to = layout(32, 64, 8, 0.3, 3);
    INDArray dense = Nd4j.randn(DataType.DOUBLE, 32, 64);
    INDArray packed = PackedBlockLinear.pack(dense, from);
    int cap = to.keptBlocks() + 3;
    INDArray moved = PackedBlockLinear.relayout(packed, from, to, cap);
    assertArrayEquals(new long[] {cap * 8L, 8}, moved.shape());
    // reference: the dense weight restricted to blocks kept in both
    INDArray want =
        dense
            .mul(from.toMask().toDense(DataType.DOUBLE))
            .muli(to.toMask().toDense(DataType.DOUBLE));
    INDArray kept = PackedBlockLinear.leadingBlocks(moved, to.keptBlocks(), 8);
    assertEquals(want, PackedBlockLinear.unpack(kept, to));
    for (int s = to.keptBlocks(); s < cap; s++) {
      assertEquals(0.0, PackedBlockLinear.block(moved, s, 8).norm1Number().doubleValue(), 0.0);
    }
    // a float array with spare slots moves the same way, from its leading blocks
    INDArray spare = Nd4j.zeros(DataType.FLOAT, (from.keptBlocks() + 2) * 8L, 8);
    PackedBlockLinear.leadingBlocks(spare, from.keptBlocks(), 8).assign(packed);
    INDArray f = PackedBlockLinear.relayout(spare, from, to, to.keptBlocks());
    assertEquals(DataType.FLOAT, f.dataType());
    assertEquals(kept.castTo(DataType.FLOAT), f);
  }

  @Test
  void relayoutRejectsMismatchedLayoutsAndTooLittleCapacity() {
    PackedLayout a = layout(32, 64, 8, 0.5, 2);
    PackedLayout other = layout(32, 32, 8, 0.5, 2);
    INDArray p = Nd4j.zeros(DataType.FLOAT, a.packedShape());
    Exception e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedBlockLinear.relayout(p, a, other, 99));
    assertTrue(e.getMessage().contains("same rows, cols and block"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> PackedBlockLinear.relayout(p, a, a, a.keptBlocks() - 1));
    assertTrue(e.getMessage().contains("capacityBlocks"), e.getMessage());
  }

  @Test
  void denseBlockSquaresEqualTheDenseGradientsBlockNorms() {
    for (int b : new int[] {8, 16}) {
      INDArray x = Nd4j.randn(DataType.DOUBLE, 37, 4 * b);
      INDArray dy = Nd4j.randn(DataType.DOUBLE, 37, 3 * b);
      double[] got = new double[12];
      PackedBlockLinear.addDenseBlockSquares(x, dy, b, got);
      PackedBlockLinear.addDenseBlockSquares(x, dy, b, got); // adds: twice the squares
      INDArray g = x.transpose().mmul(dy);
      for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 3; j++) {
          double ref =
              g.get(
                      NDArrayIndex.interval(i * b, i * b + b),
                      NDArrayIndex.interval(j * b, j * b + b))
                  .norm2Number()
                  .doubleValue();
          assertEquals(2 * ref * ref, got[i * 3 + j], 1e-9 * ref * ref, "block " + i + "," + j);
        }
      }
      Exception e =
          assertThrows(
              IllegalArgumentException.class,
              () -> PackedBlockLinear.addDenseBlockSquares(x, dy, b, new double[5]));
      assertTrue(e.getMessage().contains("out has length 5"), e.getMessage());
    }
  }
}
