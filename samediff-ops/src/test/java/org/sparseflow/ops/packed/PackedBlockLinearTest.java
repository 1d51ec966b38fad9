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

/** Packed kept-block linear layer against the dense masked reference y = x (W o M) + b. */
class PackedBlockLinearTest {

  private static BlockMask mask(int rows, int cols, int b, double density, long seed) {
    return (BlockMask) PatternSpec.block(b).random(rows, cols, density, seed);
  }

  @Test
  void layoutOrdersBlocksByColumnPanel() {
    // 3 x 2 blocks; kept (0,1) (1,0) (2,1) -> panel 0: row 1; panel 1: rows 0, 2
    PackedLayout l = PackedLayout.of(24, 16, 8, new int[] {5, 1, 2});
    assertArrayEquals(new int[] {1, 2, 5}, l.keptRowMajor());
    assertEquals(0, l.panelStart(0));
    assertEquals(1, l.panelStart(1));
    assertEquals(3, l.panelStart(2));
    assertEquals(1, l.blockRowOf(0));
    assertEquals(0, l.blockRowOf(1));
    assertEquals(2, l.blockRowOf(2));
    assertArrayEquals(new long[] {24, 8}, l.packedShape());
    assertEquals(l, PackedLayout.of(l.toMask()));
  }

  @Test
  void packUnpackRoundTripAndBlockMajorLayout() {
    BlockMask m = mask(32, 48, 8, 0.4, 3);
    PackedLayout l = PackedLayout.of(m);
    Nd4j.getRandom().setSeed(1);
    INDArray w = Nd4j.rand(DataType.DOUBLE, 32, 48).muli(m.toDense(DataType.DOUBLE));
    INDArray p = PackedBlockLinear.pack(w, l);
    assertArrayEquals(l.packedShape(), p.shape());
    assertEquals(w, PackedBlockLinear.unpack(p, l));
    assertEquals(w, PackedBlockLinear.unpack(p.reshape(p.length()), l), "flat packed values");
    // slot 0 is the topmost kept block of the first non-empty block column, row-major
    int j = 0;
    while (l.panelStart(j + 1) == 0) {
      j++;
    }
    int i = l.blockRowOf(0);
    assertEquals(w.getDouble(i * 8L, j * 8L + 1), p.getDouble(0, 1));
    assertEquals(w.getDouble(i * 8L + 2, j * 8L), p.getDouble(2, 0));
  }

  @Test
  void intoVariantsWriteTheSameValuesIntoViews() {
    for (DataType dt : new DataType[] {DataType.FLOAT, DataType.DOUBLE}) {
      for (int b : new int[] {16, 8}) {
        PackedLayout l = PackedLayout.of(mask(64, 96, b, 0.3, 5));
        Nd4j.getRandom().setSeed(6);
        INDArray x = Nd4j.randn(dt, 33, 64);
        INDArray dy = Nd4j.randn(dt, 33, 96);
        INDArray packed = Nd4j.randn(dt, l.packedShape());
        INDArray bias = Nd4j.randn(dt, 96);
        INDArray y = PackedBlockLinear.forward(x, packed, bias, l);
        // outputs written into column slices of wider arrays (non-contiguous views)
        INDArray wide = Nd4j.zeros(dt, 33, 100);
        INDArray yView = wide.get(NDArrayIndex.all(), NDArrayIndex.interval(2, 98));
        PackedBlockLinear.forwardInto(x, packed, bias, l, yView);
        assertTrue(yView.equalsWithEps(y, 1e-5), dt + " b" + b + " forward");
        assertEquals(0.0, wide.getColumn(0).norm1Number().doubleValue(), 0.0, "outside untouched");
        INDArray dp = Nd4j.zeros(dt, l.packedShape());
        INDArray dx = PackedBlockLinear.backward(x, packed, l, dy, dp, true);
        INDArray dpInto = Nd4j.zeros(dt, l.packedShape());
        INDArray wideDx = Nd4j.zeros(dt, 33, 70);
        INDArray dxView = wideDx.get(NDArrayIndex.all(), NDArrayIndex.interval(3, 67));
        PackedBlockLinear.backwardInto(x, packed, l, dy, dpInto, dxView);
        assertTrue(dxView.equalsWithEps(dx, 1e-5), dt + " b" + b + " dx");
        assertTrue(dpInto.equalsWithEps(dp, 1e-5), dt + " b" + b + " dW");
      }
    }
    PackedLayout l = PackedLayout.of(mask(32, 32, 16, 0.5, 1));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PackedBlockLinear.forwardInto(
                    Nd4j.rand(DataType.FLOAT, 4, 32),
                    Nd4j.rand(DataType.FLOAT, l.packedShape()),
                    null,
                    l,
                    Nd4j.rand(DataType.FLOAT, 5, 32)));
    assertTrue(e.getMessage().startsWith("y = "), e.getMessage());
  }

  @Test
  void forwardAndBackwardMatchDenseMaskedReference() {
    for (DataType dt : new DataType[] {DataType.DOUBLE, DataType.FLOAT}) {
      for (double density : new double[] {0.1, 0.5, 1.0}) {
        BlockMask m = mask(64, 32, 16, density, 11);
        PackedLayout l = PackedLayout.of(m);
        Nd4j.getRandom().setSeed(2);
        INDArray md = m.toDense(dt);
        INDArray w = Nd4j.randn(dt, 64, 32).muli(md);
        INDArray x = Nd4j.randn(dt, 5, 64);
        INDArray bias = Nd4j.randn(dt, 1, 32);
        INDArray dy = Nd4j.randn(dt, 5, 32);
        double eps = dt == DataType.DOUBLE ? 1e-12 : 1e-4;
        INDArray packed = PackedBlockLinear.pack(w, l);
        INDArray y = PackedBlockLinear.forward(x, packed, bias, l);
        assertTrue(x.mmul(w).addiRowVector(bias).equalsWithEps(y, eps), dt + " y " + density);
        INDArray dp = Nd4j.create(dt, l.packedShape());
        INDArray dx = PackedBlockLinear.backward(x, packed, l, dy, dp, true);
        INDArray dwRef = x.transpose().mmul(dy).muli(md);
        assertTrue(PackedBlockLinear.pack(dwRef, l).equalsWithEps(dp, eps), dt + " dW");
        assertTrue(dy.mmul(w.transpose()).equalsWithEps(dx, eps), dt + " dx " + density);
        assertEquals(null, PackedBlockLinear.backward(x, packed, l, dy, dp, false));
      }
    }
  }

  @Test
  void badInputNamesArgumentValueAndAllowed() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedLayout.of(24, 16, 8, new int[] {1, 1}));
    assertTrue(e.getMessage().contains("keptRowMajor contains 1 twice"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedLayout.of(20, 16, 8, new int[] {0}));
    assertTrue(e.getMessage().contains("shape = [20, 16]"), e.getMessage());
    PackedLayout l = PackedLayout.of(16, 16, 8, new int[] {0, 3});
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PackedBlockLinear.forward(
                    Nd4j.ones(DataType.FLOAT, 2, 16), Nd4j.ones(DataType.FLOAT, 8, 8), null, l));
    assertTrue(e.getMessage().contains("packed = FLOAT[8, 8]"), e.getMessage());
    assertTrue(e.getMessage().contains("allowed: 128"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                PackedBlockLinear.forward(
                    Nd4j.ones(DataType.FLOAT, 2, 8), Nd4j.ones(DataType.FLOAT, 16, 8), null, l));
    assertTrue(e.getMessage().contains("x = FLOAT[2, 8]"), e.getMessage());
  }
}
