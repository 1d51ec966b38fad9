package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.cli.SparsifyCommand;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.nn.SparseDenseLayer;
import picocli.CommandLine;

/** {@code sparseflow sparsify --config <yaml> <in.zip> <out.zip>} and {@code --densify}. */
class SparsifyCommandTest {

  private static int run(StringWriter out, StringWriter err, String... args) {
    CommandLine cl = new CommandLine(new SparsifyCommand());
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  @Test
  void convertsSavedModelPrintsDensityAndDensifiesBack(@TempDir Path dir) throws Exception {
    MultiLayerConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .updater(new Adam(1e-3))
            .list()
            .layer(new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.RELU).build())
            .layer(new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build())
            .layer(
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(4)
                    .activation(Activation.SOFTMAX)
                    .build())
            .build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    File in = dir.resolve("in.zip").toFile(),
        out = dir.resolve("out.zip").toFile(),
        back = dir.resolve("back.zip").toFile();
    ModelSerializer.writeModel(net, in, true);
    Path yaml = dir.resolve("s.yaml");
    Files.writeString(yaml, "pattern: block8\nsparsity: 0.75\ninitialMask: MAGNITUDE\n");

    StringWriter o = new StringWriter(), e = new StringWriter();
    assertEquals(
        0, run(o, e, "--config", yaml.toString(), in.toString(), out.toString()), e.toString());
    assertTrue(
        o.toString().contains("layer1")
            && o.toString().contains("SPARSE")
            && o.toString().contains("0.2500"),
        o.toString());
    MultiLayerNetwork sparse = MultiLayerNetwork.load(out, true);
    assertInstanceOf(
        SparseDenseLayer.class, sparse.getLayerWiseConfigurations().getConf(1).getLayer());
    assertEquals(0.25, sparse.getParam("1_M").meanNumber().doubleValue(), 1e-6);

    assertEquals(
        0, run(new StringWriter(), e, "--densify", out.toString(), back.toString()), e.toString());
    MultiLayerNetwork plain = MultiLayerNetwork.load(back, false);
    assertEquals(
        DenseLayer.class, plain.getLayerWiseConfigurations().getConf(1).getLayer().getClass());
    INDArray x = Nd4j.randn(DataType.FLOAT, 5, 16);
    assertEquals(sparse.output(x), plain.output(x));
  }

  @Test
  void sparsifiesAndDensifiesSavedSameDiffGpt(@TempDir Path dir) throws Exception {
    ReferenceGptSupport data = new ReferenceGptSupport();
    GptConfig c = new GptConfig(data.tokenizer.vocabSize(), 2, 32, 2, 16, 42);
    SameDiff sd = SameDiffGpt.build(c, 1e-3);
    File in = dir.resolve("gpt.fb").toFile(),
        out = dir.resolve("sparse.fb").toFile(),
        back = dir.resolve("dense.fb").toFile();
    sd.save(in, false);
    Path yaml =
        Path.of(SparsifyCommandTest.class.getResource("/sparsity/gpt-samediff.yaml").toURI());
    StringWriter o = new StringWriter(), e = new StringWriter();
    assertEquals(
        0, run(o, e, "--config", yaml.toString(), in.toString(), out.toString()), e.toString());
    Map<String, INDArray> ph =
        Map.of(
            SameDiffGpt.INPUT,
            SameDiffGpt.batch(data.sampler(4, c.context(), 3).windows(0)).getFeatures());
    SameDiff sparse = SameDiff.load(out, true);
    assertTrue(
        sparse.getOps().values().stream()
            .anyMatch(op -> op.getOp().opName().startsWith("sparseflow_")));
    INDArray sparseLogits = sparse.outputSingle(ph, SameDiffGpt.LOGITS);

    assertEquals(
        0,
        run(
            new StringWriter(),
            e,
            "--densify",
            "--seq-len",
            String.valueOf(c.context()),
            out.toString(),
            back.toString()),
        e.toString());
    SameDiff dense = SameDiff.load(back, true);
    assertTrue(
        dense.getOps().values().stream()
            .noneMatch(op -> op.getOp().opName().startsWith("sparseflow_")));
    assertTrue(
        sparseLogits.sub(dense.outputSingle(ph, SameDiffGpt.LOGITS)).amaxNumber().doubleValue()
            < 1e-4);
  }

  @Test
  void badConfigIsOneLineErrorWithExitCode1(@TempDir Path dir) throws Exception {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .list()
                .layer(new DenseLayer.Builder().nIn(4).nOut(4).build())
                .layer(new OutputLayer.Builder().nIn(4).nOut(2).build())
                .build());
    net.init();
    File in = dir.resolve("in.zip").toFile();
    ModelSerializer.writeModel(net, in, false);
    Path yaml = dir.resolve("bad.yaml");
    Files.writeString(yaml, "sparsity: 2\n");
    StringWriter o = new StringWriter(), e = new StringWriter();
    assertEquals(
        1, run(o, e, "--config", yaml.toString(), in.toString(), dir.resolve("o.zip").toString()));
    assertTrue(
        e.toString().contains("bad.yaml") && e.toString().contains("sparsity"), e.toString());
    assertEquals(
        1,
        run(
            o,
            e,
            "--config",
            yaml.toString(),
            dir.resolve("missing.zip").toString(),
            dir.resolve("o.zip").toString()));
    assertTrue(e.toString().contains("missing.zip"), e.toString());
  }
}
