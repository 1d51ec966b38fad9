package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.cli.SparseFlowCli;

/**
 * Every user error of the command line prints exactly one clear line on stderr (no stack trace
 * unless --debug) and exits non-zero: 1 for errors in values/files, 2 for command-line syntax.
 */
class CliErrorsTest {

  @TempDir static Path tmp;

  record Run(int code, String out, String err) {}

  static Run cli(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = SparseFlowCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(code, out.toString(), err.toString());
  }

  /** Asserts exit code and one error line containing {@code fragment}. */
  static void oneLineError(Run r, int code, String fragment) {
    assertEquals(code, r.code(), "exit code; stderr: " + r.err());
    String[] lines = r.err().strip().split("\\R");
    assertEquals(1, lines.length, "exactly one line on stderr, got:\n" + r.err());
    assertTrue(lines[0].startsWith("error: "), lines[0]);
    assertTrue(lines[0].contains(fragment), "'" + fragment + "' in: " + lines[0]);
    assertFalse(r.err().contains("\tat "), "no stack trace without --debug");
  }

  static Path tinyCorpus;
  static Path badYaml;
  static Path nonEmptyDir;

  @BeforeAll
  static void files() throws Exception {
    tinyCorpus = tmp.resolve("tiny.txt");
    Files.writeString(tinyCorpus, "Call me Ishmael. Some years ago.", StandardCharsets.UTF_8);
    badYaml = tmp.resolve("bad.yaml");
    Files.writeString(badYaml, "schedule: [1, 2\n  deltaT: : :\n", StandardCharsets.UTF_8);
    nonEmptyDir = tmp.resolve("used");
    Files.createDirectories(nonEmptyDir);
    Files.writeString(nonEmptyDir.resolve("something.txt"), "x");
  }

  @Test
  void missingCorpusFile() {
    oneLineError(
        cli("train", "--corpus", tmp.resolve("absent.txt").toString()), 1, "does not exist");
  }

  @Test
  void corpusNotUtf8() throws Exception {
    Path bin = tmp.resolve("binary.txt");
    Files.write(bin, new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1});
    oneLineError(cli("train", "--corpus", bin.toString()), 1, "not valid UTF-8");
  }

  @Test
  void corpusTooSmallForContext() {
    oneLineError(
        cli("train", "--corpus", tinyCorpus.toString()), 1, "too small for context length 128");
  }

  @Test
  void unknownPreset() {
    oneLineError(cli("train", "--sparsity", "turbo"), 1, "unknown preset 'turbo'");
  }

  @Test
  void missingSparsityFile() {
    oneLineError(
        cli("train", "--sparsity", tmp.resolve("nope.yaml").toString()), 1, "does not exist");
  }

  @Test
  void badYaml() {
    oneLineError(cli("train", "--sparsity", badYaml.toString()), 1, "bad.yaml");
  }

  @Test
  void unknownModel() {
    oneLineError(cli("train", "--model", "gpt-huge"), 1, "gpt-huge");
  }

  @Test
  void outOfRangeNumbers() {
    oneLineError(cli("train", "--steps", "0"), 1, "--steps: 0");
    oneLineError(cli("train", "--lr", "5"), 1, "--lr: 5.0");
    oneLineError(cli("train", "--batch-size", "-3"), 1, "--batch-size: -3");
    oneLineError(cli("train", "--context-length", "100000"), 1, "--context-length");
    oneLineError(cli("compare", "--steps", "-5"), 1, "--steps: -5");
    oneLineError(cli("train", "--density", "0", "--sparsity", "mst"), 1, "--density: 0.0");
    oneLineError(cli("train", "--density", "0.1"), 1, "--density 0.1: only MST sparsity");
    oneLineError(cli("train", "--test-fraction", "0.2"), 1, "--test-fraction: 0.2 is outside");
    oneLineError(cli("train", "--test-fraction", "-0.01"), 1, "--test-fraction: -0.01");
    oneLineError(
        cli("generate", "--run-dir", tmp.toString(), "--temperature", "0"), 1, "--temperature");
    oneLineError(cli("generate", "--run-dir", tmp.toString(), "--length", "0"), 1, "--length");
  }

  @Test
  void syntaxErrorsExitTwo() {
    oneLineError(cli("train", "--steps", "many"), 2, "--steps");
    oneLineError(cli("train", "--no-such-option"), 2, "--no-such-option");
    oneLineError(cli("frobnicate"), 2, "frobnicate");
    oneLineError(cli("generate"), 2, "--run-dir");
  }

  @Test
  void resumeAndRunDirErrors() {
    oneLineError(
        cli("train", "--resume", tmp.resolve("absent-run").toString()), 1, "not a directory");
    oneLineError(cli("train", "--resume", tmp.toString()), 1, "nothing to resume");
    oneLineError(
        cli("train", "--out", nonEmptyDir.toString(), "--model", "char-bigram", "--steps", "1"),
        1,
        "not empty");
    oneLineError(
        cli("generate", "--run-dir", tmp.resolve("absent-run").toString()), 1, "not a directory");
    oneLineError(
        cli("train", "--from-summary", tmp.resolve("summary.json").toString()),
        1,
        "does not exist");
  }

  @Test
  void debugShowsTheStackTrace() {
    Run r = cli("train", "--steps", "0", "--debug");
    assertEquals(1, r.code());
    assertTrue(r.err().contains("\tat org.sparseflow"), r.err());
    assertTrue(r.err().contains("error: --steps: 0"), r.err());
  }

  @Test
  void helpEverywhere() {
    for (String cmd :
        new String[] {"train", "compare", "simulate", "sparsify", "generate", "presets"}) {
      Run r = cli(cmd, "--help");
      assertEquals(0, r.code(), cmd + ": " + r.err());
      assertTrue(r.out().contains("Usage: sparseflow " + cmd), cmd + ":\n" + r.out());
    }
    Run top = cli("--help");
    assertEquals(0, top.code());
    for (String cmd :
        new String[] {"train", "compare", "simulate", "sparsify", "generate", "presets"}) {
      assertTrue(top.out().contains(cmd), top.out());
    }
  }

  @Test
  void presetsListsShippedPresetsAndHardware() {
    Run r = cli("presets");
    assertEquals(0, r.code(), r.err());
    for (String p :
        new String[] {
          "mst", "rigl", "set", "gmp", "static", "dense", "gpt-mini", "sn30", "a100-80gb"
        }) {
      assertTrue(r.out().contains(p), p + " in:\n" + r.out());
    }
  }
}
