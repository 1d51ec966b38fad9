package org.sparseflow.bench.memory;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.sparseflow.bench.BenchmarksMain;

/**
 * Runs one case of a memory suite in a fresh JVM (same java, class path and JVM options, less those
 * a caller replaces), so that the case's memory peaks are its own.
 */
final class ChildJvm {
  private ChildJvm() {}

  /**
   * What the child printed on its last line starting with {@code prefix} (prefix removed; null if
   * none) and its exit code.
   */
  record Result(String payload, int exitCode) {}

  /**
   * Runs {@code suite args...} in a child JVM; the parent's JVM options matching {@code dropOption}
   * are left out and {@code jvmOptions} added. Standard error passes through.
   */
  static Result run(
      List<String> jvmOptions,
      Predicate<String> dropOption,
      String suite,
      List<String> args,
      String prefix)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!dropOption.test(a)) {
        cmd.add(a);
      }
    }
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(BenchmarksMain.class.getName());
    cmd.add(suite);
    cmd.addAll(args);
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String payload = null;
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.startsWith(prefix)) {
          payload = line.substring(prefix.length());
        }
      }
    }
    return new Result(payload, p.waitFor());
  }
}
