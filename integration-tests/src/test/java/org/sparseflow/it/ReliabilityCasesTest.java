package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.it.CliSupport.cli;
import static org.sparseflow.it.CliSupport.copyTree;
import static org.sparseflow.it.CliSupport.oneLineError;
import static org.sparseflow.it.CliSupport.snapshot;
import static org.sparseflow.it.CliSupport.tinyTrain;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.it.CliSupport.Run;
import org.sparseflow.train.Checkpoint;
import org.sparseflow.train.Experiments;
import org.sparseflow.train.TrainConfig;
import org.sparseflow.train.Trainer;

/** One test per numbered case of issue 20 ("validate, then mutate; strict inputs"). */
class ReliabilityCasesTest {

  private static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

  @TempDir static Path tmp;
  static Path corpus;
  static Path done; // a completed DL4J (char-bigram) run
  static Path sameDiffRun; // a completed SameDiff (gpt-tiny) run
  static Path mlp;

  @BeforeAll
  static void fixtures() throws Exception {
    corpus = CliSupport.tinyCorpus(tmp);
    done = tmp.resolve("done");
    Run r = cli(tinyTrain(corpus, "char-bigram", 4, done));
    assertEquals(0, r.code(), r.err());
    sameDiffRun = tmp.resolve("sd");
    r = cli(tinyTrain(corpus, "gpt-tiny", 2, sameDiffRun));
    assertEquals(0, r.code(), r.err());
    mlp = CliSupport.mlpZip(tmp);
  }

  /**
   * A cheap {@code train} command line (char-bigram, 1 step, tiny corpus, fresh --out) plus {@code
   * extra}, so that a case that wrongly succeeds costs a second, not hours.
   */
  static String[] train(String... extra) {
    List<String> a = new ArrayList<>(List.of("train", "--model", "char-bigram", "--steps", "1"));
    a.addAll(List.of("--batch-size", "2", "--context-length", "8", "--eval-windows", "2"));
    List<String> x = List.of(extra);
    if (!x.contains("--corpus")) {
      a.addAll(List.of("--corpus", corpus.toString()));
    }
    if (!x.contains("--out")) {
      a.addAll(List.of("--out", tmp.resolve("unwanted-" + System.nanoTime()).toString()));
    }
    a.addAll(x);
    return a.toArray(new String[0]);
  }

  private static Path copyOfDone(String name) throws Exception {
    Path p = tmp.resolve(name);
    copyTree(done, p);
    return p;
  }

  private static Path write(String name, String text) throws Exception {
    Path f = tmp.resolve(name);
    Files.writeString(f, text, StandardCharsets.UTF_8);
    return f;
  }

  private static Map<String, byte[]> entries(Path zip) throws Exception {
    Map<String, byte[]> m = new LinkedHashMap<>();
    try (ZipFile z = new ZipFile(zip.toFile())) {
      for (ZipEntry e : Collections.list(z.entries())) {
        m.put(e.getName(), z.getInputStream(e).readAllBytes());
      }
    }
    return m;
  }

