package example;

import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.adapter.SingletonDataSetIterator;
import org.nd4j.linalg.dataset.api.iterator.DataSetIterator;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions.LossFunction;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsified;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;

/**
 * The README's Java examples, verbatim between the "README:" markers (ReadmeConsumerTest checks
 * them), around a small synthetic task. Prints {@code CONSUMER ...} lines that verify.groovy reads,
 * and exits non-zero when a check fails.
 */
public final class Consumer {

  private Consumer() {}

  public static void main(String[] args) {
    DataSet data = data(256, 64, 10, 1);
    DataSetIterator trainIter = new SingletonDataSetIterator(data);

    // README: dl4j begin
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(1)
                .updater(new Adam(1e-2))
                .list()
                .layer(
                    new DenseLayer.Builder().nIn(64).nOut(256).activation(Activation.RELU).build())
                .layer(
                    new DenseLayer.Builder().nIn(256).nOut(256).activation(Activation.RELU).build())
                .layer(
                    new OutputLayer.Builder(LossFunction.MCXENT)
                        .nIn(256)
                        .nOut(10)
                        .activation(Activation.SOFTMAX)
                        .build())
                .build());
    net.init();
    SparsityConfig cfg = SparsityConfig.fromYaml("pattern: block16\nsparsity: 0.9\n");
    Sparsified<MultiLayerNetwork> sparse = Sparsify.apply(cfg, net);
    System.out.println(sparse.report());
    MultiLayerNetwork model = sparse.model();
    model.fit(trainIter, 30);
    // README: dl4j end

    double lossBefore = net.score(data);
    double loss = model.score(data);
    SparsifyReport r = sparse.report();
    check(r.entry("layer1").status() == SparsifyReport.Status.SPARSE, "layer1 sparse:\n" + r);
    check(Math.abs(r.entry("layer1").measuredDensity() - 0.1) < 0.02, "layer1 density 0.1:\n" + r);
    check(r.entry("layer0").status() == SparsifyReport.Status.DENSE, "keepFirstDense:\n" + r);
    check(
        Double.isFinite(loss) && loss < lossBefore,
        "sparse MLP trains: " + lossBefore + " -> " + loss);
    System.out.printf("CONSUMER dl4j OK loss %.4f -> %.4f%n", lossBefore, loss);

    MstListener mst = new MstListener(MstConfig.preset("mst").withTotalSteps(10));
    check(mst != null, "MstListener");

    sameDiff(data);
    System.out.println("CONSUMER OK");
  }

  private static void sameDiff(DataSet data) {
    // README: samediff begin
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.FLOAT, -1, 64);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 10);
    SDVariable h = in;
    long width = 64;
    for (int i = 0; i < 3; i++) {
      SDVariable w = sd.var("fc" + i + "_w", Nd4j.randn(DataType.FLOAT, width, 256).muli(0.1));
      SDVariable b = sd.var("fc" + i + "_b", Nd4j.zeros(DataType.FLOAT, 256));
      h = sd.nn.relu(sd.nn.linear(h, w, b), 0); // sd.nn.linear is op xw_plus_b
      width = 256;
    }
    SDVariable head = sd.var("head_w", Nd4j.randn(DataType.FLOAT, 256, 10).muli(0.1));
    SDVariable logits = sd.nn.linear("logits", h, head, sd.zero("head_b", DataType.FLOAT, 10));
    sd.loss().softmaxCrossEntropy("loss", label, logits, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());

    Sparsified<SameDiff> s =
        Sparsify.apply(SparsityConfig.fromYaml("pattern: unstructured\nsparsity: 0.8\n"), sd);
    System.out.println(s.report()); // every linear weight: sparse, or dense with the reason
    s.model().fit(data);
    // README: samediff end

    SparsifyReport r = s.report();
    for (String w : new String[] {"fc0_w", "fc1_w", "fc2_w", "head_w"}) {
      check(r.entry(w) != null, w + " reported:\n" + r);
    }
    check(r.entry("fc0_w").status() == SparsifyReport.Status.DENSE, "keepFirstDense:\n" + r);
    check(r.entry("head_w").status() == SparsifyReport.Status.DENSE, "keepLastDense:\n" + r);
    for (String w : new String[] {"fc1_w", "fc2_w"}) {
      check(r.entry(w).status() == SparsifyReport.Status.SPARSE, w + " sparse:\n" + r);
      INDArray arr = sd.getArrForVarName(w);
      double density = arr.neq(0.0).castTo(DataType.DOUBLE).meanNumber().doubleValue();
      check(Math.abs(density - 0.2) < 0.02, w + " measured density " + density);
    }
    check(Double.isFinite(sd.getArrForVarName("fc1_w").sumNumber().doubleValue()), "finite");
    System.out.println("CONSUMER samediff OK");
  }

  private static DataSet data(int n, int nIn, int classes, long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray x = Nd4j.randn(DataType.FLOAT, n, nIn);
    INDArray y = Nd4j.zeros(DataType.FLOAT, n, classes);
    for (int i = 0; i < n; i++) {
      int c =
          (int)
              Math.floorMod(
                  (long) Math.floor(x.getDouble(i, 0) * 3 + x.getDouble(i, 1) * 2), classes);
      y.putScalar(i, c, 1.0);
    }
    return new DataSet(x, y);
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      System.out.println("CONSUMER FAILED " + what);
      System.exit(1);
    }
  }
}
