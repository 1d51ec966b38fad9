package org.sparseflow.dataflow.api;

/** The simulation ran but its output files could not be written. */
public class SimulationOutputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SimulationOutputException(String message, Throwable cause) {
    super(message, cause);
  }
}
