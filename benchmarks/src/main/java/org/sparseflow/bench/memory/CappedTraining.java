package org.sparseflow.bench.memory;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.util.CrashReportingUtil;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.core.type.TypeReference;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;

/**
 * Trains the ComputationGraph GPT a few Adam steps in this JVM and reports how far it got: the
 * phase it was in when memory ran out (build, init, step N) or {@code status=trained}, with the
 * peak resident memory. An {@link OutOfMemoryError} anywhere in the cause chain (JavaCPP's cap on
 * native allocations, or the Java heap) ends the run as {@code status=out_of_memory}.
 */
final class CappedTraining {
  private CappedTraining() {}

  /** What one capped run reports, as ordered key/value pairs. */
  static final class Outcome {
    private static final ObjectMapper JSON = new ObjectMapper();
    final Map<String, String> values = new LinkedHashMap<>();

    /** One line of JSON (the message may contain spaces). */
    String format() {
      try {
        return JSON.writeValueAsString(values);
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("cannot format " + values, e);
      }
    }

    static Map<String, String> parse(String json) {
      try {
        return JSON.readValue(json, new TypeReference<LinkedHashMap<String, String>>() {});
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("cannot parse the child's report " + json, e);
      }
    }
  }

  /**
   * Builds the GPT ({@code storage} dense or packed with {@code pattern} at {@code density}) and
   * trains {@code steps} steps; never throws for lack of memory.
   */
  static Outcome run(
      MemoryCase.Size size, String storage, String pattern, double density, int steps, long seed) {
    Outcome o = new Outcome();
    // DL4J writes a memory report on out-of-memory; keep it out of the working directory
    File dumps = new File(System.getProperty("java.io.tmpdir"), "sparseflow-memory-cap");
    CrashReportingUtil.crashDumpOutputDirectory(dumps);
    String phase = "build";
    int done = 0;
    double minMs = Double.NaN;
    try (MemoryCase.PeakSampler peak = new MemoryCase.PeakSampler()) {
      try {
        MemoryCase.Setup setup = MemoryCase.Setup.of(size, storage, pattern, density, seed);
        GptConfig c = setup.gpt();
        phase = "init";
        ComputationGraph net = new ComputationGraph(setup.conf());
        net.init();
        o.values.put("param_bytes", String.valueOf(net.params().length() * 4));
        BatchSampler sampler = new BatchSampler(setup.tokens(), size.batch(), size.context(), seed);
        for (int s = 0; s < steps; s++) {
          phase = "step " + (s + 1);
          MultiDataSet ds = ComputationGraphGpt.batch(sampler.windows(s), c.vocab());
          long t0 = System.nanoTime();
          net.fit(ds);
          double ms = (System.nanoTime() - t0) / 1e6;
          minMs = Double.isNaN(minMs) ? ms : Math.min(minMs, ms);
          done++;
          System.err.printf(Locale.ROOT, "memory-cap: %s step %d: %.0f ms%n", storage, s + 1, ms);
        }
        o.values.put("status", "trained");
        o.values.put("phase", "done");
      } catch (Throwable t) { // OutOfMemoryError or an exception wrapping one
        OutOfMemoryError oom = oomIn(t);
        if (oom == null) {
          throw t;
        }
        o.values.put("status", "out_of_memory");
        o.values.put("phase", phase.replace(' ', '_'));
        o.values.put("message", String.valueOf(oom.getMessage()));
        o.values.put("dl4j_report_dir", dumps.getAbsolutePath());
      }
      peak.stop();
      o.values.put("steps_done", String.valueOf(done));
      o.values.put("peak_rss_mb", String.format(Locale.ROOT, "%.0f", peak.peakRss() / 1048576.0));
      o.values.put(
          "min_step_ms", Double.isNaN(minMs) ? "n/a" : String.format(Locale.ROOT, "%.0f", minMs));
    }
    return o;
  }

  /** The first OutOfMemoryError in the cause chain of {@code t}, or null. */
  static OutOfMemoryError oomIn(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof OutOfMemoryError e) {
        return e;
      }
    }
    return null;
  }
}
