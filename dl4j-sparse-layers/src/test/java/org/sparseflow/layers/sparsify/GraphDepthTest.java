package org.sparseflow.layers.sparsify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;

/** keepFirstDense / keepLastDense on a ComputationGraph count layers by depth from the inputs. */
class GraphDepthTest {

  private static DenseLayer dense(int in, int out) {
    return new DenseLayer.Builder().nIn(in).nOut(out).activation(Activation.RELU).build();
  }

  private static OutputLayer output(int in, int out) {
    return new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
        .nIn(in)
        .nOut(out)
        .activation(Activation.SOFTMAX)
        .build();
  }

  /** A main path in -> a -> b -> c -> out, and a shallow head in -> aux -> auxOut declared last. */
  static ComputationGraphConfiguration twoHeads() {
    return new NeuralNetConfiguration.Builder()
        .seed(1)
        .updater(new Adam(1e-3))
        .graphBuilder()
        .addInputs("in")
        .addLayer("a", dense(16, 32), "in")
        .addLayer("b", dense(32, 32), "a")
        .addLayer("c", dense(32, 32), "b")
        .addLayer("out", output(32, 8), "c")
        .addLayer("aux", dense(16, 32), "in")
        .addLayer("auxOut", output(32, 8), "aux")
        .setOutputs("out", "auxOut")
        .build();
  }

  @Test
  void aShallowHeadDeclaredLastCountsAsFirstAndTheDeepHeadAsLast() {
    SparsityConfig cfg = SparsityConfig.builder().pattern("block8").sparsity(0.5).build();
    SparsifyReport report = Sparsify.apply(cfg, twoHeads()).report();
    for (String first : new String[] {"a", "aux"}) {
      assertEquals(Status.DENSE, report.entry(first).status(), first);
      assertTrue(report.entry(first).reason().contains("keepFirstDense"), first);
      assertTrue(report.entry(first).reason().contains("first = depth 1"), first);
    }
    assertEquals(Status.DENSE, report.entry("out").status());
    assertTrue(
        report.entry("out").reason().contains("last = depth 4"), report.entry("out").reason());
    for (String sparse : new String[] {"b", "c", "auxOut"}) {
      assertEquals(Status.SPARSE, report.entry(sparse).status(), sparse);
    }
    // the initialised network takes the same decisions
    ComputationGraph net = new ComputationGraph(twoHeads());
    net.init();
    SparsifyReport fromNet = Sparsify.apply(cfg, net).report();
    for (String name : new String[] {"a", "aux", "out", "b", "c", "auxOut"}) {
      assertEquals(report.entry(name).status(), fromNet.entry(name).status(), name);
    }
  }
}
