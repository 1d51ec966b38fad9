package org.sparseflow.dataflow.backend;

import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.optimize.api.BaseTrainingListener;

/** DL4J listener that marks iteration boundaries for {@link OpRecorder#global()}. */
public class DataflowTrainingListener extends BaseTrainingListener {
  @Override
  public void iterationDone(Model model, int iteration, int epoch) {
    OpRecorder.global().nextIteration();
  }
}
