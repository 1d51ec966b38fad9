package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.dataflow.capture.SameDiffCapture;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.sim.DataflowSimulator;
import org.sparseflow.dataflow.sim.ExecutionMode;

class SameDiffCaptureTest {

  private static SameDiff mlp() {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, 8);
    SDVariable w1 = sd.var("w1", Nd4j.rand(DataType.FLOAT, 8, 16));
    SDVariable b1 = sd.var("b1", Nd4j.zeros(DataType.FLOAT, 16));
    SDVariable h = sd.nn.tanh("h", x.mmul(w1).add(b1));
    SDVariable w2 = sd.var("w2", Nd4j.rand(DataType.FLOAT, 16, 3));
    sd.nn.softmax("out", h.mmul(w2), 1);
    return sd;
  }

  @Test
  void staticCaptureMapsEveryOpWithShapesFromThePlaceholderBatch() {
    SameDiff sd = mlp();
    OpGraph g = SameDiffCapture.capture(sd, 4);
    assertEquals(sd.getOps().size(), g.ops().size());
    double mm = 0;
    for (OpNode op : g.ops()) {
      if (op.kind() == OpKind.LINEAR) {
        mm += op.flops();
      }
    }
    assertEquals(2.0 * 4 * 8 * 16 + 2.0 * 4 * 16 * 3, mm, 1e-9);
    assertTrue(g.ops().stream().anyMatch(o -> o.kind() == OpKind.SOFTMAX));
    assertTrue(
        new DataflowSimulator(ChipSpec.builtin("sn30"))
                .simulate(g, ExecutionMode.DATAFLOW, 4)
                .stepSeconds()
            > 0);
  }

  @Test
  void captureWithExecutedShapesAgreesWithStaticPropagation() {
    SameDiff sd = mlp();
    Map<String, INDArray> ph = Map.of("x", Nd4j.rand(DataType.FLOAT, 4, 8));
    Map<String, INDArray> all = sd.outputAll(ph);
    Map<String, long[]> shapes = new HashMap<>();
    all.forEach((k, v) -> shapes.put(k, v.shape()));
    shapes.put("x", new long[] {4, 8});
    OpGraph exec = SameDiffCapture.capture(sd, shapes);
    OpGraph stat = SameDiffCapture.capture(sd, 4);
    assertEquals(stat.totalFlops(), exec.totalFlops(), 1e-9);
  }

  @Test
  void trainingCaptureAddsBackwardAndOneUpdatePerVariable() {
    SameDiff sd = mlp();
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 3);
    sd.loss.logLoss("loss", label, sd.getVariable("out"));
    sd.setLossVariables("loss");
    OpGraph fwd = SameDiffCapture.capture(sd, 4);
    OpGraph train = SameDiffCapture.captureTraining(sd, 4);
    assertTrue(
        train.ops().stream().anyMatch(o -> o.phase() == Phase.BACKWARD), "backward ops captured");
    assertEquals(
        3, train.ops().stream().filter(o -> o.kind() == OpKind.OPTIMIZER).count(), "w1, b1, w2");
    assertTrue(train.totalFlops() > 2 * fwd.totalFlops());
    assertTrue(
        new DataflowSimulator(ChipSpec.builtin("sn10"))
                .simulate(train, ExecutionMode.DATAFLOW, 4)
                .stepSeconds()
            > 0);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> SameDiffCapture.captureTraining(mlp(), 4));
    assertTrue(e.getMessage().contains("loss"), e.getMessage());
  }

  @Test
  void nullOrBadArgumentsAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> SameDiffCapture.capture(null, 1));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SameDiffCapture.capture(mlp(), 0));
    assertTrue(e.getMessage().contains("batch"));
  }
}
