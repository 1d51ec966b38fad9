package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.ops.attention.AttentionTestUtil.rand;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/** Central finite differences (double) on the Java kernel for every pattern kind. */
class SparseAttentionGradientTest {

  private static final double EPS = 1e-6;

  /** Element-wise central differences on a small single-head problem (every input entry). */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "dense",
        "local:4",
        "strided:2",
        "fixed:3:1",
        "global:2",
        "random:1:seed=11",
        "local:3+strided:3",
        "global:1+local:2+random:1:seed=5"
      })
  void analyticGradientsMatchFiniteDifferences(String spec) {
    int t = 9, d = 2, block = 3;
    double scale = 0.8;
    BlockLayout layout = AttentionPattern.parse(spec).layout(t, block, 1);
    INDArray q = rand(21, DataType.DOUBLE, 1, 1, t, d);
    INDArray k = rand(22, DataType.DOUBLE, 1, 1, t, d);
    INDArray v = rand(23, DataType.DOUBLE, 1, 1, t, d);
    INDArray w = rand(24, DataType.DOUBLE, 1, 1, t, d); // loss = sum(out * w)
    SparseAttention.Result fwd = SparseAttention.forward(q, k, v, layout, scale);
    SparseAttention.Grads g = SparseAttention.backward(q, k, v, fwd, w, layout, scale);
    INDArray[] inputs = {q, k, v};
    INDArray[] grads = {g.dq(), g.dk(), g.dv()};
    String[] names = {"dq", "dk", "dv"};
    for (int a = 0; a < 3; a++) {
      INDArray x = inputs[a];
      double maxErr = 0;
      double maxAbs = 0;
      for (long idx = 0; idx < x.length(); idx++) {
        double orig = x.getDouble(idx);
        x.putScalar(idx, orig + EPS);
        double lp = loss(q, k, v, w, layout, scale);
        x.putScalar(idx, orig - EPS);
        double lm = loss(q, k, v, w, layout, scale);
        x.putScalar(idx, orig);
        double num = (lp - lm) / (2 * EPS);
        double ana = grads[a].getDouble(idx);
        maxErr = Math.max(maxErr, Math.abs(num - ana) / Math.max(1.0, Math.abs(num)));
        maxAbs = Math.max(maxAbs, Math.abs(ana));
      }
      assertTrue(maxErr < 1e-6, spec + " " + names[a] + " max rel err " + maxErr);
      assertTrue(maxAbs > 1e-3, spec + " " + names[a] + " is trivially zero");
    }
  }

  /**
   * Directional derivatives on a larger multi-batch, multi-head problem (per-head random layouts,
   * extras and several query blocks): d/de L(x + e u) at e = 0 equals <grad, u> for random
   * directions u.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {"dense", "local:6+strided:4", "fixed:8:2+random:2:seed=3", "global:5+local:4"})
  void directionalDerivativesMatch(String spec) {
    int batch = 2, heads = 3, t = 24, d = 5, block = 4;
    double scale = 0.45;
    BlockLayout layout = AttentionPattern.parse(spec).layout(t, block, heads);
    INDArray q = rand(31, DataType.DOUBLE, batch, heads, t, d);
    INDArray k = rand(32, DataType.DOUBLE, batch, heads, t, d);
    INDArray v = rand(33, DataType.DOUBLE, batch, heads, t, d);
    INDArray w = rand(34, DataType.DOUBLE, batch, heads, t, d);
    SparseAttention.Grads g =
        SparseAttention.backward(
            q, k, v, SparseAttention.forward(q, k, v, layout, scale), w, layout, scale);
    INDArray[] inputs = {q, k, v};
    INDArray[] grads = {g.dq(), g.dk(), g.dv()};
    for (int a = 0; a < 3; a++) {
      for (int dir = 0; dir < 2; dir++) {
        INDArray u = rand(100 + 10 * a + dir, DataType.DOUBLE, batch, heads, t, d);
        INDArray x = inputs[a];
        x.addi(u.mul(EPS));
        double lp = loss(q, k, v, w, layout, scale);
        x.subi(u.mul(2 * EPS));
        double lm = loss(q, k, v, w, layout, scale);
        x.addi(u.mul(EPS));
        double num = (lp - lm) / (2 * EPS);
        double ana = grads[a].mul(u).sumNumber().doubleValue();
        assertTrue(
            Math.abs(num - ana) < 1e-6 * Math.max(1, Math.abs(num)),
            spec + " input " + a + " numeric " + num + " analytic " + ana);
      }
    }
  }

  private static double loss(
      INDArray q, INDArray k, INDArray v, INDArray w, BlockLayout layout, double scale) {
    return SparseAttention.forward(q, k, v, layout, scale).out().mul(w).sumNumber().doubleValue();
  }
}
