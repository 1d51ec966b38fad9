package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.it.CliSupport.cli;
import static org.sparseflow.it.CliSupport.snapshot;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.deeplearning4j.util.ModelSerializer;
import org.sparseflow.it.CliSupport.Run;
import org.sparseflow.train.Checkpoint;

/**
 * Fuzzing of the public entry points (issue 20): random configuration documents and random argument
 * vectors. Every input must end in exit 0 with valid outputs, exit 3 (sparsify: nothing matched,
 * nothing written), or exit 1/2 with exactly one line naming the problem; never a stack trace; and
 * a failing command leaves an existing run directory byte-identical.
 */
class CliFuzzProperties {

  static Path tmp;
  static Path corpus;
  static Path run; // an existing, completed run that failing commands must not touch
  static Path mlp;
  static Path goodConfig;
  static Path fb;
  static final AtomicInteger counter = new AtomicInteger();

  @BeforeContainer
  static void fixtures() throws Exception {
    tmp = Files.createTempDirectory("sparseflow-fuzz");
    corpus = CliSupport.tinyCorpus(tmp);
    run = tmp.resolve("existing-run");
    Run r = cli(CliSupport.tinyTrain(corpus, "char-bigram", 2, run));
    assertEquals(0, r.code(), r.err());
    mlp = CliSupport.mlpZip(tmp);
    goodConfig = tmp.resolve("good.yaml");
    Files.writeString(goodConfig, "pattern: block8\nsparsity: 0.5\n");
    fb = tmp.resolve("garbage.fb");
    Files.write(fb, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  }

  @AfterContainer
  static void cleanUp() throws IOException {
    try (Stream<Path> s = Files.walk(tmp)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  /** The outcome rules shared by both properties; returns the single stderr line (or ""). */
  static String checkOutcome(Run r, String what) {
    String err = r.err().strip();
    assertFalse(r.err().contains("\tat "), what + ": stack trace:\n" + r.err());
    assertFalse(r.out().contains("\tat "), what + ": stack trace on stdout:\n" + r.out());
    switch (r.code()) {
      case 0 -> {
        return "";
      }
      case 1, 2, 3 -> {
        String[] lines = err.split("\\R");
        assertEquals(1, lines.length, what + ": one line on stderr, got:\n" + r.err());
        String prefix = r.code() == 3 ? "warning: " : "error: ";
        assertTrue(lines[0].startsWith(prefix), what + ": " + lines[0]);
        assertTrue(lines[0].length() > prefix.length() + 10, what + ": " + lines[0]);
        return lines[0];
      }
      default -> throw new AssertionError(what + ": exit code " + r.code() + "\n" + r.err());
    }
  }

  // ---------------------------------------------------------------- config documents

  private static final String[] KEYS = {
    "pattern",
    "sparsity",
    "distribution",
    "initialMask",
    "seed",
    "include",
    "exclude",
    "keepFirstDense",
    "keepLastDense",
    "attention",
    "mst",
    "bogus"
  };

  private static final String[] VALUES = {
    "block8",
    "block16",
    "block7",
    "'2:4'",
    "'5:4'",
    "unstructured",
    "dense",
    "''",
    "0",
    "0.5",
    "0.99",
    "1",
    "-0.1",
    "1e309",
    ".nan",
    "x",
    "[0.5]",
    "UNIFORM",
    "erk",
    "BOGUS",
    "RANDOM",
    "MAGNITUDE",
    "-1",
    "99999999999999999999",
    "['.*']",
    "['(']",
    "[]",
    "[null]",
    "['layer.*']",
    "['0_.*']",
    "true",
    "false",
    "yes",
    "{pattern: 'local:4', blockSize: 16}",
    "{pattern: bogus}",
    "{blockSize: 3}",
    "{deltaT: 10}",
    "{deltaT: -5}",
    "{growMode: BOGUS}",
    "{a: 1}",
    "[1]",
    "{schedule: {kind: x}}",
    "null",
    "~",
    "&a block8",
    "*a",
    "!!java.io.File /x",
    "{deltaT: 10, deltaT: 20}"
  };

  private static final String[] ODD_LINES = {
    "---",
    "...",
    "# comment",
    "%YAML 1.2",
    "\t- x",
    ":",
    "{",
    "]",
    "  nested: 1",
    "- item",
    "<<: *a",
    "? complex",
    "key: |\n  text"
  };

  @Provide
  Arbitrary<byte[]> documents() {
    Arbitrary<String> pair =
        Combinators.combine(Arbitraries.of(KEYS), Arbitraries.of(VALUES))
            .as((k, v) -> k + ": " + v);
    Arbitrary<String> line =
        Arbitraries.frequencyOf(Tuple.of(8, pair), Tuple.of(1, Arbitraries.of(ODD_LINES)));
    Arbitrary<String> yaml = line.list().ofMinSize(0).ofMaxSize(7).map(l -> String.join("\n", l));
    Arbitrary<String> json =
        Combinators.combine(Arbitraries.of(KEYS), Arbitraries.of(VALUES))
            .as((k, v) -> "\"" + k + "\": " + toJsonish(v))
            .list()
            .ofMaxSize(5)
            .map(l -> "{" + String.join(", ", l) + "}");
    Arbitrary<String> text = Arbitraries.oneOf(yaml, yaml, json);
    return Combinators.combine(text, Arbitraries.integers().between(0, 9), Arbitraries.integers())
        .as(
            (t, mode, pos) -> {
              byte[] b = t.getBytes(StandardCharsets.UTF_8);
              int at = b.length == 0 ? 0 : Math.floorMod(pos, b.length);
              return switch (mode) {
                case 0 -> insert(b, at, new byte[] {(byte) 0xFF});
                case 1 -> insert(b, 0, new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF});
                case 2 -> insert(b, at, new byte[] {0});
                case 3 -> Arrays.copyOf(b, at); // truncated
                default -> b;
              };
            });
  }

  private static String toJsonish(String yamlValue) {
    if (yamlValue.matches("-?[0-9.e]+|true|false|null|\\[.*\\]|\\{.*\\}")) {
      return yamlValue.replace('\'', '"');
    }
    return "\"" + yamlValue.replace("\"", "\\\"") + "\"";
  }

  private static byte[] insert(byte[] b, int at, byte[] x) {
    byte[] r = new byte[b.length + x.length];
    System.arraycopy(b, 0, r, 0, at);
    System.arraycopy(x, 0, r, at, x.length);
    System.arraycopy(b, at, r, at + x.length, b.length - at);
    return r;
  }

  @Property(tries = 300, edgeCases = EdgeCasesMode.NONE)
  void everyConfigDocumentIsAcceptedOrClearlyRejected(
      @ForAll("documents") byte[] doc, @ForAll boolean asJson) throws Exception {
    int n = counter.incrementAndGet();
    Path cfg = tmp.resolve("doc-" + n + (asJson ? ".json" : ".yaml"));
    Files.write(cfg, doc);
    Path out = tmp.resolve("doc-out-" + n + ".zip");
    String what = "config:\n" + new String(doc, StandardCharsets.UTF_8);
    Run r = cli("sparsify", "--config", cfg.toString(), mlp.toString(), out.toString());
    String line = checkOutcome(r, what);
    Statistics.collect("sparsify exit " + r.code());
    if (r.code() == 0) {
      assertTrue(r.out().contains("Wrote sparse"), what + "\n" + r.out());
      ModelSerializer.restoreMultiLayerNetwork(out.toFile(), true); // a valid output
    } else {
      assertFalse(Files.exists(out), what + ": nothing written on failure");
      if (r.code() == 1) {
        assertTrue(line.contains(cfg.getFileName().toString()), what + ": names the file: " + line);
      }
    }
  }

  // ---------------------------------------------------------------- argument vectors

  private static Arbitrary<List<String>> options(Object[][] table) {
    List<Arbitrary<List<String>>> parts = new ArrayList<>();
    for (Object[] row : table) {
      String name = (String) row[0];
      Arbitrary<String> value = Arbitraries.of((String[]) row[1]);
      Arbitrary<List<String>> opt = value.map(v -> v == null ? List.of(name) : List.of(name, v));
      // each option appears in about one vector in five, so that some vectors are fully valid
      parts.add(
          Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.just(List.of())), Tuple.of(1, opt)));
    }
    return Combinators.combine(parts)
        .as(
            l -> {
              List<String> all = new ArrayList<>();
              l.forEach(all::addAll);
              return all;
            });
  }

