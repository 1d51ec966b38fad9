package org.sparseflow.it;

import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.cli.SparsifyCommand;
import org.sparseflow.layers.nn.SparseDenseLayer;
import picocli.CommandLine;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

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
        MultiLayerConfiguration conf = new NeuralNetConfiguration.Builder().seed(1).updater(new Adam(1e-3)).list()
                .layer(new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.RELU).build())
                .layer(new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build())
                .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(4).activation(Activation.SOFTMAX).build())
                .build();
        MultiLayerNetwork net = new MultiLayerNetwork(conf);
        net.init();
        File in = dir.resolve("in.zip").toFile(), out = dir.resolve("out.zip").toFile(), back = dir.resolve("back.zip").toFile();
        ModelSerializer.writeModel(net, in, true);
        Path yaml = dir.resolve("s.yaml");
        Files.writeString(yaml, "pattern: block8\nsparsity: 0.75\ninitialMask: MAGNITUDE\n");

        StringWriter o = new StringWriter(), e = new StringWriter();
        assertEquals(0, run(o, e, "--config", yaml.toString(), in.toString(), out.toString()), e.toString());
        assertTrue(o.toString().contains("layer1") && o.toString().contains("SPARSE") && o.toString().contains("0.2500"), o.toString());
        MultiLayerNetwork sparse = MultiLayerNetwork.load(out, true);
        assertInstanceOf(SparseDenseLayer.class, sparse.getLayerWiseConfigurations().getConf(1).getLayer());
        assertEquals(0.25, sparse.getParam("1_M").meanNumber().doubleValue(), 1e-6);

        assertEquals(0, run(new StringWriter(), e, "--densify", out.toString(), back.toString()), e.toString());
        MultiLayerNetwork plain = MultiLayerNetwork.load(back, false);
        assertEquals(DenseLayer.class, plain.getLayerWiseConfigurations().getConf(1).getLayer().getClass());
        INDArray x = Nd4j.randn(DataType.FLOAT, 5, 16);
        assertEquals(sparse.output(x), plain.output(x));
    }

    @Test
    void badConfigIsOneLineErrorWithExitCode1(@TempDir Path dir) throws Exception {
        MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder().list()
                .layer(new DenseLayer.Builder().nIn(4).nOut(4).build())
                .layer(new OutputLayer.Builder().nIn(4).nOut(2).build()).build());
        net.init();
        File in = dir.resolve("in.zip").toFile();
        ModelSerializer.writeModel(net, in, false);
        Path yaml = dir.resolve("bad.yaml");
        Files.writeString(yaml, "sparsity: 2\n");
        StringWriter o = new StringWriter(), e = new StringWriter();
        assertEquals(1, run(o, e, "--config", yaml.toString(), in.toString(), dir.resolve("o.zip").toString()));
        assertTrue(e.toString().contains("bad.yaml") && e.toString().contains("sparsity"), e.toString());
        assertEquals(1, run(o, e, "--config", yaml.toString(), dir.resolve("missing.zip").toString(), dir.resolve("o.zip").toString()));
        assertTrue(e.toString().contains("missing.zip"), e.toString());
    }
}
