package org.sparseflow.train;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.GradientNormalization;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.EmbeddingSequenceLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.weights.WeightInit;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * Models by name for {@code --model}: the reference GPTs ({@code gpt-mini}, {@code gpt-small}), a
 * tiny {@code char-bigram} model (smoke tests), or the path of a saved DL4J model zip.
 */
public final class ModelCatalog {

  /** Builds a fresh model for a vocabulary size. */
  @FunctionalInterface
  public interface Factory {
    TrainableModel create(TrainConfig config, int vocabSize);
  }

  private static final Map<String, Factory> FACTORIES = new LinkedHashMap<>();
  private static final Map<String, String> DESCRIPTIONS = new LinkedHashMap<>();

  static {
    register(
        "gpt-mini",
        "character GPT: 4 layers, d_model 128, 4 heads (reference SameDiff GPT)",
        (c, v) -> GptModels.create("gpt-mini", c, v));
    register(
        "gpt-small",
        "character GPT: 6 layers, d_model 256, 8 heads (reference SameDiff GPT)",
        (c, v) -> GptModels.create("gpt-small", c, v));
    register(
        "gpt-tiny",
        "character GPT: 2 layers, d_model 32, 2 heads (tests, notebooks, quick demos)",
        (c, v) -> GptModels.create("gpt-tiny", c, v));
    register(
        "char-bigram",
        "tiny bigram model (embedding + softmax), for smoke tests",
        ModelCatalog::bigram);
  }

  private ModelCatalog() {}

  public static void register(String name, String description, Factory f) {
    FACTORIES.put(name, f);
    DESCRIPTIONS.put(name, description);
  }

  public static Map<String, String> names() {
    return Collections.unmodifiableMap(DESCRIPTIONS);
  }

  public static boolean isFile(String spec) {
    return !FACTORIES.containsKey(spec);
  }

  /**
   * Checks that {@code spec} names a catalog model or an existing file, before any model is built.
   */
  public static void validate(String spec) {
    if (spec == null || FACTORIES.containsKey(spec)) {
      return;
    }
    Path file = Path.of(spec);
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "--model: '"
              + spec
              + "' is neither a known model ("
              + String.join(", ", FACTORIES.keySet())
              + ") nor an existing DL4J model .zip file");
    }
  }

  /** A new model for {@code config.model}: a catalog name, or a saved DL4J model zip. */
  public static TrainableModel create(TrainConfig config, int vocabSize) {
    Factory f = FACTORIES.get(config.model);
    if (f != null) {
      return f.create(config, vocabSize);
    }
    Path file = Path.of(config.model);
    if (!config.optimizers().isPlain()) {
      throw new IllegalArgumentException(
          "--lr-warmup/--lr-decay/--grad-clip: set for --model '"
              + config.model
              + "'; allowed only with the catalog models ("
              + String.join(", ", FACTORIES.keySet())
              + "): a saved model trains with the updater stored in it");
    }
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "--model: '"
              + config.model
              + "' is neither a known model ("
              + String.join(", ", FACTORIES.keySet())
              + ") nor an existing DL4J model .zip file");
    }
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("--model: cannot read " + file + ": " + e.getMessage());
    }
    try {
      return Dl4jModel.load(new ByteArrayInputStream(bytes), vocabSize);
    } catch (IOException notDl4j) {
      try {
        SparseFlowOps.registerAll(); // SameDiff.load re-creates SparseFlow ops by name
        SameDiff sd = SameDiff.load(new ByteArrayInputStream(bytes), true);
        long[] shape =
            sd.hasVariable(SameDiffModel.INPUT)
                ? sd.getVariable(SameDiffModel.INPUT).getShape()
                : null;
        if (shape != null
            && shape.length == 2
            && shape[1] > 0
            && shape[1] != config.contextLength) {
          throw new IllegalArgumentException(
              "--context-length: "
                  + config.contextLength
                  + " does not match the model's context "
                  + shape[1]
                  + " in "
                  + file
                  + "; use --context-length "
                  + shape[1]);
        }
        return new SameDiffModel(sd, vocabSize, config.contextLength);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (Exception notSameDiff) {
        throw new IllegalArgumentException(
            "--model: "
                + file
                + " is neither a DL4J model zip nor a SameDiff model ("
                + notDl4j.getMessage()
                + ")");
      }
    }
  }

  /** Restores a model from checkpoint bytes. */
  public static TrainableModel load(String kind, byte[] bytes, int vocabSize) throws IOException {
    if ("dl4j".equals(kind)) {
      return Dl4jModel.load(new ByteArrayInputStream(bytes), vocabSize);
    }
    throw new IOException(
        "checkpoint holds a model of kind '"
            + kind
            + "' which this version cannot load; supported: dl4j, samediff");
  }

  /**
   * Restores a model from checkpoint bytes, given the run's config (SameDiff needs the context
   * length).
   */
  public static TrainableModel load(String kind, byte[] bytes, int vocabSize, TrainConfig config)
      throws IOException {
    if ("samediff".equals(kind)) {
      return SameDiffModel.load(bytes, vocabSize, config.contextLength);
    }
    return load(kind, bytes, vocabSize);
  }

  private static TrainableModel bigram(TrainConfig c, int vocab) {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(c.seed)
            .updater(c.optimizers().updater())
            .gradientNormalization(
                c.gradClip > 0
                    ? GradientNormalization.ClipL2PerParamType
                    : GradientNormalization.None)
            .gradientNormalizationThreshold(c.gradClip > 0 ? c.gradClip : 1.0)
            .weightInit(WeightInit.XAVIER)
            .graphBuilder()
            .addInputs("tokens")
            .addLayer(
                "embed",
                new EmbeddingSequenceLayer.Builder()
                    .nIn(vocab)
                    .nOut(48)
                    .inputLength(c.contextLength)
                    .outputDataFormat(RNNFormat.NWC)
                    .build(),
                "tokens")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(48)
                    .nOut(vocab)
                    .activation(Activation.SOFTMAX)
                    .dataFormat(RNNFormat.NWC)
                    .build(),
                "embed")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    return new Dl4jModel(g, vocab);
  }
}
