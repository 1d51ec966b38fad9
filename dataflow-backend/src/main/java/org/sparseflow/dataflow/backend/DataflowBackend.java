package org.sparseflow.dataflow.backend;

import com.google.auto.service.AutoService;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.sparseflow.ops.samediff.SparseFlowCpuBackend;

/**
 * ND4J backend that computes everything on the CPU backend and records every executed op for the
 * dataflow simulator. Only available when asked for ({@code -Dsparseflow.backend=dataflow} or
 * {@code SPARSEFLOW_BACKEND=dataflow}); otherwise invisible. It extends SparseFlow's CPU backend
 * (so SparseFlow Java ops keep running in Java) with a recording executioner; its priority is above
 * that backend and the stock CPU backend, below CUDA.
 */
@AutoService(Nd4jBackend.class)
public class DataflowBackend extends SparseFlowCpuBackend {
  /** Priority offset above the stock CPU backend (SparseFlowCpuBackend uses +10). */
  public static final int PRIORITY_OFFSET = 20;

  @Override
  public int getPriority() {
    return super.getPriority() - SparseFlowCpuBackend.PRIORITY_OFFSET + PRIORITY_OFFSET;
  }

  @Override
  public boolean isAvailable() {
    return Recording.requested() && super.isAvailable();
  }

  /** Executioner written into the configuration by the parent backend. */
  @Override
  protected String executionerClassName() {
    return RecordingOpExecutioner.class.getName();
  }
}
