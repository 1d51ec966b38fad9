package org.sparseflow.dataflow.hw;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A GPU for the kernel-by-kernel roofline baseline: peak dense tensor-core rate, HBM bandwidth,
 * launch overhead, an efficiency curve for matmuls (fraction of peak by FLOPs per GEMM,
 * interpolated in log space) and entries for sparse patterns. Every value carries its source.
 */
public final class GpuSpec {
  static final Set<String> FIELDS =
      Set.of(
          "name",
          "description",
          "peakTflops",
          "vectorTflops",
          "memBandwidthGBs",
          "memCapacityGB",
          "launchOverheadUs",
          "memoryEfficiency",
          "matmulEfficiency",
          "unstructuredRunsDense",
          "unstructuredSparseEfficiency",
          "blockSparseEfficiency",
          "nm24Speedup");

  private final String name;
  private final String description;
  private final double peakTflops;
  private final double vectorTflops;
  private final double memBandwidth;
  private final double memCapacityBytes;
  private final double launchOverheadSeconds;
  private final double memoryEfficiency;
  private final double[] curveLogFlops;
  private final double[] curveEff;
  private final boolean unstructuredRunsDense;
  private final double unstructuredSparseEfficiency;
  private final double blockSparseEfficiency;
  private final double nm24Speedup;
  private final Map<String, String> sources;

  private GpuSpec(SpecReader r) {
    r.rejectUnknown(FIELDS);
    this.name = r.text("name", true);
    this.description = r.text("description", false);
    this.peakTflops = r.number("peakTflops", 1e-3, 1e6);
    this.vectorTflops = r.number("vectorTflops", 1e-3, 1e6);
    if (vectorTflops > peakTflops) {
      throw new IllegalArgumentException(
          r.origin()
              + ": contradictory fields: vectorTflops ("
              + vectorTflops
              + ") exceeds peakTflops ("
              + peakTflops
              + ")");
    }
    this.memBandwidth = r.number("memBandwidthGBs", 1e-3, 1e7) * 1e9;
    this.memCapacityBytes = r.number("memCapacityGB", 1e-3, 1e7) * 1e9;
    this.launchOverheadSeconds = r.number("launchOverheadUs", 0, 1e6) * 1e-6;
    this.memoryEfficiency = r.number("memoryEfficiency", 1e-4, 1.0);
    List<double[]> pts = new ArrayList<>(r.points("matmulEfficiency", true));
    curveLogFlops = new double[pts.size()];
    curveEff = new double[pts.size()];
    for (int i = 0; i < pts.size(); i++) {
      double[] p = pts.get(i);
      if (!(p[0] > 0) || !(p[1] > 0 && p[1] <= 1)) {
        throw new IllegalArgumentException(
            r.origin()
                + ": matmulEfficiency point ["
                + p[0]
                + ", "
                + p[1]
                + "] invalid; need flops > 0 and efficiency in (0, 1]");
      }
      if (i > 0 && p[0] <= pts.get(i - 1)[0]) {
        throw new IllegalArgumentException(
            r.origin()
                + ": matmulEfficiency points must have strictly increasing flops, got "
                + pts.get(i - 1)[0]
                + " then "
                + p[0]);
      }
      curveLogFlops[i] = Math.log10(p[0]);
      curveEff[i] = p[1];
    }
    Boolean dense = r.optionalBoolean("unstructuredRunsDense");
    this.unstructuredRunsDense = dense == null || dense;
    Double ue = r.optionalNumber("unstructuredSparseEfficiency", 1e-4, 1.0);
    if (!unstructuredRunsDense && ue == null) {
      throw new IllegalArgumentException(
          r.origin()
              + ": unstructuredRunsDense is false, so unstructuredSparseEfficiency is required");
    }
    this.unstructuredSparseEfficiency = ue == null ? 0 : ue;
    this.blockSparseEfficiency = r.number("blockSparseEfficiency", 1e-4, 1.0);
    this.nm24Speedup = r.number("nm24Speedup", 1.0, 2.0);
    this.sources = Collections.unmodifiableMap(r.sources());
  }

  /** Built-in GPUs: a100-40gb, a100-80gb (alias a100), h100 (SXM). */
  public static GpuSpec builtin(String id) {
    String k = id == null ? "" : id.toLowerCase(Locale.ROOT);
    if (k.equals("a100")) {
      k = "a100-80gb";
    }
    if (k.equals("h100-sxm")) {
      k = "h100";
    }
    if (!Hardware.GPUS.contains(k)) {
      throw new IllegalArgumentException(
          "gpu '"
              + id
              + "' is unknown; allowed: "
              + Hardware.GPUS
              + ", a100 (= a100-80gb) (or pass a JSON file)");
    }
    return new GpuSpec(SpecReader.ofResource("/org/sparseflow/dataflow/hw/" + k + ".json"));
  }

  public static GpuSpec fromFile(Path file) {
    return new GpuSpec(SpecReader.ofFile(file));
  }

  public static GpuSpec fromJson(String origin, String json) {
    return new GpuSpec(SpecReader.ofString(origin, json));
  }

  public String name() {
    return name;
  }

  public String description() {
    return description;
  }

  public double peakFlops() {
    return peakTflops * 1e12;
  }

  /** Non-tensor-core rate used for elementwise, normalisation and optimizer math. */
  public double vectorFlops() {
    return vectorTflops * 1e12;
  }

  public double memBandwidth() {
    return memBandwidth;
  }

  public double memCapacityBytes() {
    return memCapacityBytes;
  }

  public double launchOverheadSeconds() {
    return launchOverheadSeconds;
  }

  public double memoryEfficiency() {
    return memoryEfficiency;
  }

  public boolean unstructuredRunsDense() {
    return unstructuredRunsDense;
  }

  public double unstructuredSparseEfficiency() {
    return unstructuredSparseEfficiency;
  }

  public double blockSparseEfficiency() {
    return blockSparseEfficiency;
  }

  public double nm24Speedup() {
    return nm24Speedup;
  }

  public Map<String, String> sources() {
    return sources;
  }

  /**
   * Fraction of peak a dense GEMM of this many FLOPs reaches (log-linear interpolation, clamped at
   * the ends).
   */
  public double matmulEfficiency(double flops) {
    if (flops <= 0) {
      return curveEff[0];
    }
    double x = Math.log10(flops);
    if (x <= curveLogFlops[0]) {
      return curveEff[0];
    }
    int n = curveLogFlops.length;
    if (x >= curveLogFlops[n - 1]) {
      return curveEff[n - 1];
    }
    for (int i = 1; i < n; i++) {
      if (x <= curveLogFlops[i]) {
        double t = (x - curveLogFlops[i - 1]) / (curveLogFlops[i] - curveLogFlops[i - 1]);
        return curveEff[i - 1] + t * (curveEff[i] - curveEff[i - 1]);
      }
    }
    return curveEff[n - 1];
  }
}
