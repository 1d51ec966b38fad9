package org.sparseflow.bench.ops;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * PyTorch CPU dense peer: runs {@code torch_peer.py} (a resource of this package) in a {@code
 * python3} that has torch (the one on the PATH, else {@code /usr/bin/python3}, or {@code
 * -Dsparseflow.python=...}) with the same thread count and the environment of this JVM, so the same
 * {@code OPENBLAS_*} / {@code OMP_*} settings. It runs as a separate process after the Java cases,
 * not interleaved with them. Without torch, {@link #available()} is false and {@link #note()} says
 * why.
 */
final class TorchPeer {

  private final String python;
  private final String note;

  private TorchPeer(String python, String note) {
    this.python = python;
    this.note = note;
  }

  /** Finds a python3 with torch (a few seconds at most). */
  static TorchPeer find() {
    List<String> candidates = new ArrayList<>();
    String configured = System.getProperty("sparseflow.python");
    if (configured != null) {
      candidates.add(configured);
    } else {
      candidates.add("python3");
      candidates.add("/usr/bin/python3");
    }
    for (String py : candidates) {
      try {
        Process p =
            new ProcessBuilder(py, "-c", "import torch; print(torch.__version__)")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0) {
          return new TorchPeer(py, "torch " + out + " via " + py);
        }
      } catch (IOException e) {
        // try the next candidate
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return new TorchPeer(
        null,
        "PyTorch peer not run: no python3 with torch found (tried "
            + String.join(", ", candidates)
            + "; on Debian: apt-get install python3-torch libopenblas0-pthread)");
  }

  boolean available() {
    return python != null;
  }

  String note() {
    return note;
  }

  /**
   * Runs the cases ({@code name:dim:dim:dim}) and returns median wall milliseconds per case spec,
   * and median process CPU milliseconds under the key {@code spec + "#cpu"}; a case that failed is
   * missing.
   */
  Map<String, Double> run(int threads, int warmup, int reps, List<String> cases) {
    Map<String, Double> out = new HashMap<>();
    if (!available() || cases.isEmpty()) {
      return out;
    }
    try {
      Path script = Files.createTempFile("sparseflow-torch-peer", ".py");
      try (InputStream in = TorchPeer.class.getResourceAsStream("torch_peer.py")) {
        if (in == null) {
          throw new IOException("resource torch_peer.py missing");
        }
        Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
      }
      List<String> cmd = new ArrayList<>();
      cmd.add(python);
      cmd.add(script.toString());
      cmd.add(Integer.toString(threads));
      cmd.add(Integer.toString(warmup));
      cmd.add(Integer.toString(reps));
      cmd.addAll(cases);
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      try (BufferedReader r =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        int i = 0;
        while ((line = r.readLine()) != null) {
          System.out.println("# " + line);
          if (line.startsWith("TORCH ") && i < cases.size()) {
            for (String f : line.split(" ")) {
              if (f.startsWith("median_ms=")) {
                out.put(cases.get(i), Double.parseDouble(f.substring("median_ms=".length())));
              }
              if (f.startsWith("cpu_ms=")) {
                out.put(cases.get(i) + "#cpu", Double.parseDouble(f.substring("cpu_ms=".length())));
              }
            }
            i++;
          }
        }
      }
      p.waitFor();
      Files.deleteIfExists(script);
    } catch (IOException e) {
      System.out.println("# PyTorch peer failed: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return out;
  }
}
