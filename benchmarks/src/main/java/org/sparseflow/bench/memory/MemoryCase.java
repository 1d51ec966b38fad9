package org.sparseflow.bench.memory;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.bytedeco.javacpp.Pointer;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.util.ModelSerializer;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;

/**
 * One case of the memory suite, in this JVM: builds the GPT (dense, or with block-sparse MLP and
 * attention-projection weights in masked or packed storage), trains a few Adam steps and measures
 * its memory.
 *
 * <ul>
 *   <li>param / grad / optimizer bytes: element counts times element size of the parameters, of
 *       DL4J's flat gradient (it covers every param, masks included) and of the updater state (DL4J
 *       allocates {@code updater.stateSize(n)} per param block: Adam 2n, the masks' Sgd(0) none);
 *       for the layers that the sparse variants make sparse ({@code scope=sparse}: MLP and
 *       attention layers) and the whole model ({@code scope=model});
 *   <li>min_step_ms: the shortest wall time of the training steps (the first includes warm-up; a
 *       rough speed check, not a benchmark);
 *   <li>checkpoint bytes: the size of the model file ModelSerializer writes with the updater;
 *   <li>peak off-heap: a thread samples the process RSS ({@link Pointer#physicalBytes()}, read from
 *       /proc/self/statm) every millisecond from before the model is built until after the
 *       checkpoint; peak_rss_mb is its largest value, peak_offheap_mb the largest RSS less the
 *       committed Java heap ({@code Runtime.totalMemory()}) at the same moment: ND4J's native
 *       buffers and workspaces plus the JVM's own non-heap memory (an estimate: ND4J 1.0.0-M2.1's
 *       CPU backend allocates its buffers in libnd4j, which neither JavaCPP's {@code
 *       Pointer.totalBytes()} nor ND4J's {@code AllocationsTracker} count).
 * </ul>
 */
final class MemoryCase {
  private MemoryCase() {}

  /** Samples the RSS and the RSS less the committed Java heap; keeps the peaks. */
  static final class PeakSampler implements AutoCloseable {
    private volatile boolean running = true;
    private long peakTracked;
    private long peakRss;
    private final Thread thread;