  private static void rezip(Path zip, Map<String, byte[]> entries) throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    try (ZipOutputStream out = new ZipOutputStream(buf)) {
      for (Map.Entry<String, byte[]> e : entries.entrySet()) {
        out.putNextEntry(new ZipEntry(e.getKey()));
        out.write(e.getValue());
        out.closeEntry();
      }
    }
    Files.write(zip, buf.toByteArray());
  }

  private static void setStep(Path run, long step, boolean keepManifest) throws Exception {
    Path cp = run.resolve(Checkpoint.FILE_NAME);
    Map<String, byte[]> e = entries(cp);
    String state = new String(e.get("state.json"), StandardCharsets.UTF_8);
    e.put(
        "state.json",
        state
            .replaceFirst("\"step\" : \\d+", "\"step\" : " + step)
            .getBytes(StandardCharsets.UTF_8));
    if (!keepManifest) {
      e.remove("manifest.json");
    }
    rezip(cp, e);
  }

  // ---- 1. two runs started in the same second

  @Test
  void case01_runsStartedInTheSameSecondGetDifferentDirectories() throws Exception {
    // both runs get the same default name, as two 'train' runs started in one second do
    Path name = tmp.resolve("runs/20260101-120000-char-bigram");
    TrainConfig c = new TrainConfig();
    c.model = "char-bigram";
    c.corpus = corpus.toString();
    c.steps = 2;
    c.batchSize = 2;
    c.contextLength = 8;
    c.evalWindows = 2;
    TrainConfig c2 = c.copy();
    c2.seed = 2;
    Trainer a = Experiments.start(c, name, true).progress(QUIET, false, "");
    Trainer b = Experiments.start(c2, name, true).progress(QUIET, false, "");
    assertNotEquals(a.runDirectory().path(), b.runDirectory().path());
    a.run();
    b.run();
    assertEquals(42, Checkpoint.read(a.runDirectory().checkpoint()).state().config.seed);
    assertEquals(2, Checkpoint.read(b.runDirectory().checkpoint()).state().config.seed);
  }

  // ---- 2. resume damages the run directory before it fails

  @Test
  void case02_resumeWithABadStateLeavesTheRunByteIdentical() throws Exception {
    for (boolean manifest : new boolean[] {true, false}) {
      Path run = copyOfDone("neg-step-" + manifest);
      setStep(run, -7, manifest);
      Map<String, String> before = snapshot(run);
      Run r = cli("train", "--resume", run.toString(), "--steps", "52");
      oneLineError(
          r,
          1,
          "checkpoint " + run.resolve("checkpoint.zip"),
          manifest ? "entry state.json fails its checksum" : "'step' = -7");
      assertEquals(before, snapshot(run), "run directory unchanged");
    }
    Path complete = copyOfDone("complete");
    Map<String, String> before = snapshot(complete);
    oneLineError(cli("train", "--resume", complete.toString()), 1, "is complete (4/4 steps)");
    assertEquals(before, snapshot(complete));
  }

  // ---- 3. YAML: duplicate keys, extra documents, aliases

  @Test
  void case03_yamlDuplicatesDocumentsAndAliasesAreErrors() throws Exception {
    Path out = tmp.resolve("never-created");
    String[][] docs = {
      {"dup.yaml", "pattern: block8\nsparsity: 0.5\nsparsity: 0.9\n", "duplicate key 'sparsity'"},
      {"docs.yaml", "pattern: block8\n---\nsparsity: 0.9\n", "second document"},
      {"alias.yaml", "pattern: block8\nexclude: [*emb]\n", "alias '*emb'"},
      {"anchor.yaml", "pattern: &p block8\nsparsity: 0.5\n", "anchor '&p'"},
    };
    for (String[] d : docs) {
      Path f = write(d[0], d[1]);
      oneLineError(cli(train("--sparsity", f.toString(), "--out", out.toString())), 1, d[0], d[2]);
      oneLineError(
          cli("sparsify", "--config", f.toString(), mlp.toString(), out + ".zip"), 1, d[0], d[2]);
    }
    assertFalse(Files.exists(out));
    assertFalse(Files.exists(Path.of(out + ".zip")));
  }

  // ---- 4. sparsify validates mst:

  @Test
  void case04_sparsifyValidatesTheMstSection() throws Exception {
    Path delta = write("mst-delta.yaml", "pattern: block8\nsparsity: 0.5\nmst:\n  deltaT: -5\n");
    Path grow = write("mst-grow.yaml", "pattern: block8\nsparsity: 0.5\nmst:\n  growMode: BOGUS\n");
    Path out = tmp.resolve("mst-out.zip");
    oneLineError(
        cli("sparsify", "--config", delta.toString(), mlp.toString(), out.toString()),
        1,
        "mst-delta.yaml",
        "mst",
        "deltaT = -5",
        "allowed");
    oneLineError(
        cli("sparsify", "--config", grow.toString(), mlp.toString(), out.toString()),
        1,
        "mst-grow.yaml",
        "mst.growMode",
        "BOGUS",
        "GRADIENT");
    // train rejects the same file the same way
    oneLineError(cli(train("--sparsity", delta.toString())), 1, "mst-delta.yaml", "deltaT = -5");
    assertFalse(Files.exists(out));
  }

  // ---- 5. simulate

  @Test
  void case05_simulateRejectsWhatItUsedToIgnore() throws Exception {
    oneLineError(cli("simulate", "--pattern", "block7"), 1, "--pattern", "block7", "block16");
    Path sc = write("sparsity.json", "{\"pattern\": \"block16\", \"sparsity\": 0.9}");
    oneLineError(
        cli("simulate", "--model", sc.toString()), 1, "--model", "sparsity.json", "lacks [layers");
    oneLineError(
        cli("simulate", "--global-batch", "3", "--chips", "8"),
        1,
        "--global-batch: 3",
        "--chips 8",
        "multiple of 8");
    oneLineError(cli("simulate", "--seq", "2000000000"), 1, "--seq: 2000000000", "1..131072");
    Run ok = cli("simulate", "--model", "gpt-mini", "--global-batch", "128", "--chips", "8");
    assertEquals(0, ok.code(), ok.err());
    assertTrue(ok.out().contains("RESULT"), ok.out());
  }

  @Test
  void case05_modelFileValuesAreNotReplacedByOptionDefaults() throws Exception {
    Path typo = write("typo.json", "{\"layers\": 2, \"dModel\": 64}");
    oneLineError(
        cli("simulate", "--model", typo.toString()), 1, "unknown field 'dModel'", "dmodel");
    Path f =
        write(
            "mini.json",
            "{\"name\": \"mini\", \"layers\": 2, \"dmodel\": 64, \"heads\": 2, \"ffn\": 256,"
                + " \"seq\": 64, \"vocab\": 96, \"batch\": 8, \"globalBatch\": 64,"
                + " \"sparsity\": 0.5, \"pattern\": \"block16\"}");
    Run r = cli("simulate", "--model", f.toString(), "--max-rows", "0");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("sparsity 0.5") || r.out().contains("0.50"), r.out());
    assertFalse(r.out().contains("0.875"), "the CLI default did not replace the file's sparsity");
  }

  // ---- 6. sparsify where nothing matches

  @Test
  void case06_nothingMatchedExitsThreeAndWritesNothing() throws Exception {
    Path cfg = write("none.yaml", "pattern: block8\nsparsity: 0.5\nexclude: [\".*\"]\n");
    Path out = tmp.resolve("none-out.zip");
    Run r = cli("sparsify", "--config", cfg.toString(), mlp.toString(), out.toString());
    assertEquals(3, r.code(), r.err());
    assertTrue(r.err().strip().startsWith("warning: the sparsity config selected no layer"));
    assertEquals(1, r.err().strip().split("\\R").length);
    assertFalse(r.out().contains("Wrote sparse"), r.out());
    assertFalse(Files.exists(out));
  }

  // ---- 7. corrupt checkpoints in resume and generate

  @Test
  void case07_corruptCheckpointsNameTheFileInResumeAndGenerate() throws Exception {
    byte[] good = Files.readAllBytes(done.resolve("checkpoint.zip"));
    Path truncated = copyOfDone("truncated");
    Files.write(truncated.resolve("checkpoint.zip"), Arrays.copyOf(good, good.length / 2));
    Path flipped = copyOfDone("flipped");
    Map<String, byte[]> e = entries(flipped.resolve("checkpoint.zip"));
    byte[] model = e.get("model.bin");
    model[model.length / 2] ^= 0x40;
    rezip(flipped.resolve("checkpoint.zip"), e);
    Files.delete(flipped.resolve("model.zip")); // generate must use the checkpoint
    for (Path run : new Path[] {truncated, flipped}) {
      Map<String, String> before = snapshot(run);
      String cp = "checkpoint " + run.resolve("checkpoint.zip") + " is corrupt: ";
      oneLineError(cli("train", "--resume", run.toString(), "--steps", "9"), 1, cp);
      oneLineError(cli("generate", "--run-dir", run.toString()), 1, cp);
      assertEquals(before, snapshot(run));
    }
    oneLineError(
        cli("generate", "--run-dir", flipped.toString()), 1, "entry model.bin fails its checksum");
  }

  // ---- 8. truncated SameDiff input

  @Test
  void case08_truncatedSameDiffInputIsNamed() throws Exception {
    byte[] fb = Files.readAllBytes(sameDiffRun.resolve("model.zip"));
    Path cut = tmp.resolve("cut.fb");
    Files.write(cut, Arrays.copyOf(fb, fb.length / 3));
    Path cfg = write("ok8.yaml", "pattern: block8\nsparsity: 0.5\n");
    Run r = cli("sparsify", "--config", cfg.toString(), cut.toString(), tmp + "/o8.fb");
    oneLineError(r, 1, "<in> = " + cut, "not a readable SameDiff FlatBuffers file");
  }

  // ---- 9. output path that is a directory

  @Test
  void case09_outputDirectoryIsRejectedUpFront() throws Exception {
    Path cfg = write("ok9.yaml", "pattern: block8\nsparsity: 0.5\n");
    oneLineError(
        cli("sparsify", "--config", cfg.toString(), mlp.toString(), tmp.toString()),
        1,
        "<out> = " + tmp,
        "is a directory");
  }

  // ---- 10. errors inside mst:

  @Test
  void case10_mstErrorsListAllowedFieldsAndBlameMst() throws Exception {
    Path unknown = write("mst-a.yaml", "pattern: block8\nsparsity: 0.5\nmst:\n  a: 1\n");
    Path list = write("mst-list.yaml", "pattern: block8\nsparsity: 0.5\nmst:\n  - 1\n");
    for (String cmd : new String[] {"train", "sparsify"}) {
      for (Path f : new Path[] {unknown, list}) {
        String[] a =
            cmd.equals("train")
                ? train("--sparsity", f.toString())
                : new String[] {"sparsify", "-c", f.toString(), mlp.toString(), tmp + "/x.zip"};
        Run r = cli(a);
        if (f == unknown) {
          oneLineError(r, 1, "mst-a.yaml", "unknown field 'mst.a'", "deltaT", "growMode");
          continue;
        }
        oneLineError(r, 1, "mst-list.yaml", "'mst'", "a list", "allowed: a mapping");
        assertFalse(r.err().contains("'sparsity'"), r.err());
      }
    }
  }

  // ---- 11. non-UTF-8 config

  @Test
  void case11_nonUtf8ConfigNamesTheByteOffset() throws Exception {
    Path f = tmp.resolve("latin1.yaml");
    byte[] head = "pattern: block8\n# caf".getBytes(StandardCharsets.US_ASCII);
    byte[] b = Arrays.copyOf(head, head.length + 2);
    b[head.length] = (byte) 0xE9;
    b[head.length + 1] = '\n';
    Files.write(f, b);
    oneLineError(
        cli("sparsify", "--config", f.toString(), mlp.toString(), tmp + "/u.zip"),
        1,
        "latin1.yaml",
        "not valid UTF-8",
        "byte offset " + head.length);
    oneLineError(cli(train("--sparsity", f.toString())), 1, "byte offset " + head.length);
  }

  // ---- 12. a corpus with one distinct character

  @Test
  void case12_oneCharacterCorpus() throws Exception {
    Path f = write("aaaa.txt", "a".repeat(5000));
    oneLineError(
        cli(train("--corpus", f.toString(), "--out", tmp + "/one-char")),
        1,
        "--corpus",
        "only 1 distinct character",
        "at least 2 distinct characters");
    assertFalse(Files.exists(tmp.resolve("one-char")));
  }

  // ---- 13. generate --run-dir messages; model.zip alone

  @Test
  void case13_generateMessagesAndModelZipAlone() throws Exception {
    Path empty = Files.createDirectories(tmp.resolve("empty-run"));
    Run r = cli("generate", "--run-dir", empty.toString());
    oneLineError(r, 1, "--run-dir", "neither checkpoint.zip nor model.zip");
    assertFalse(r.err().contains("--resume"), r.err());
    oneLineError(
        cli("generate", "--run-dir", done.toString(), "--prompt", "Q"),
        1,
        "--prompt: character 'Q'",
        "not in the run's vocabulary");
    for (Path run : new Path[] {done, sameDiffRun}) {
      Path alone = tmp.resolve("alone-" + run.getFileName());
      copyTree(run, alone);
      Files.delete(alone.resolve("checkpoint.zip"));
      Run g = cli("generate", "--run-dir", alone.toString(), "--prompt", "me", "--length", "12");
      assertEquals(0, g.code(), g.err());
      assertTrue(g.out().startsWith("me"), g.out());
      assertEquals(14 + System.lineSeparator().length(), g.out().length(), g.out());
    }
  }

  // ---- 14. train output readable by sparsify

  @Test
  void case14_sparsifyReadsTrainsModelZip() throws Exception {
    Path cfg = write("ok14.yaml", "pattern: block16\nsparsity: 0.5\n");
    Path out = tmp.resolve("sparse-model.zip");
    Run r =
        cli(
            "sparsify",
            "--config",
            cfg.toString(),
            sameDiffRun.resolve("model.zip").toString(),
            out.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("Wrote sparse SameDiff graph"), r.out());
    assertTrue(SameDiff.load(out.toFile(), true).variables().size() > 0);
  }

  // ---- similar cases: the other files a command reads go through the same strict reader

  @Test
  void otherFilesAreReadStrictlyToo() throws Exception {
    Path summary = write("dup-summary.json", "{\"config\": {\"steps\": 1}, \"config\": {}}");
    oneLineError(
        cli("train", "--from-summary", summary.toString(), "--out", tmp + "/from-summary"),
        1,
        "dup-summary.json",
        "duplicate key 'config'");
    Path chip = tmp.resolve("chip.json");
    Files.write(chip, new byte[] {'{', (byte) 0xC3, '}'});
    oneLineError(
        cli("simulate", "--chip-file", chip.toString()),
        1,
        "--chip-file",
        "chip.json",
        "not valid UTF-8",
        "byte offset 1");
  }
}
