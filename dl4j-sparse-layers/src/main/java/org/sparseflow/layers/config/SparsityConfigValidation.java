package org.sparseflow.layers.config;

import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The field checks of {@link SparsityConfig#validate}: each failure is one {@link
 * IllegalArgumentException} naming the config's source, the field, its value and what is allowed.
 */
final class SparsityConfigValidation {
  private SparsityConfigValidation() {}

  /** Throws on the first field of {@code c} that is out of range; {@code src} names the file. */
  static void check(SparsityConfig c, String src) {
    String pattern = c.getPattern();
    double sparsity = c.getSparsity();
    AttentionSettings attention = c.getAttention();
    JsonNode mst = c.getMst();
    String pp = PatternStrings.weightPatternProblem(pattern);
    if (pp != null) {
      throw fieldError(
          src, "pattern", pattern, PatternStrings.WEIGHT_PATTERN_ALLOWED + " (" + pp + ")");
    }
    if (!(sparsity >= 0.0 && sparsity < 1.0)) {
      throw fieldError(
          src,
          "sparsity",
          sparsity,
          "a number in [0, 1) (fraction of zeros; 1 would prune everything)");
    }
    if (c.getDistribution() == null) {
      throw fieldError(src, "distribution", null, "one of UNIFORM, ER, ERK");
    }
    if (c.getInitialMask() == null) {
      throw fieldError(src, "initialMask", null, "one of RANDOM, MAGNITUDE");
    }
    String storage = c.getStorage();
    if (!SparsityConfig.STORAGE_MASKED.equals(storage)
        && !SparsityConfig.STORAGE_PACKED.equals(storage)) {
      throw fieldError(src, "storage", storage, "masked or packed");
    }
    if (c.packedStorage()
        && PatternSpec.parse(pattern).getKind() == MaskPattern.Kind.UNSTRUCTURED) {
      throw fieldError(
          src,
          "storage",
          storage,
          "masked with pattern '"
              + pattern
              + "' (packed storage holds kept blocks or kept n:m values: patterns block8,"
              + " block16, block32, block64 or n:m such as 2:4)");
    }
    if (c.packedStorage() && mst != null && !mst.isNull()) {
      throw fieldError(
          src,
          "storage",
          storage,
          "masked when an mst section is present (a config's packed layouts are not MST's first"
              + " masks: for MST on packed storage build the layers at MstListener.firstMasks and"
              + " train with MstListener.nextModel, or use train --storage packed)");
    }
    checkRegexes(src, "include", c.getInclude(), false);
    checkRegexes(src, "exclude", c.getExclude(), true);
    if (attention != null) {
      String p = attention.getPattern();
      String ap = p == null ? null : PatternStrings.attentionPatternProblem(p);
      if (ap != null) {
        throw fieldError(
            src,
            "attention.pattern",
            p,
            PatternStrings.ATTENTION_PATTERN_ALLOWED + " (" + ap + ")");
      }
      int bs = attention.getBlockSize();
      if (bs < 1 || (bs & (bs - 1)) != 0 || bs > 1024) {
        throw fieldError(src, "attention.blockSize", bs, "a power of two in [1, 1024]");
      }
      checkRegexes(src, "attention.layers", attention.getLayers(), false);
    }
    if (mst != null && !mst.isNull() && !mst.isObject()) {
      // the section's fields are checked by the mst-scheduler; here only its shape
      throw fieldError(
          src,
          "mst",
          mst.isArray() ? "a list" : "the scalar " + mst,
          "a mapping (the MST schedule: schedule, deltaT, growMode, ...)");
    }
  }

  private static void checkRegexes(
      String src, String field, List<String> regexes, boolean emptyAllowed) {
    if (regexes == null || (!emptyAllowed && regexes.isEmpty())) {
      throw fieldError(
          src,
          field,
          regexes,
          emptyAllowed ? "a list of Java regexes" : "a non-empty list of Java regexes");
    }
    for (int i = 0; i < regexes.size(); i++) {
      String r = regexes.get(i);
      if (r == null) {
        throw fieldError(src, field + "[" + i + "]", null, "a Java regex");
      }
      try {
        Pattern.compile(r);
      } catch (PatternSyntaxException e) {
        throw fieldError(
            src,
            field + "[" + i + "]",
            r,
            "a valid Java regex (" + e.getDescription() + " at index " + e.getIndex() + ")");
      }
    }
  }

  static IllegalArgumentException fieldError(
      String src, String field, Object value, String allowed) {
    String v = value instanceof String ? "'" + value + "'" : String.valueOf(value);
    return new IllegalArgumentException(
        "Sparsity config "
            + src
            + ": field '"
            + field
            + "' has value "
            + v
            + "; allowed: "
            + allowed);
  }
}
