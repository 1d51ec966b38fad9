package org.sparseflow.dataflow.hw;

import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A GPU cluster for the parallel training model: the GPU, GEMM efficiency figures, and the
 * interconnect (NVLink/NVSwitch inside a node, InfiniBand between nodes). Loaded from JSON like the
 * chip and GPU files; every value carries its source.
 */
public final class ClusterSpec {
  public static final List<String> BUILTIN = List.of("dgx-a100-80gb");

  static final Set<String> FIELDS =
      Set.of(
          "name",
          "description",
          "gpu",
          "gpusPerNode",
          "streamingMultiprocessors",
          "gemmTileM",
          "gemmTileN",
          "achievableMatmulTflops",
          "trainingGemmEfficiency",
          "intraNodeBusBandwidthGBs",
          "interNodeBandwidthGBs",
          "interNodeEfficiency",
          "intraNodeLatencyUs",
          "interNodeLatencyUs",
          "gradientBytes");

  private final String name;
  private final String description;
  private final GpuSpec gpu;
  private final int gpusPerNode;
  private final int sms;
  private final int tileM;
  private final int tileN;
  private final double achievableMatmulFlops;
  private final double trainingGemmEfficiency;
  private final double intraBusBw;
  private final double interBw;
  private final double interEff;
  private final double intraLatency;
  private final double interLatency;
  private final double gradientBytes;
  private final Map<String, String> sources;

  private ClusterSpec(SpecReader r) {
    r.rejectUnknown(FIELDS);
    this.name = r.text("name", true);
    this.description = r.text("description", false);
    String gpuId = r.text("gpu", true);
    try {
      this.gpu = GpuSpec.builtin(gpuId);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(r.origin() + ": field 'gpu': " + e.getMessage(), e);
    }
    this.gpusPerNode = (int) r.number("gpusPerNode", 1, 4096);
    this.sms = (int) r.number("streamingMultiprocessors", 1, 1e5);
    this.tileM = (int) r.number("gemmTileM", 1, 4096);
    this.tileN = (int) r.number("gemmTileN", 1, 4096);
    this.achievableMatmulFlops = r.number("achievableMatmulTflops", 1e-3, 1e6) * 1e12;
    if (achievableMatmulFlops > gpu.peakFlops()) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "%s: contradictory fields: achievableMatmulTflops (%.1f) exceeds the peak of gpu"
                  + " '%s' (%.1f TFLOPS)",
              r.origin(),
              achievableMatmulFlops / 1e12,
              gpuId,
              gpu.peakFlops() / 1e12));
    }
    this.trainingGemmEfficiency = r.number("trainingGemmEfficiency", 1e-3, 1.0);
    if (trainingGemmEfficiency * gpu.peakFlops() > achievableMatmulFlops * (1 + 1e-9)) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "%s: contradictory fields: trainingGemmEfficiency %.3f x peak %.1f TFLOPS exceeds"
                  + " achievableMatmulTflops %.1f (a training GEMM cannot beat the best measured"
                  + " GEMM)",
              r.origin(),
              trainingGemmEfficiency,
              gpu.peakFlops() / 1e12,
              achievableMatmulFlops / 1e12));
    }
    this.intraBusBw = r.number("intraNodeBusBandwidthGBs", 1e-3, 1e6) * 1e9;
    this.interBw = r.number("interNodeBandwidthGBs", 1e-3, 1e6) * 1e9;
    this.interEff = r.number("interNodeEfficiency", 1e-3, 1.0);
    this.intraLatency = r.number("intraNodeLatencyUs", 0, 1e6) * 1e-6;
    this.interLatency = r.number("interNodeLatencyUs", 0, 1e6) * 1e-6;
    this.gradientBytes = r.number("gradientBytes", 1, 8);
    this.sources = Collections.unmodifiableMap(r.sources());
  }

  private ClusterSpec(ClusterSpec o, double gemmEff, double linkFactor) {
    if (!(linkFactor > 0)) {
      throw new IllegalArgumentException("link scale factor must be > 0, got " + linkFactor);
    }
    this.name = o.name;
    this.description = o.description;
    this.gpu = o.gpu;
    this.gpusPerNode = o.gpusPerNode;
    this.sms = o.sms;
    this.tileM = o.tileM;
    this.tileN = o.tileN;
    this.achievableMatmulFlops = o.achievableMatmulFlops;
    this.trainingGemmEfficiency = gemmEff;
    this.intraBusBw = o.intraBusBw * linkFactor;
    this.interBw = o.interBw * linkFactor;
    this.interEff = o.interEff;
    this.intraLatency = o.intraLatency;
    this.interLatency = o.interLatency;
    this.gradientBytes = o.gradientBytes;
    this.sources = o.sources;
  }

  /** Built-in clusters: dgx-a100-80gb (alias a100, a100-80gb). */
  public static ClusterSpec builtin(String id) {
    String k = id == null ? "" : id.toLowerCase(Locale.ROOT);
    if (k.equals("a100") || k.equals("a100-80gb")) {
      k = "dgx-a100-80gb";
    }
    if (!BUILTIN.contains(k)) {
      throw new IllegalArgumentException(
          "GPU cluster '"
              + id
              + "' is unknown; allowed: "
              + BUILTIN
              + ", a100 (= dgx-a100-80gb) (or pass a cluster JSON file)");
    }
    return new ClusterSpec(SpecReader.ofResource("/org/sparseflow/dataflow/hw/" + k + ".json"));
  }

  public static ClusterSpec fromFile(Path file) {
    return new ClusterSpec(SpecReader.ofFile(file));
  }

  public static ClusterSpec fromJson(String origin, String json) {
    return new ClusterSpec(SpecReader.ofString(origin, json));
  }

  /** Copy with another training GEMM efficiency (calibration and sensitivity studies). */
  public ClusterSpec withTrainingGemmEfficiency(double eff) {
    if (!(eff > 0) || eff * gpu.peakFlops() > achievableMatmulFlops * (1 + 1e-9)) {
      throw new IllegalArgumentException(
          "trainingGemmEfficiency must be in (0, achievableMatmulTflops / peak], got " + eff);
    }
    return new ClusterSpec(this, eff, 1.0);
  }

  /** Copy with every link bandwidth multiplied by factor (what-if studies, property tests). */
  public ClusterSpec withLinkBandwidthScaled(double factor) {
    return new ClusterSpec(this, trainingGemmEfficiency, factor);
  }

  public String name() {
    return name;
  }

  public String description() {
    return description;
  }

  public GpuSpec gpu() {
    return gpu;
  }

  public int gpusPerNode() {
    return gpusPerNode;
  }

  public int streamingMultiprocessors() {
    return sms;
  }

  public int gemmTileM() {
    return tileM;
  }

  public int gemmTileN() {
    return tileN;
  }

  public double achievableMatmulFlops() {
    return achievableMatmulFlops;
  }

  public double trainingGemmEfficiency() {
    return trainingGemmEfficiency;
  }

  /** NCCL all-reduce bus bandwidth inside a node (bytes/s). */
  public double intraNodeBusBandwidth() {
    return intraBusBw;
  }

  /** Achieved inter-node bandwidth per GPU (line rate x efficiency, bytes/s). */
  public double interNodeBandwidth() {
    return interBw * interEff;
  }

  public double intraNodeLatencySeconds() {
    return intraLatency;
  }

  public double interNodeLatencySeconds() {
    return interLatency;
  }

  public double gradientBytes() {
    return gradientBytes;
  }

  public Map<String, String> sources() {
    return sources;
  }
}
