package org.sparseflow.ops.backend;

import java.util.Locale;

/**
 * Which ND4J backend SparseFlow registers: system property {@code sparseflow.backend} or, when it
 * is unset, environment variable {@code SPARSEFLOW_BACKEND}.
 *
 * <ul>
 *   <li>{@code sparseflow} (default): the CPU backend with SparseFlow's op executioner;
 *   <li>{@code stock} (or {@code off}): SparseFlow registers nothing; ND4J picks its own backend
 *       and SparseFlow's SameDiff ops build as dense masked ND4J ops;
 *   <li>{@code dataflow}: the recording backend of the dataflow-backend module.
 * </ul>
 *
 * <p>The older {@code -Dsparseflow.backend.disable=true} still means {@code stock}.
 */
public final class BackendSwitch {

  /** System property naming the backend. */
  public static final String PROPERTY = "sparseflow.backend";

  /** Environment variable read when the property is unset. */
  public static final String ENV = "SPARSEFLOW_BACKEND";

  /** Older switch-off property (javadoc-only before 0.1.0). */
  public static final String LEGACY_DISABLE_PROPERTY = "sparseflow.backend.disable";

  private BackendSwitch() {}

  /**
   * The requested backend in lower case: {@code sparseflow}, {@code stock} or {@code dataflow}.
   *
   * @throws IllegalArgumentException for any other value, naming the property and what is allowed
   */
  public static String requested() {
    if (Boolean.getBoolean(LEGACY_DISABLE_PROPERTY)) {
      return "stock";
    }
    String source = "-D" + PROPERTY;
    String v = System.getProperty(PROPERTY);
    if (v == null || v.isBlank()) {
      source = ENV;
      v = System.getenv(ENV);
    }
    if (v == null || v.isBlank()) {
      return "sparseflow";
    }
    String s = v.trim().toLowerCase(Locale.ROOT);
    switch (s) {
      case "sparseflow":
      case "stock":
      case "dataflow":
        return s;
      case "off":
        return "stock";
      default:
        throw new IllegalArgumentException(
            source
                + "="
                + v
                + " is not a SparseFlow backend; allowed: sparseflow, stock (or off), dataflow");
    }
  }

  /** True unless the user switched SparseFlow's backend off. */
  public static boolean sparseFlowBackendWanted() {
    String r = requested();
    return r.equals("sparseflow") || r.equals("dataflow");
  }
}
