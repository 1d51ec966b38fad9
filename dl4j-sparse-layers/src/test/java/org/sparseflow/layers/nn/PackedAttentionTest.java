package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.List;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/** projectionStorage = packed on CausalSelfAttentionLayer (issue 23). */
class PackedAttentionTest {
  private static final String[] W = {"Wq", "Wk", "Wv", "Wo"};

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static MultiLayerConfiguration conf(String storage, int[][] layouts, IUpdater u) {
    CausalSelfAttentionLayer.Builder a =
        new CausalSelfAttentionLayer.Builder()
            .nIn(16)
            .nOut(16)
            .nHeads(2)
            .attentionPattern("local:4")
            .blockSize(4)
            .projectionPattern("block8")
            .projectionDensity(0.5)
            .projectionStorage(storage);
    if (layouts != null) {
      a.projectionLayouts(layouts);
    }
    return new NeuralNetConfiguration.Builder()
        .seed(42)
        .dataType(DataType.DOUBLE)
        .updater(u)
        .list()
        .layer(a.build())
        .layer(
            new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                .activation(Activation.IDENTITY)
                .nOut(3)
                .dataFormat(RNNFormat.NCW)
                .build())
        .setInputType(InputType.recurrent(16, 8, RNNFormat.NCW))
        .build();
  }

  static MultiLayerNetwork net(MultiLayerConfiguration c) {
    MultiLayerNetwork n = new MultiLayerNetwork(c);
    n.init();
    return n;
  }

  static INDArray[] data(long seed) {
    Nd4j.getRandom().setSeed(seed);
    return new INDArray[] {
      Nd4j.rand(DataType.DOUBLE, 2, 16, 8).subi(0.5), Nd4j.rand(DataType.DOUBLE, 2, 3, 8)
    };
  }

  /** The packed twin of a masked attention net: same kept blocks and values. */
  static MultiLayerNetwork twin(MultiLayerNetwork masked, IUpdater u) {
    int[][] layouts = new int[4][];
    for (int i = 0; i < 4; i++) {
      INDArray m = masked.getParam("0_M" + W[i].substring(1));
      layouts[i] =
          PackedLayout.of((BlockMask) PatternSpec.parse("block8").fromDense(m)).keptRowMajor();
    }
    MultiLayerNetwork p = net(conf("packed", layouts, u));
    List<PackedSparseParam> packed = SparseParams.findPacked(p);
    assertEquals(4, packed.size());
    for (int i = 0; i < 4; i++) {
      packed.get(i).setDenseWeight(masked.getParam("0_" + W[i]));
    }
    for (String k : p.paramTable().keySet()) {
      if (!k.startsWith("0_W")) {
        p.setParam(k, masked.getParam(k));
      }
    }
    return p;
  }

  @Test
  void packedProjectionsMatchMaskedOnesAndPassTheGradientCheck() {
    MultiLayerNetwork masked = net(conf("masked", null, new NoOp()));
    MultiLayerNetwork packed = twin(masked, new NoOp());
    INDArray[] d = data(3);
    assertTrue(masked.output(d[0]).equalsWithEps(packed.output(d[0]), 1e-12));
    for (MultiLayerNetwork n : List.of(masked, packed)) {
      n.setInput(d[0]);
      n.setLabels(d[1]);
      n.computeGradientAndScore();
    }
    for (int i = 0; i < 4; i++) {
      PackedLayout l = SparseParams.findPacked(packed).get(i).layout();
      INDArray gm = masked.gradient().getGradientFor("0_" + W[i]);
      INDArray gp = packed.gradient().getGradientFor("0_" + W[i]);
      assertTrue(PackedSparseParam.pack(gm, l).equalsWithEps(gp, 1e-12), W[i]);
      assertArrayEquals(new long[] {2 * 8, 8}, packed.getParam("0_" + W[i]).shape());
    }
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig().net(packed).input(d[0]).labels(d[1])));
  }

  @Test
  void jsonAndModelFileRoundTripsAndMstRejection(@TempDir File dir) throws Exception {
    MultiLayerConfiguration c = conf("packed", null, new Adam(0.01));
    assertEquals(c, MultiLayerConfiguration.fromJson(c.toJson()));
    assertEquals(c.toJson(), MultiLayerConfiguration.fromJson(c.toJson()).toJson());
    MultiLayerNetwork n = net(c);
    INDArray[] d = data(5);
    n.fit(d[0], d[1]);
    File f = new File(dir, "attn.zip");
    ModelSerializer.writeModel(n, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(n.params(), back.params());
    assertEquals(n.output(d[0]), back.output(d[0]));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparseParams.find(n));
    assertTrue(e.getMessage().contains("'0_Wq' is stored packed"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new CausalSelfAttentionLayer.Builder()
                    .nIn(16)
                    .nOut(16)
                    .projectionStorage("packed")
                    .build());
    assertTrue(e.getMessage().contains("projectionPattern = null"), e.getMessage());
  }
}
