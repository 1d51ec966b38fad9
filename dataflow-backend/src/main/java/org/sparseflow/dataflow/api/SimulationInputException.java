package org.sparseflow.dataflow.api;

/**
 * Bad input to a simulation (an option, a model, a hardware or validation file): the message names
 * the argument or file, the value and what is allowed. Front ends map it to a usage error.
 */
public class SimulationInputException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public SimulationInputException(String message, Throwable cause) {
    super(message, cause);
  }
}