  private static final String[] INTS = {"-1", "0", "1", "2", "3", "8", "2147483648", "x", ""};
  private static final String[] DOUBLES = {"-1", "0", "0.5", "1", "5", "NaN", "Infinity", "1e-9"};

  @Provide
  Arbitrary<List<String>> argv() {
    String existing = "@RUN";
    String[] paths = {"@RUN", "@NEW", "@FILE", "@MISSING", "@TMP"};
    // --model and --steps are always given so that a valid vector trains for seconds, not hours
    Arbitrary<List<String>> train =
        Combinators.combine(
                Arbitraries.of("char-bigram", "char-bigram", "gpt-huge", "@MLP", "@FILE", ""),
                Arbitraries.of("1", "2", "1", "2", "-1", "0", "99999999999", "x"),
                Arbitraries.of("@NEW", "@NEW", "@NEW", "@RUN", "@FILE", "@MISSING", "@TMP"),
                options(
                    new Object[][] {
                      {"--batch-size", INTS},
                      {"--context-length", new String[] {"0", "4", "8", "100000", "x"}},
                      {"--lr", DOUBLES},
                      {"--eval-every", INTS},
                      {"--checkpoint-every", INTS},
                      {"--sparsity", new String[] {"@GOODCFG", "@MISSING", "turbo", "dense"}},
                      {"--resume", new String[] {existing, "@MISSING", "@TMP", "@FILE"}},
                      {"--from-summary", new String[] {"@RUN/summary.json", "@FILE", "@MISSING"}},
                      {"--seed", new String[] {"1", "-5", "x"}},
                    }))
            .as(
                (model, steps, out, l) -> {
                  // --out is always given: a default runs/ folder would land in the source tree
                  List<String> a = new ArrayList<>(List.of("train", "--corpus", "@CORPUS"));
                  a.addAll(List.of("--model", model, "--steps", steps, "--out", out));
                  a.addAll(List.of("--eval-windows", "2", "--plain-progress"));
                  a.addAll(l);
                  return a;
                });
    Arbitrary<List<String>> generate =
        Combinators.combine(
                Arbitraries.of("@RUN", "@RUN", "@RUN", "@NEW", "@FILE", "@MISSING", "@TMP"),
                Arbitraries.of("me", "me", "me", "", "\u0000", "zz\u20ac", "Call me "),
                options(
                    new Object[][] {
                      {"--temperature", DOUBLES},
                      {"--seed", new String[] {"1", "x"}},
                    }))
            .as(
                (dir, prompt, l) -> {
                  List<String> a = new ArrayList<>(List.of("generate", "--run-dir", dir));
                  a.addAll(List.of("--prompt", prompt, "--length", "5"));
                  a.addAll(l);
                  return a;
                });
    Arbitrary<List<String>> simulate =
        options(
                new Object[][] {
                  {"--model", new String[] {"gpt-mini", "gpt2-small", "@GOODCFG", "x.json", "x"}},
                  {"--seq", new String[] {"-1", "0", "16", "131073", "2000000000", "x"}},
                  {"--layers", new String[] {"0", "1", "1001"}},
                  {"--batch", new String[] {"0", "1", "16", "70000"}},
                  {"--global-batch", new String[] {"0", "3", "128", "1024"}},
                  {"--chips", new String[] {"-1", "0", "1", "8", "100000"}},
                  {"--pattern", new String[] {"block7", "block16", "2:4", "5:4", "dense", ""}},
                  {"--sparsity", DOUBLES},
                  {"--recompute", new String[] {"none", "full", "bogus"}},
                  {"--chip", new String[] {"sn30", "bogus"}},
                  {"--chip-file", new String[] {"@MISSING", "@GOODCFG"}},
                  {"--max-rows", new String[] {"-1", "0", "5"}},
                  {"--out", new String[] {"@NEW", "@FILE"}},
                })
            .map(l -> prepend("simulate", l));
    Arbitrary<List<String>> sparsify =
        Combinators.combine(
                options(
                    new Object[][] {
                      {"--config", new String[] {"@GOODCFG", "@MISSING", "@FILE", "@TMP"}},
                      {"--densify", new String[] {null}},
                      {"--seq-len", new String[] {"-1", "0", "16"}},
                      {"--report", new String[] {"@NEW", "@TMP"}},
                    }),
                Arbitraries.of("@MLP", "@FB", "@MISSING", "@TMP", "@RUN/model.zip"),
                Arbitraries.of("@NEW", "@TMP", "@MLP", "@RUN"))
            .as(
                (l, in, out) -> {
                  List<String> a = prepend("sparsify", l);
                  a.add(in);
                  a.add(out);
                  return a;
                });
    Arbitrary<List<String>> junk =
        Arbitraries.of(
                List.of("frobnicate"),
                List.of("train", "--no-such-option"),
                List.of("presets", "--x"),
                List.of("--debugg"))
            .map(ArrayList::new);
    return Arbitraries.oneOf(train, generate, simulate, simulate, sparsify, sparsify, junk);
  }

