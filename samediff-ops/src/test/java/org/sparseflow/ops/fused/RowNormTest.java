package org.sparseflow.ops.fused;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The float row kernels (Vector API or scalar, by row length) against the double kernels. */
class RowNormTest {

  @ParameterizedTest
  @ValueSource(ints = {64, 128, 13})
  void floatRowsMatchDoubleRowsForwardAndBackward(int nC) {
    if (nC % 16 == 0) {
      assertTrue(RowNorm.VECTOR && RowNormVector.applies(nC), "vector path expected");
    }
    int nR = 37, n = nR * nC;
    Random rnd = new Random(nC);
    float[] x = new float[n], dy = new float[n], g = new float[nC], b = new float[nC];
    double[] xd = new double[n], dyd = new double[n], gd = new double[nC], bd = new double[nC];
    for (int i = 0; i < n; i++) {
      x[i] = (float) (rnd.nextGaussian() * 2 + 0.5);
      dy[i] = (float) rnd.nextGaussian();
      xd[i] = x[i];
      dyd[i] = dy[i];
    }
    for (int c = 0; c < nC; c++) {
      g[c] = (float) (0.5 + rnd.nextDouble());
      b[c] = (float) rnd.nextGaussian();
      gd[c] = g[c];
      bd[c] = b[c];
    }
    double eps = 1e-5;
    float[] y = x.clone(), xh = new float[n], inv = new float[nR];
    RowNorm.forwardFloatRows(y, xh, inv, g, b, eps, nR, nC);
    double[] yd = new double[n];
    RowNorm.forwardDoubleRows(xd, yd, gd, bd, eps, nR, nC);
    for (int i = 0; i < n; i++) {
      assertEquals(yd[i], y[i], 1e-5 * Math.max(1, Math.abs(yd[i])), "y[" + i + "]");
    }
    float[] xh2 = new float[n], inv2 = new float[nR];
    RowNorm.normalizeFloatRows(x, xh2, inv2, eps, nR, nC);
    double[] dg = new double[nC], db = new double[nC], dgd = new double[nC], dbd = new double[nC];
    float[] dx = dy.clone();
    RowNorm.backwardFloatRows(dx, xh2, inv2, g, dg, db, nR, nC);
    double[] dxd = new double[n];
    RowNorm.backwardDoubleRows(xd, dyd, gd, eps, dxd, dgd, dbd, nR, nC);
    for (int i = 0; i < n; i++) {
      assertEquals(dxd[i], dx[i], 1e-4 * Math.max(1, Math.abs(dxd[i])), "dx[" + i + "]");
    }
    for (int c = 0; c < nC; c++) {
      assertEquals(dgd[c], dg[c], 1e-4 * Math.max(1, Math.abs(dgd[c])), "dg[" + c + "]");
      assertEquals(dbd[c], db[c], 1e-4 * Math.max(1, Math.abs(dbd[c])), "db[" + c + "]");
    }
  }
}
