package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.EmbeddingSequenceLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.SparseDenseLayer;

/**
 * {@code train} with MST on a DL4J model file whose sparse layers are packed: MST drives the packed
 * weights, and the trainer continues on the network MST rebuilds when a phase wants other block
 * slots.
 */
class PackedDl4jTrainingTest {

  /**
   * A token-id model (one input, as the trainer takes): embedding, causal attention with block16
   * projections, a block16 MLP and a softmax head; its sparse weights in {@code storage}.
   */
  private static Path model(Path dir, String storage) throws Exception {
    int vocab = CharTokenizer.fit(Corpus.bundled().text()).vocabSize();
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(3)
            .updater(new Adam(3e-3))
            .graphBuilder()
            .addInputs("tokens")
            .addLayer(
                "embed",
                new EmbeddingSequenceLayer.Builder()
                    .nIn(vocab)
                    .nOut(32)
                    .inputLength(16)
                    .outputDataFormat(RNNFormat.NCW)
                    .build(),
                "tokens")
            .addLayer(
                "attn",
                new CausalSelfAttentionLayer.Builder()
                    .nIn(32)
                    .nOut(32)
                    .nHeads(2)
                    .attentionPattern("local:4")
                    .blockSize(1)
                    .projectionPattern("block16")
                    .projectionDensity(0.5)
                    .projectionStorage(storage)
                    .build(),
                "embed")
            .addLayer("fc", denseLayer(32, 64, storage, Activation.TANH), "attn")
            .addLayer("proj", denseLayer(64, 32, storage, Activation.IDENTITY), "fc")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(vocab)
                    .activation(Activation.SOFTMAX)
                    .dataFormat(RNNFormat.NCW)
                    .build(),
                "proj")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    Path f = dir.resolve(storage + "-model.zip");
    ModelSerializer.writeModel(g, f.toFile(), true);
    return f;
  }

  private static SparseDenseLayer denseLayer(int in, int out, String storage, Activation a) {
    return new SparseDenseLayer.Builder()
        .nIn(in)
        .nOut(out)
        .pattern("block16")
        .density(0.5)
        .storage(storage)
        .activation(a)
        .build();
  }

  private static TrainConfig config(Path model) {
    TrainConfig c = SparseSameDiffMstTest.trainConfig();
    c.model = model.toString();
    c.mstStorage = "packed";
    c.mstSparseStart = true;
    c.steps = 12;
    return c;
  }

  @Test
  void mstTrainsThePackedWeightsAndTheTrainerTakesTheRebuiltNetwork(@TempDir Path tmp)
      throws Exception {
    Path model = model(tmp, "packed");
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer t = Experiments.start(config(model), tmp.resolve("run")).progress(quiet, false, "");
    Model start = (Model) t.experiment().model().unwrap();
    List<String> packed =
        SparseParams.findPacked(start).stream().map(PackedSparseParam::name).toList();
    assertEquals(6, packed.size(), "q, k, v, o, fc, proj: " + packed);
    List<Long> params = new ArrayList<>();
    List<Model> models = new ArrayList<>();
    t.addListener(
        (tr, step, m) -> {
          Model now = (Model) tr.experiment().model().unwrap();
          params.add(now.numParams());
          if (!models.contains(now)) {
            models.add(now);
          }
        });
    Trainer.Result r = t.run();
    assertEquals(Trainer.Status.COMPLETED, r.status());
    assertTrue(Double.isFinite(r.valLoss()));
    assertTrue(r.density() < 0.5, "MST density " + r.density());
    assertTrue(models.size() >= 2, "the trainer continued on a rebuilt network: " + params);
    assertTrue(
        params.stream().distinct().count() >= 2, "the block slots follow the phases: " + params);

    // stopped and resumed from its checkpoint (the packed layouts and slots in the model file,
    // MST's
    // masks in its state), the run ends where the uninterrupted one did
    Trainer first = Experiments.start(config(model), tmp.resolve("cut")).progress(quiet, false, "");
    first.addListener(
        (tr, step, rec) -> {
          if (step == 7) {
            tr.requestStop();
          }
        });
    assertEquals(Trainer.Status.INTERRUPTED, first.run().status());
    Trainer.Result b =
        Experiments.resume(tmp.resolve("cut"), null).progress(quiet, false, "").run();
    assertEquals(Trainer.Status.COMPLETED, b.status());
    assertEquals(r.trainLoss(), b.trainLoss(), 0.0);
    assertEquals(r.valLoss(), b.valLoss(), 0.0);
    assertEquals(r.flops(), b.flops(), 0.0);
  }

  @Test
  void packedStorageOnAModelWithoutPackedWeightsIsANamedError(@TempDir Path tmp) throws Exception {
    Path model = model(tmp, "masked");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Experiments.start(config(model), tmp.resolve("run")));
    assertTrue(e.getMessage().contains("--storage packed"), e.getMessage());
    assertTrue(e.getMessage().contains("no packed block weights"), e.getMessage());
  }
}
