package org.sparseflow.ops.config;

import java.util.Arrays;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.databind.JsonMappingException;
import org.nd4j.shade.jackson.databind.exc.InvalidFormatException;
import org.nd4j.shade.jackson.databind.exc.MismatchedInputException;
import org.nd4j.shade.jackson.databind.exc.UnrecognizedPropertyException;

/** One-line messages for Jackson binding failures (see {@link StrictConfigReader#bind}). */
final class BindingErrors {

  private BindingErrors() {}

  /**
   * Turns a Jackson binding failure into a one-line error naming source, field, value and what is
   * allowed.
   */
  static IllegalArgumentException describe(
      JsonProcessingException e, String source, String what, String pathPrefix) {
    String field = pathPrefix == null ? "" : pathPrefix;
    if (e instanceof JsonMappingException jm) {
      for (JsonMappingException.Reference r : jm.getPath()) {
        String part = r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]";
        field = field.isEmpty() || part.startsWith("[") ? field + part : field + "." + part;
      }
    }
    String shown = field.isEmpty() ? "<root>" : field;
    IllegalArgumentException cause = causeOf(e);
    String msg;
    if (cause != null) {
      msg = "field '" + shown + "': " + cause.getMessage();
    } else if (e instanceof UnrecognizedPropertyException u) {
      msg =
          "unknown field '"
              + shown
              + "'; allowed fields"
              + (field.contains(".") ? " there" : "")
              + ": "
              + sorted(u.getKnownPropertyIds());
    } else if (e instanceof InvalidFormatException f) {
      Class<?> t = f.getTargetType();
      String allowed =
          t != null && t.isEnum()
              ? "one of " + Arrays.toString(t.getEnumConstants())
              : "a value of type " + typeName(t);
      msg = "field '" + shown + "' has value '" + f.getValue() + "'; allowed: " + allowed;
    } else if (e instanceof MismatchedInputException m) {
      msg =
          "field '"
              + shown
              + "' has the wrong kind of value; allowed: "
              + typeName(m.getTargetType())
              + " ("
              + StrictConfigReader.firstLine(e.getOriginalMessage())
              + ")";
    } else {
      msg = "field '" + shown + "': " + StrictConfigReader.firstLine(e.getOriginalMessage());
    }
    return new IllegalArgumentException(what + " " + source + ": " + msg, e);
  }

  private static IllegalArgumentException causeOf(Throwable e) {
    for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
      if (t instanceof IllegalArgumentException iae && iae.getMessage() != null) {
        return iae;
      }
    }
    return null;
  }

  private static String typeName(Class<?> t) {
    if (t == null) {
      return "see the documented schema";
    }
    if (t.isEnum()) {
      return "one of " + Arrays.toString(t.getEnumConstants());
    }
    if (Collection.class.isAssignableFrom(t) || t.isArray()) {
      return "a list";
    }
    if (Map.class.isAssignableFrom(t)) {
      return "a mapping";
    }
    if (t == String.class) {
      return "a string";
    }
    if (t.isPrimitive() || Number.class.isAssignableFrom(t) || t == Boolean.class) {
      return "a " + t.getSimpleName().toLowerCase(Locale.ROOT);
    }
    return "a mapping (" + t.getSimpleName() + ")";
  }

  private static String sorted(Collection<Object> ids) {
    Set<String> s = new TreeSet<>();
    if (ids != null) {
      ids.forEach(o -> s.add(String.valueOf(o)));
    }
    return s.toString();
  }
}
