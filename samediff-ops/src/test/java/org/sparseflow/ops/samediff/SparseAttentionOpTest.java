package org.sparseflow.ops.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;

class SparseAttentionOpTest {

  private static INDArray rand(long seed, long... shape) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.randn(DataType.DOUBLE, shape);
  }

  private static double maxRel(INDArray a, INDArray b) {
    return a.sub(b).amaxNumber().doubleValue() / Math.max(1e-300, b.amaxNumber().doubleValue());
  }

  /** loss = sum(attention(q, k, v) * w) with q, k, v trainable variables. */
  private static SameDiff lossGraph(
      AttentionPattern p, int block, INDArray q, INDArray k, INDArray v, INDArray w) {
    SameDiff sd = SameDiff.create();
    SDVariable vq = sd.var("q", q.dup());
    SDVariable vk = sd.var("k", k.dup());
    SDVariable vv = sd.var("v", v.dup());
    SDVariable att = SparseAttentionOps.sparseAttention(sd, "att", vq, vk, vv, p, block, 0.5);
    att.mul(sd.constant("w", w)).sum().rename("loss");
    sd.setLossVariables("loss");
    return sd;
  }

  @Test
  void forwardAndGradientsThroughSameDiffMatchTheKernel() {
    AttentionPattern p = AttentionPattern.parse("local:4+strided:4+random:1:seed=2");
    INDArray q = rand(1, 2, 2, 16, 3),
        k = rand(2, 2, 2, 16, 3),
        v = rand(3, 2, 2, 16, 3),
        w = rand(4, 2, 2, 16, 3);
    SameDiff sd = lossGraph(p, 4, q, k, v, w);
    BlockLayout layout = p.layout(16, 4, 2);
    SparseAttention.Result r = SparseAttention.forward(q, k, v, layout, 0.5);
    INDArray att = sd.outputSingle(Map.of(), "att");
    assertEquals(0.0, maxRel(att, r.out()), 1e-12);
    Map<String, INDArray> g = sd.calculateGradients(Map.of(), "q", "k", "v");
    SparseAttention.Grads ref = SparseAttention.backward(q, k, v, r, w, layout, 0.5);
    assertEquals(0.0, maxRel(g.get("q"), ref.dq()), 1e-12);
    assertEquals(0.0, maxRel(g.get("k"), ref.dk()), 1e-12);
    assertEquals(0.0, maxRel(g.get("v"), ref.dv()), 1e-12);
  }

  @Test
  void gradientsThroughTheOpMatchFiniteDifferences() {
    for (String spec : new String[] {"dense", "fixed:4:1+global:2"}) {
      AttentionPattern p = AttentionPattern.parse(spec);
      INDArray q = rand(5, 1, 2, 8, 2),
          k = rand(6, 1, 2, 8, 2),
          v = rand(7, 1, 2, 8, 2),
          w = rand(8, 1, 2, 8, 2);
      SameDiff sd = lossGraph(p, 2, q, k, v, w);
      Map<String, INDArray> g = sd.calculateGradients(Map.of(), "q", "k", "v");
      double eps = 1e-6;
      for (String name : new String[] {"q", "k", "v"}) {
        INDArray arr = sd.getVariable(name).getArr();
        for (long i = 0; i < arr.length(); i += 3) {
          double orig = arr.getDouble(i);
          arr.putScalar(i, orig + eps);
          double lp = sd.outputSingle(Map.of(), "loss").getDouble(0);
          arr.putScalar(i, orig - eps);
          double lm = sd.outputSingle(Map.of(), "loss").getDouble(0);
          arr.putScalar(i, orig);
          double num = (lp - lm) / (2 * eps);
          assertEquals(
              num,
              g.get(name).getDouble(i),
              1e-6 * Math.max(1, Math.abs(num)),
              spec + " d" + name + "[" + i + "]");
        }
      }
    }
  }

  @Test
  void graphFitsAndRoundTripsThroughSaveLoad(@TempDir Path dir) throws Exception {
    int t = 8, d = 4, h = 2;
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.DOUBLE, -1, h, t, d);
    SDVariable label = sd.placeHolder("label", DataType.DOUBLE, -1, h, t, d);
    SDVariable wq = sd.var("wq", rand(11, d).muli(0.5));
    SDVariable wk = sd.var("wk", rand(12, d).muli(0.5));
    SDVariable wv = sd.var("wv", rand(13, d).muli(0.5));
    AttentionPattern p = AttentionPattern.parse("local:2+strided:3");
    SDVariable att =
        SparseAttentionOps.sparseAttention(
            sd, "att", in.mul(wq), in.mul(wk), in.mul(wv), p, 2, 0.5);
    SDVariable loss = sd.loss().meanSquaredError("loss", label, att, null);
    sd.setLossVariables(loss);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(0.05))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    INDArray x = rand(14, 4, h, t, d);
    INDArray y = rand(15, 4, h, t, d).muli(0.3);
    DataSet ds = new DataSet(x, y);
    double before = sd.output(Map.of("in", x, "label", y), "loss").get("loss").getDouble(0);
    INDArray wqBefore = sd.getVariable("wq").getArr().dup();
    for (int i = 0; i < 30; i++) {
      sd.fit(ds);
    }
    double after = sd.output(Map.of("in", x, "label", y), "loss").get("loss").getDouble(0);
    assertTrue(after < before, "loss " + before + " -> " + after);
    assertTrue(
        sd.getVariable("wq").getArr().sub(wqBefore).amaxNumber().doubleValue() > 1e-3,
        "wq did not train");

    File f = dir.resolve("att.sd").toFile();
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    INDArray o1 = sd.output(Map.of("in", x), "att").get("att");
    INDArray o2 = loaded.output(Map.of("in", x), "att").get("att");
    assertEquals(0.0, o1.sub(o2).amaxNumber().doubleValue(), 0.0);
    SparseAttentionOp op = null;
    for (SameDiffOp o : loaded.getOps().values()) {
      if (o.getOp() instanceof SparseAttentionOp) {
        op = (SparseAttentionOp) o.getOp();
      }
    }
    assertTrue(op != null, "loaded graph lost the sparse attention op");
    assertEquals(p, op.pattern());
    assertEquals(2, op.blockSize());
    assertEquals(0.5, op.scale(), 0.0);
    // the loaded graph keeps training
    loaded.setTrainingConfig(sd.getTrainingConfig());
    loaded.fit(ds);
  }
}
