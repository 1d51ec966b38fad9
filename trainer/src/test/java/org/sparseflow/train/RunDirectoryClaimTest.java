package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 20 item 1: two runs started in the same second never share a run directory. */
class RunDirectoryClaimTest {

  @TempDir Path tmp;

  @Test
  void takenDefaultNameGetsASuffix() throws Exception {
    Path p = tmp.resolve("runs/20260101-120000-gpt-tiny");
    assertEquals(p, RunDirectory.create(p, true).path());
    assertEquals(
        tmp.resolve("runs/20260101-120000-gpt-tiny-2"), RunDirectory.create(p, true).path());
    assertEquals(
        tmp.resolve("runs/20260101-120000-gpt-tiny-3"), RunDirectory.create(p, true).path());
  }

  @Test
  void explicitOutIsNeverShared() throws Exception {
    Path p = tmp.resolve("out");
    RunDirectory.create(p, false);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> RunDirectory.create(p, false));
    assertTrue(e.getMessage().startsWith("--out: " + p), e.getMessage());
  }

  @Test
  void anEmptyExistingDirectoryCanBeClaimedOnce() throws Exception {
    Path p = Files.createDirectories(tmp.resolve("empty"));
    assertEquals(p, RunDirectory.create(p, false).path());
    assertThrows(IllegalArgumentException.class, () -> RunDirectory.create(p, false));
  }

  @Test
  void racingClaimsAllGetDistinctDirectories() throws Exception {
    int n = 16;
    for (boolean suffix : new boolean[] {true, false}) {
      Path p = tmp.resolve("race-" + suffix);
      CountDownLatch go = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(n);
      List<Future<Path>> got = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        got.add(
            pool.submit(
                () -> {
                  go.await();
                  try {
                    return RunDirectory.create(p, suffix).path();
                  } catch (IllegalArgumentException taken) {
                    return null;
                  }
                }));
      }
      go.countDown();
      Set<Path> distinct = new HashSet<>();
      int claimed = 0;
      for (Future<Path> f : got) {
        Path d = f.get();
        if (d != null) {
          claimed++;
          assertTrue(distinct.add(d), "claimed twice: " + d);
        }
      }
      pool.shutdown();
      // with suffixes everyone gets a directory; without, exactly one does
      assertEquals(suffix ? n : 1, claimed);
    }
  }
}
