package org.sparseflow.dataflow.compile;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.dataflow.graph.OpKind;

/** Loads fusion rules from JSON (the built-in resource, or a user file). */
public final class FusionRules {
  public static final String RESOURCE = "/org/sparseflow/dataflow/fusion-rules.json";
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private FusionRules() {}

  public static List<FusionRule> builtin() {
    try (InputStream in = FusionRules.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("fusion rules resource missing: " + RESOURCE);
      }
      return parse(RESOURCE, MAPPER.readTree(in));
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + RESOURCE, e);
    }
  }

  public static List<FusionRule> fromFile(Path file) {
    try {
      return parse(file.toString(), MAPPER.readTree(file.toFile()));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "fusion rules file '" + file + "' cannot be read as JSON: " + e.getMessage(), e);
    }
  }

  public static List<FusionRule> fromJson(String json) {
    try {
      return parse("<string>", MAPPER.readTree(json));
    } catch (IOException e) {
      throw new IllegalArgumentException("fusion rules are not valid JSON: " + e.getMessage(), e);
    }
  }

  static List<FusionRule> parse(String origin, JsonNode root) {
    JsonNode rules = root == null ? null : root.get("rules");
    if (rules == null || !rules.isArray()) {
      throw new IllegalArgumentException(origin + ": expected {\"rules\": [...]}");
    }
    List<FusionRule> out = new ArrayList<>();
    for (JsonNode r : rules) {
      String name = r.path("name").asText(null);
      List<FusionRule.Step> steps = new ArrayList<>();
      for (JsonNode s : r.path("steps")) {
        Set<OpKind> kinds = EnumSet.noneOf(OpKind.class);
        for (JsonNode k : s.path("kinds")) {
          try {
            kinds.add(OpKind.valueOf(k.asText().toUpperCase(Locale.ROOT)));
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                origin
                    + ": rule '"
                    + name
                    + "' has unknown op kind '"
                    + k.asText()
                    + "'; allowed: "
                    + Arrays.toString(OpKind.values()));
          }
        }
        List<Pattern> names = new ArrayList<>();
        for (JsonNode n : s.path("names")) {
          try {
            names.add(Pattern.compile(n.asText()));
          } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException(
                origin + ": rule '" + name + "' has invalid name regex '" + n.asText() + "'");
          }
        }
        String rep = s.path("repeat").asText("1");
        if (rep.length() != 1) {
          throw new IllegalArgumentException(
              origin + ": rule '" + name + "' repeat '" + rep + "' must be one of 1, ?, *, +");
        }
        steps.add(new FusionRule.Step(kinds, names, rep.charAt(0)));
      }
      out.add(
          new FusionRule(
              name, r.path("description").asText(""), r.path("connected").asBoolean(true), steps));
    }
    return out;
  }
}
