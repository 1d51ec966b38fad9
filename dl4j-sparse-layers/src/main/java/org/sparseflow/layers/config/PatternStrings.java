package org.sparseflow.layers.config;

import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Checks of the pattern strings of a config with the real parsers of samediff-ops ({@link
 * PatternSpec#parse}, {@link AttentionPattern#parse}); both only read the string (no class is
 * instantiated from it).
 */
public final class PatternStrings {
  private PatternStrings() {}

  public static final String WEIGHT_PATTERN_ALLOWED =
      "'unstructured', 'block8', 'block16', 'block32', 'block64', or 'n:m' with 1 <= n <= m <= 64"
          + " (e.g. '2:4')";
  public static final String ATTENTION_PATTERN_ALLOWED =
      "components joined by '+': dense | local:<window> | strided:<stride> |"
          + " fixed:<segmentLength>[:<summary>] | global:<numTokens> |"
          + " random:<numBlocks>[:seed=<long>], e.g. 'local:64+strided:64'";

  /** Null if valid, else the parser's explanation. */
  public static String weightPatternProblem(String s) {
    try {
      PatternSpec.parse(s);
      return null;
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  /** Null if valid, else the parser's explanation. */
  public static String attentionPatternProblem(String s) {
    try {
      AttentionPattern.parse(s).getComponents().forEach(AttentionPattern.Component::validate);
      return null;
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  public static boolean isValidWeightPattern(String s) {
    return weightPatternProblem(s) == null;
  }

  public static boolean isValidAttentionPattern(String s) {
    return attentionPatternProblem(s) == null;
  }
}
