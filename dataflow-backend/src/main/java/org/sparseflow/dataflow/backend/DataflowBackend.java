package org.sparseflow.dataflow.backend;

import com.google.auto.service.AutoService;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.sparseflow.ops.backend.SparseFlowBackend;

/**
 * ND4J backend that computes everything on the CPU backend and records every executed op for the
 * dataflow simulator. Only available when asked for ({@code -Dsparseflow.backend=dataflow} or
 * {@code SPARSEFLOW_BACKEND=dataflow}) and when nd4j-native is on the classpath; otherwise
 * invisible. Like {@link SparseFlowBackend} it links only against nd4j-api (so it never breaks
 * ND4J's backend discovery), and delegates to the CPU backend with {@link RecordingOpExecutioner};
 * its priority is above that backend and the stock CPU backend, below CUDA.
 */
@AutoService(Nd4jBackend.class)
public class DataflowBackend extends SparseFlowBackend {
  /** Priority offset above the stock CPU backend (SparseFlowBackend uses +10). */
  public static final int PRIORITY_OFFSET = 20;

  @Override
  protected boolean wanted() {
    return Recording.requested();
  }

  @Override
  protected int priorityOffset() {
    return PRIORITY_OFFSET;
  }

  /** Executioner written into the CPU backend's configuration. */
  @Override
  protected String executionerClassName() {
    return "org.sparseflow.dataflow.backend.RecordingOpExecutioner";
  }
}
