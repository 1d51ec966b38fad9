package org.sparseflow.ops.fused;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.transforms.strict.GELU;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.vector.ExactVectorMath;

/** The GELU backward kernels: vector path identical to the scalar loop, views handled. */
class GeluKernelTest {

  private static float[] floats(INDArray a) {
    return a.dup('c').reshape(a.length()).toFloatVector();
  }

  private static double[] doubles(INDArray a) {
    return a.dup('c').reshape(a.length()).toDoubleVector();
  }

  @Test
  void vectorKernelEqualsScalarLoopBitForBit() {
    Nd4j.getRandom().setSeed(3);
    INDArray z = Nd4j.randn(DataType.FLOAT, 37, 29).muli(3f); // length not a multiple of lanes
    z.putScalar(5, 0f);
    z.putScalar(100, -0f);
    INDArray a = Nd4j.getExecutioner().exec(new GELU(z, z.ulike()));
    INDArray dy = Nd4j.randn(DataType.FLOAT, 37, 29);
    assertTrue(GeluKernel.vectorApplies(z, a, dy), "test JVM runs with the vector module");
    INDArray dz = z.ulike();
    GeluKernel.backward(z, a, dy, dz);
    float[] e = floats(dy);
    GeluMath.backward(floats(z), floats(a), e, e.length);
    assertArrayEquals(e, floats(dz));
    assertTrue(Float.isFinite(dz.getFloat(5)) && Float.isFinite(dz.getFloat(100)));
  }

  @Test
  void vectorForwardMatchesNd4jGeluToAFewUlps() {
    Nd4j.getRandom().setSeed(4);
    INDArray z = Nd4j.randn(DataType.FLOAT, 3, 1001).muli(6f); // wide range, ragged tail
    z.putScalar(7, 0f);
    z.putScalar(8, -100f);
    z.putScalar(9, 100f);
    INDArray ref = Nd4j.getExecutioner().exec(new GELU(z, z.ulike()));
    INDArray y = z.ulike();
    GeluKernel.forward(z, y);
    float[] r = floats(ref), g = floats(y);
    for (int i = 0; i < r.length; i++) {
      assertTrue(
          Math.abs(r[i] - g[i]) <= 4 * Math.ulp(Math.max(Math.abs(r[i]), 1e-6f)),
          "gelu[" + i + "] = " + g[i] + ", ND4J " + r[i]);
    }
  }

  /**
   * The forward pass gives the same bits on every lane as the scalar formula with the exact
   * exponential, on every repetition (the JIT compiles the kernel after a few): with the Vector
   * API's own EXP a resumed training run diverged from an uninterrupted one.
   */
  @Test
  void vectorForwardIsTheScalarFormulaBitForBitOnEveryRun() {
    Nd4j.getRandom().setSeed(6);
    INDArray z = Nd4j.randn(DataType.FLOAT, 64, 129).muli(4f);
    float[] zf = floats(z);
    float[] want = new float[zf.length];
    for (int i = 0; i < zf.length; i++) {
      want[i] = zf[i] / (1f + ExactVectorMath.exp((float) -GeluMath.K * zf[i]));
    }
    INDArray y = z.ulike();
    for (int rep = 0; rep < 300; rep++) {
      GeluKernel.forward(z, y);
      assertArrayEquals(want, floats(y), "repetition " + rep);
    }
  }

  @Test
  void stridedViewsAndDoublesTakeTheCopyingPath() {
    INDArray zd = Nd4j.randn(DataType.DOUBLE, 6, 10);
    INDArray z = zd.castTo(DataType.FLOAT).transpose(); // 'f'-ordered view
    INDArray a = Nd4j.getExecutioner().exec(new GELU(z.dup(), z.dup()));
    INDArray dy = Nd4j.randn(DataType.FLOAT, 10, 6);
    INDArray dz = Nd4j.create(DataType.FLOAT, 10, 6);
    GeluKernel.backward(z, a, dy, dz);
    float[] e = floats(dy);
    GeluMath.backward(floats(z), floats(a), e, e.length);
    assertArrayEquals(e, floats(dz));
    INDArray ad = Nd4j.getExecutioner().exec(new GELU(zd, zd.ulike()));
    INDArray dyd = Nd4j.randn(DataType.DOUBLE, 6, 10), dzd = zd.ulike();
    GeluKernel.backward(zd, ad, dyd, dzd);
    double[] ed = doubles(dyd);
    GeluMath.backward(doubles(zd), doubles(ad), ed, ed.length);
    assertArrayEquals(ed, doubles(dzd));
  }
}
