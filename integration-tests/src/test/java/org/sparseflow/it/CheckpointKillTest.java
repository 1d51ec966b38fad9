package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.cli.SparseFlowCli;
import org.sparseflow.train.Checkpoint;
import org.sparseflow.train.Experiments;
import org.sparseflow.train.Trainer;

/**
 * Fault injection (issue 20): a training JVM (a child {@code java} process running {@code
 * sparseflow train} with a checkpoint after every step) is killed with SIGKILL at random points
 * while it writes checkpoints; every kill must leave a run that reads back and resumes to
 * completion. Bounded: {@code -Dsparseflow.kills=N} kills (default 3, about 10 s each on a loaded
 * 2-core host), alternating "the moment a checkpoint temp file appears" and "a random delay".
 */
class CheckpointKillTest {

  private static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

  @TempDir Path tmp;

  @Test
  void everyKillLeavesAResumableRun() throws Exception {
    Path corpus = CliSupport.tinyCorpus(tmp);
    int kills = Integer.getInteger("sparseflow.kills", 3);
    long seed = Long.getLong("sparseflow.kills.seed", System.nanoTime());
    SplittableRandom rnd = new SplittableRandom(seed);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    for (int k = 0; k < kills; k++) {
      Path run = tmp.resolve("run-" + k);
      List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g", "-cp"));
      cmd.add(System.getProperty("java.class.path"));
      cmd.add(SparseFlowCli.class.getName());
      List<String> train =
          new ArrayList<>(List.of(CliSupport.tinyTrain(corpus, "char-bigram", 1_000_000, run)));
      train.set(train.indexOf("--eval-every") + 1, "1000000"); // no evaluation: mostly checkpoints
      cmd.addAll(train);
      Path log = tmp.resolve("child-" + k + ".log");
      Process p =
          new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      try {
        Path cp = run.resolve(Checkpoint.FILE_NAME);
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!Files.exists(cp)) {
          if (!p.isAlive()) {
            throw new AssertionError(
                "child exited with "
                    + p.exitValue()
                    + " before its first checkpoint:\n"
                    + tail(log));
          }
          assertTrue(System.nanoTime() < deadline, "no checkpoint within 120 s:\n" + tail(log));
          Thread.sleep(20);
        }
        String how;
        if (k % 2 == 0) {
          how = "while a checkpoint temp file existed";
          long until = System.nanoTime() + 5_000_000_000L;
          while (!tempFileIn(run) && System.nanoTime() < until) {
            Thread.onSpinWait();
          }
        } else {
          int ms = rnd.nextInt(0, 400);
          how = "after " + ms + " ms";
          Thread.sleep(ms);
        }
        p.destroyForcibly();
        p.waitFor();
        String where = "kill " + k + " (" + how + ", seed " + seed + ")";
        Checkpoint c = Checkpoint.read(cp);
        long step = c.state().step;
        assertTrue(step >= 0, where);
        Trainer t = Experiments.resume(run, (int) step + 1).progress(QUIET, false, "");
        Trainer.Result r = t.run();
        assertEquals(Trainer.Status.COMPLETED, r.status(), where);
        assertEquals(step + 1, Checkpoint.read(cp).state().step, where);
      } finally {
        p.destroyForcibly();
      }
    }
  }

  private static boolean tempFileIn(Path run) {
    try (Stream<Path> s = Files.list(run)) {
      return s.anyMatch(f -> f.getFileName().toString().startsWith(".checkpoint.zip."));
    } catch (Exception e) {
      return false;
    }
  }

  private static String tail(Path log) {
    try {
      String s = Files.readString(log);
      return s.substring(Math.max(0, s.length() - 2000));
    } catch (Exception e) {
      return "(no log)";
    }
  }
}