  private static List<String> prepend(String first, List<String> rest) {
    List<String> a = new ArrayList<>();
    a.add(first);
    a.addAll(rest);
    return a;
  }

  private static String[] resolve(List<String> argv, int n) throws IOException {
    Path file = tmp.resolve("plain-file.txt");
    if (!Files.exists(file)) {
      Files.writeString(file, "not a model, not a config\n");
    }
    List<String> out = new ArrayList<>();
    for (String a : argv) {
      out.add(
          a.replace("@RUN", run.toString())
              .replace("@NEW", tmp.resolve("new-" + n).toString())
              .replace("@FILE", file.toString())
              .replace("@MISSING", tmp.resolve("missing-" + n).toString())
              .replace("@TMP", tmp.toString())
              .replace("@CORPUS", corpus.toString())
              .replace("@MLP", mlp.toString())
              .replace("@FB", fb.toString())
              .replace("@GOODCFG", goodConfig.toString()));
    }
    return out.toArray(new String[0]);
  }

  @Property(tries = 250, edgeCases = EdgeCasesMode.NONE)
  void everyArgumentVectorEndsCleanly(@ForAll("argv") List<String> argv) throws Exception {
    int n = counter.incrementAndGet();
    String[] args = resolve(argv, n);
    Map<String, String> before = snapshot(run);
    Run r = cli(args);
    String what = String.join(" ", args);
    checkOutcome(r, what);
    Statistics.collect(args[0] + " exit " + r.code());
    if (r.code() == 0) {
      if (args[0].equals("train")) {
        // the run it wrote (or continued) is complete and its checkpoint reads back
        String dir =
            r.out()
                .lines()
                .filter(l -> l.startsWith("run directory: "))
                .findFirst()
                .orElseThrow()
                .substring("run directory: ".length());
        Checkpoint.read(Path.of(dir).resolve(Checkpoint.FILE_NAME));
      } else if (args[0].equals("simulate")) {
        assertTrue(r.out().contains("RESULT"), what + "\n" + r.out());
      } else if (args[0].equals("generate")) {
        assertFalse(r.out().isBlank(), what);
      }
    } else {
      assertEquals(before, snapshot(run), what + ": the existing run is byte-identical");
    }
  }
}
