package org.sparseflow.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.dataflow.api.SimulateRunner;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.layers.config.PatternStrings;
import org.sparseflow.ops.config.StrictConfigReader;

/**
 * Option checks of {@code sparseflow simulate}, kept out of the simulator: every value is checked
 * against the range its {@code --help} states before anything runs, so that nothing is silently
 * ignored or replaced (a global batch that does not split over the chips, a sparsity config given
 * as {@code --model}, a pattern that config files reject).
 */
final class SimulateOptions {

  /** Fields a GPT model file must give; a sparsity config has none of them. */
  static final List<String> MODEL_FIELDS =
      List.of("layers", "dmodel", "heads", "ffn", "seq", "vocab");

  private static final List<String> PRESETS = List.of("gpt-mini", "gpt2-small", "gpt3-13b");
  private static final List<String> RECOMPUTE = List.of("none", "attention", "full");

  private SimulateOptions() {}

  /**
   * Checks {@code o} and, for a model file, takes its sparsity, pattern and recompute unless the
   * matching option was {@code given}.
   */
  static void validate(SimulateRunner.Options o, Predicate<String> given) {
    GptSpec base = model(o, given);
    range("--seq", o.seq, 1, 131_072);
    range("--layers", o.layers, 1, 1000);
    range("--batch", o.batch, 1, 65_536);
    range("--global-batch", o.globalBatch, 1, 16_777_216);
    range("--chips", o.chips, 1, 65_536);
    range("--max-rows", o.maxRows, 0, 100_000);
    if (!(o.sparsity >= 0 && o.sparsity < 1)) {
      throw new IllegalArgumentException(
          "--sparsity: " + o.sparsity + " is outside [0, 1) (fraction of pruned weights)");
    }
    String p = o.pattern == null ? "" : o.pattern.trim().toLowerCase(Locale.ROOT);
    if (p.equals("dense")) {
      throw new IllegalArgumentException(
          "--pattern: 'dense' is not a sparsity pattern; use --sparsity 0 for a dense model");
    }
    String problem = PatternStrings.weightPatternProblem(p);
    if (problem != null) {
      throw new IllegalArgumentException(
          "--pattern: '"
              + o.pattern
              + "' is not allowed; allowed: "
              + PatternStrings.WEIGHT_PATTERN_ALLOWED);
    }
    if (o.recompute == null || !RECOMPUTE.contains(o.recompute.toLowerCase(Locale.ROOT))) {
      throw new IllegalArgumentException(
          "--recompute: '" + o.recompute + "' is not allowed; allowed: " + RECOMPUTE);
    }
    existingFile("--chip-file", o.chipFile);
    existingFile("--gpu-file", o.gpuFile);
    // hardware files go through the strict reader too (UTF-8, size, one document, no duplicate
    // keys); their fields are the simulator's to check
    if (o.chipFile != null) {
      StrictConfigReader.readFile(o.chipFile, "--chip-file: chip file");
    }
    if (o.gpuFile != null) {
      StrictConfigReader.readFile(o.gpuFile, "--gpu-file: GPU file");
    }
    if (o.out != null && Files.exists(o.out) && !Files.isDirectory(o.out)) {
      throw new IllegalArgumentException(
          "--out: " + o.out + " is a file; allowed: a directory (created if absent)");
    }
    int batch = o.batch != null ? o.batch : base.getBatch();
    int global = o.globalBatch != null ? o.globalBatch : base.getGlobalBatch();
    long perStep = (long) o.chips * batch;
    boolean asked = given.test("--global-batch") || given.test("--chips") || given.test("--batch");
    if (asked && global % perStep != 0) {
      throw new IllegalArgumentException(
          "--global-batch: "
              + global
              + " sequences do not split over --chips "
              + o.chips
              + " x --batch "
              + batch
              + " = "
              + perStep
              + "; allowed: a multiple of "
              + perStep
              + " (or fewer --chips / a smaller --batch)");
    }
  }

  private static GptSpec model(SimulateRunner.Options o, Predicate<String> given) {
    String m = o.model == null ? "" : o.model;
    if (PRESETS.contains(m.toLowerCase(Locale.ROOT))) {
      return GptSpec.preset(m);
    }
    if (!m.endsWith(".json")) {
      throw new IllegalArgumentException(
          "--model: '"
              + m
              + "' is unknown; allowed: "
              + String.join(", ", PRESETS)
              + ", or a GPT .json file");
    }
    Path file = Path.of(m);
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException("--model: file " + m + " does not exist");
    }
    JsonNode tree = StrictConfigReader.readFile(file, "--model: GPT model file");
    if (!tree.isObject()) {
      throw new IllegalArgumentException(
          "--model: " + m + " is not a GPT model file; allowed: a mapping with " + MODEL_FIELDS);
    }
    Set<String> known = new TreeSet<>();
    try {
      new ObjectMapper()
          .readTree(GptSpec.preset("gpt-mini").toJson())
          .fieldNames()
          .forEachRemaining(known::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    tree.fieldNames()
        .forEachRemaining(
            f -> {
              if (!known.contains(f)) {
                throw new IllegalArgumentException(
                    "--model: " + m + ": unknown field '" + f + "'; allowed fields: " + known);
              }
            });
    List<String> missing = MODEL_FIELDS.stream().filter(f -> !tree.has(f)).toList();
    if (!missing.isEmpty()) {
      throw new IllegalArgumentException(
          "--model: "
              + m
              + " is not a GPT model file: it lacks "
              + missing
              + (tree.has("sparsity") || tree.has("pattern")
                  ? " (a sparsity config? give it to 'sparsify --config' or 'train --sparsity')"
                  : "")
              + "; allowed: a GptSpec JSON giving "
              + MODEL_FIELDS);
    }
    GptSpec spec;
    try {
      spec = GptSpec.fromJson(tree.toString());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--model: " + m + ": " + e.getMessage().split("\\R", 2)[0], e);
    }
    // the file's own values win over the options' defaults, not over options the user gave
    if (tree.has("sparsity") && !given.test("--sparsity")) {
      o.sparsity = spec.getSparsity();
    }
    if (tree.has("pattern") && !given.test("--pattern")) {
      o.pattern = spec.getPattern();
    }
    if (tree.has("recompute") && !given.test("--recompute")) {
      o.recompute = spec.getRecompute();
    }
    return spec;
  }

  private static void range(String name, Integer v, int lo, int hi) {
    if (v != null && (v < lo || v > hi)) {
      throw new IllegalArgumentException(
          name + ": " + v + " is outside the allowed range " + lo + ".." + hi);
    }
  }

  private static void existingFile(String name, Path p) {
    if (p != null && !Files.isRegularFile(p)) {
      throw new IllegalArgumentException(
          name + ": " + p + " does not exist or is not a file; allowed: a hardware JSON file");
    }
  }
}
