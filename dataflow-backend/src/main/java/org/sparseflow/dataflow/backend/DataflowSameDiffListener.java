package org.sparseflow.dataflow.backend;

import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.BaseListener;
import org.nd4j.autodiff.listeners.Loss;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.dataset.api.MultiDataSet;

/** SameDiff listener that marks iteration boundaries for {@link OpRecorder#global()}. */
public class DataflowSameDiffListener extends BaseListener {
  @Override
  public boolean isActive(Operation operation) {
    return true;
  }

  @Override
  public void iterationDone(SameDiff sd, At at, MultiDataSet dataSet, Loss loss) {
    OpRecorder.global().nextIteration();
  }
}
