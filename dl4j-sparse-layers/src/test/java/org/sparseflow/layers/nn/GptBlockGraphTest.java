package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.graph.ElementWiseVertex;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.SparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.ops.pattern.SparseMask;

/** A pre-LN GPT decoder block as a FLOAT ComputationGraph built from the plugin's layers. */
class GptBlockGraphTest {

  static ComputationGraphConfiguration block(int c, int t, int vocab) {
    return new NeuralNetConfiguration.Builder()
        .seed(11)
        .dataType(DataType.FLOAT)
        .updater(new Adam(3e-3))
        .weightDecay(1e-4)
        .graphBuilder()
        .addInputs("x")
        .setInputTypes(InputType.recurrent(c, t, RNNFormat.NCW))
        .addLayer("ln1", new LayerNormLayer.Builder().build(), "x")
        .addLayer(
            "attn",
            new CausalSelfAttentionLayer.Builder()
                .nOut(c)
                .nHeads(2)
                .attentionPattern("local:4+strided:4")
                .blockSize(4)
                .projectionPattern("block8")
                .projectionDensity(0.5)
                .build(),
            "ln1")
        .addVertex("res1", new ElementWiseVertex(ElementWiseVertex.Op.Add), "x", "attn")
        .addLayer("ln2", new LayerNormLayer.Builder().build(), "res1")
        .addLayer(
            "fc",
            new SparseDenseLayer.Builder()
                .nOut(4 * c)
                .pattern("unstructured")
                .density(0.25)
                .activation(Activation.GELU)
                .build(),
            "ln2")
        .addLayer(
            "proj",
            new SparseDenseLayer.Builder()
                .nOut(c)
                .pattern("2:4")
                .activation(Activation.IDENTITY)
                .build(),
            "fc")
        .addVertex("res2", new ElementWiseVertex(ElementWiseVertex.Op.Add), "res1", "proj")
        .addLayer(
            "out",
            new RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                .nOut(vocab)
                .activation(Activation.SOFTMAX)
                .dataFormat(RNNFormat.NCW)
                .build(),
            "res2")
        .setOutputs("out")
        .build();
  }

  @Test
  void trainsKeepsPrunedWeightsZeroAndSavesLoads(@TempDir File dir) throws Exception {
    int c = 16, t = 8, vocab = 5, b = 4;
    ComputationGraphConfiguration conf = block(c, t, vocab);
    assertEquals(conf, ComputationGraphConfiguration.fromJson(conf.toJson()));
    assertEquals(conf, ComputationGraphConfiguration.fromYaml(conf.toYaml()));
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    Nd4j.getRandom().setSeed(5);
    INDArray x = Nd4j.rand(DataType.FLOAT, b, c, t);
    INDArray y = Nd4j.zeros(DataType.FLOAT, b, vocab, t);
    for (int e = 0; e < b; e++) {
      for (int s = 0; s < t; s++) {
        y.putScalar(new int[] {e, (e + s) % vocab, s}, 1f);
      }
    }
    MultiDataSet ds = new MultiDataSet(new INDArray[] {x}, new INDArray[] {y});
    double before = g.score(ds);
    for (int i = 0; i < 6; i++) {
      g.fit(ds);
    }
    assertTrue(g.score(ds) < before, before + " -> " + g.score(ds));
    var params = SparseParams.find(g);
    assertEquals(6, params.size()); // attn Wq Wk Wv Wo, fc W, proj W
    for (SparseParam p : params) {
      assertEquals(0.0, p.weight().mul(p.mask().rsub(1.0)).norm1Number().doubleValue(), p.name());
    }
    assertEquals(0.5, SparseParams.get(g, "proj_W").density(), 1e-12);
    assertEquals(0.25, SparseParams.get(g, "fc_W").density(), 1e-12);
    // mask changes on a graph: optimizer state found and reset where the mask changed
    SparseParam fc = SparseParams.get(g, "fc_W");
    assertEquals(2, fc.updaterState().size()); // Adam m, v
    INDArray oldMask = fc.mask().dup();
    SparseMask next = fc.spec().random(c, 4 * c, 0.25, 99);
    fc.setMask(next);
    INDArray changed = next.toDense(DataType.FLOAT).neq(oldMask).castTo(DataType.FLOAT);
    assertTrue(changed.sumNumber().doubleValue() > 0);
    for (INDArray st : fc.updaterState()) {
      assertEquals(0.0, st.mul(changed).norm1Number().doubleValue());
    }
    SparseParam wq = SparseParams.get(g, "attn_Wq");
    assertEquals(2, wq.updaterState().size());
    assertTrue(
        wq.updaterState().get(1).norm1Number().doubleValue() > 0,
        "Adam v of attn_Wq after training");

    File f = new File(dir, "gpt-block.zip");
    ModelSerializer.writeModel(g, f, true);
    ComputationGraph back = ModelSerializer.restoreComputationGraph(f, true);
    assertEquals(g.params(), back.params());
    assertEquals(g.outputSingle(x), back.outputSingle(x));
    for (SparseParam p : SparseParams.find(back)) {
      assertEquals(g.getParam(p.name().replace("_W", "_M")), p.mask());
    }
    back.fit(ds);
    for (SparseParam p : SparseParams.find(back)) {
      assertEquals(0.0, p.weight().mul(p.mask().rsub(1.0)).norm1Number().doubleValue(), p.name());
    }
  }
}