    PeakSampler() {
      thread =
          new Thread(
              () -> {
                while (running) {
                  sample();
                  try {
                    Thread.sleep(1);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              },
              "memory-peak-sampler");
      thread.setDaemon(true);
      sample();
      thread.start();
    }

    private synchronized void sample() {
      long rss = Pointer.physicalBytes();
      peakTracked = Math.max(peakTracked, rss - Runtime.getRuntime().totalMemory());
      peakRss = Math.max(peakRss, rss);
    }

    synchronized long peakTracked() {
      return peakTracked;
    }

    synchronized long peakRss() {
      return peakRss;
    }

    /** Stops sampling and takes a last sample; later calls do nothing. */
    void stop() {
      if (!running) {
        return;
      }
      running = false;
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      sample();
    }

    @Override
    public void close() {
      stop();
    }
  }

  /**
   * The model and batch: a named GPT ({@code dModel} 0) or a custom one of {@code layers} blocks of
   * width {@code dModel} with {@code heads} heads.
   */
  record Size(String model, int dModel, int layers, int heads, int context, int batch) {
    GptConfig config(int vocab, long seed) {
      return dModel > 0
          ? new GptConfig(vocab, layers, dModel, heads, context, seed)
          : GptConfig.named(model, vocab, context, seed);
    }
  }

  /**
   * A case's GPT before {@code init()}: the model config, its graph configuration (with Adam, made
   * sparse unless {@code storage} is dense) and the bundled corpus as tokens.
   */
  record Setup(GptConfig gpt, ComputationGraphConfiguration conf, int[] tokens) {
    /**
     * Builds the configuration of {@code size}; {@code storage} dense, masked or packed with {@code
     * pattern} at {@code density}.
     */
    static Setup of(Size size, String storage, String pattern, double density, long seed) {
      Corpus corpus = Corpus.bundled();
      CharTokenizer tok = CharTokenizer.fit(corpus.text());
      int[] tokens = tok.encode(corpus.text());
      GptConfig c = size.config(tok.vocabSize(), seed);
      ComputationGraphConfiguration conf = ComputationGraphGpt.configuration(c, new Adam(1e-3));
      if (!storage.equals("dense")) {
        SparseGptConfig.sparsify(conf, pattern, density, storage, seed);
      }
      return new Setup(c, conf, tokens);
    }
  }

  /** {@link #run(Size, String, String, double, int, long)} for a named model. */
  static Map<String, String> run(
      String model,
      String storage,
      String pattern,
      double density,
      int steps,
      int context,
      int batch,
      long seed)
      throws Exception {
    return run(new Size(model, 0, 0, 0, context, batch), storage, pattern, density, steps, seed);
  }

  /**
   * Runs one case and returns its figures (keys: storage, pattern, density, sparse_*, model_*,
   * checkpoint_bytes, peak_offheap_mb, peak_rss_mb).
   *
   * @param storage dense, masked, packed or mst-packed (MST on packed storage, the arrays following
   *     its kept blocks and the graph rebuilt when a phase wants other block slots)
   */
  static Map<String, String> run(
      Size size, String storage, String pattern, double density, int steps, long seed)
      throws Exception {
    int context = size.context();
    int batch = size.batch();
    Map<String, String> out = new LinkedHashMap<>();
    out.put("storage", storage);
    out.put("pattern", storage.equals("dense") ? "dense" : pattern);
    out.put("density", String.valueOf(storage.equals("dense") ? 1.0 : density));
    ComputationGraph net;
    try (PeakSampler peak = new PeakSampler()) {
      boolean mst = storage.equals(SameDiffMemoryCase.MST_PACKED);
      MstConfig mstConfig = mst ? SameDiffMemoryCase.mstConfig(pattern, density, steps) : null;
      // MST starts sparse: packed at its first level, the layouts are its first masks
      double start = mst ? 1.0 - mstConfig.getSchedule().getInitialSparsity() : density;
      Setup setup = Setup.of(size, mst ? "packed" : storage, pattern, start, seed);
      GptConfig c = setup.gpt();
      net = new ComputationGraph(setup.conf());
      net.init();
      MstListener listener = null;
      if (mst) {
        mstConfig.setInclude(
            SparseParams.findPacked(net).stream().map(PackedSparseParam::name).toList());
        listener = new MstListener(mstConfig);
        net.setListeners(listener);
      }
      BatchSampler sampler = new BatchSampler(setup.tokens(), batch, context, seed);
      ComputationGraph[] trained = {net};
      MstListener driver = listener;
      out.put(
          "min_step_ms",
          minStepMs(
              steps,
              s -> ComputationGraphGpt.batch(sampler.windows(s), c.vocab()),
              (MultiDataSet ds) -> {
                trained[0].fit(ds);
                if (driver != null) { // a new phase's block slots: a rebuilt graph
                  trained[0] = (ComputationGraph) driver.nextModel(trained[0]);
                }
              }));
      net = trained[0];
      ComputationGraph saved = net;
      out.put(
          "checkpoint_bytes",
          String.valueOf(savedBytes(".zip", f -> ModelSerializer.writeModel(saved, f, true))));
      peak.stop();
      out.put("peak_offheap_mb", mb(peak.peakTracked()));
      out.put("peak_rss_mb", mb(peak.peakRss()));
    }
    List<String> sparse = SparseGptConfig.sparseLayers(net.getConfiguration());
    long[] m = new long[3];
    for (String name : sparse) {
      Layer l = net.getLayer(name);
      for (Map.Entry<String, INDArray> e : l.paramTable().entrySet()) {
        long n = e.getValue().length();
        long bytes = e.getValue().data().getElementSize();
        m[0] += n * bytes;
        m[1] += n * bytes;
        m[2] += l.conf().getLayer().getUpdaterByParam(e.getKey()).stateSize(n) * bytes;
      }
    }
    out.put("sparse_param_bytes", String.valueOf(m[0]));
    out.put("sparse_grad_bytes", String.valueOf(m[1]));
    out.put("sparse_optimizer_bytes", String.valueOf(m[2]));
    long bytes = net.params().data().getElementSize();
    out.put("model_param_bytes", String.valueOf(net.numParams() * bytes));
    out.put("model_grad_bytes", String.valueOf(net.getGradientsViewArray().length() * bytes));
    out.put(
        "model_optimizer_bytes",
        String.valueOf(net.getUpdater().getStateViewArray().length() * bytes));
    return out;
  }

  /** The fastest of {@code steps} training steps (batch building not timed), in whole ms. */
  static <B> String minStepMs(int steps, IntFunction<B> batch, Consumer<B> fit) {
    double minMs = Double.MAX_VALUE;
    for (int s = 0; s < steps; s++) {
      B b = batch.apply(s);
      long t0 = System.nanoTime();
      fit.accept(b);
      minMs = Math.min(minMs, (System.nanoTime() - t0) / 1e6);
    }
    return String.format(Locale.ROOT, "%.0f", minMs);
  }

  /** Writes a model file with {@code save}. */
  interface Saver {
    void save(File file) throws IOException;
  }

  /** The size of the file {@code save} writes (a temporary, deleted afterwards). */
  static long savedBytes(String suffix, Saver save) throws IOException {
    File f = Files.createTempFile("sparseflow-memory", suffix).toFile();
    try {
      save.save(f);
      return f.length();
    } finally {
      Files.deleteIfExists(f.toPath());
    }
  }

  private static String mb(long bytes) {
    return String.format(Locale.ROOT, "%.1f", bytes / (1024.0 * 1024.0));
  }
}
