package org.sparseflow.dataflow.hw;

import java.nio.file.Path;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A spatial dataflow chip (RDU-like): compute units (PCUs), memory units (PMUs) with on-chip SRAM,
 * one off-chip memory tier, and the efficiencies the timing model needs. Loaded from JSON; every
 * value carries its source ({@link #sources()}).
 */
public final class ChipSpec {
  static final Set<String> FIELDS =
      Set.of(
          "name",
          "description",
          "computeUnits",
          "memoryUnits",
          "peakTflops",
          "clockGHz",
          "lanes",
          "stagesPerUnit",
          "onChipMemoryMB",
          "onChipBandwidthTBs",
          "offChipBandwidthGBs",
          "offChipCapacityGB",
          "systolicEfficiency",
          "simdEfficiency",
          "sparseEfficiency",
          "sectionSwitchUs",
          "tileTokens",
          "bufferDepth",
          "chipsPerNode",
          "chipLinkBandwidthGBs",
          "interNodeBandwidthGBs",
          "collectiveLatencyUs");
  static final Set<String> SPARSE_KEYS = Set.of("unstructured", "block", "nm");

  private final String name;
  private final String description;
  private final int computeUnits;
  private final int memoryUnits;
  private final double peakTflops;
  private final double onChipMemoryBytes;
  private final double onChipBandwidth;
  private final double offChipBandwidth;
  private final double offChipCapacityBytes;
  private final double systolicEfficiency;
  private final double simdEfficiency;
  private final double sparseUnstructured;
  private final double sparseBlock;
  private final double sparseNm;
  private final double sectionSwitchSeconds;
  private final int tileTokens;
  private final int bufferDepth;
  private final int chipsPerNode;
  private final double chipLinkBandwidth;
  private final double interNodeBandwidth;
  private final double collectiveLatencySeconds;
  private final Map<String, String> sources;

  private ChipSpec(SpecReader r) {
    r.rejectUnknown(FIELDS);
    this.name = r.text("name", true);
    this.description = r.text("description", false);
    this.computeUnits = (int) r.number("computeUnits", 1, 1e7);
    this.memoryUnits = (int) r.number("memoryUnits", 1, 1e7);
    this.peakTflops = r.number("peakTflops", 1e-3, 1e6);
    Double clock = r.optionalNumber("clockGHz", 0.01, 100);
    Double lanes = r.optionalNumber("lanes", 1, 1e5);
    Double stages = r.optionalNumber("stagesPerUnit", 1, 1e5);
    if (clock != null && lanes != null && stages != null) {
      double derived = 2.0 * lanes * stages * computeUnits * clock / 1000.0;
      if (Math.abs(derived - peakTflops) / peakTflops > 0.05) {
        throw new IllegalArgumentException(
            String.format(
                Locale.ROOT,
                "%s: contradictory fields: peakTflops = %.1f but 2 x lanes (%.0f) x stagesPerUnit"
                    + " (%.0f) x computeUnits (%d) x clockGHz (%.3f) = %.1f TFLOPS; they must agree"
                    + " within 5%%",
                r.origin(),
                peakTflops,
                lanes,
                stages,
                computeUnits,
                clock,
                derived));
      }
    }
    this.onChipMemoryBytes = r.number("onChipMemoryMB", 1e-3, 1e9) * 1e6;
    this.onChipBandwidth = r.number("onChipBandwidthTBs", 1e-3, 1e6) * 1e12;
    this.offChipBandwidth = r.number("offChipBandwidthGBs", 1e-3, 1e7) * 1e9;
    this.offChipCapacityBytes = r.number("offChipCapacityGB", 1e-3, 1e9) * 1e9;
    this.systolicEfficiency = r.number("systolicEfficiency", 1e-4, 1.0);
    this.simdEfficiency = r.number("simdEfficiency", 1e-4, 1.0);
    this.sparseUnstructured =
        r.nestedNumber("sparseEfficiency", "unstructured", 1e-4, 1.0, true, SPARSE_KEYS);
    this.sparseBlock = r.nestedNumber("sparseEfficiency", "block", 1e-4, 1.0, true, SPARSE_KEYS);
    this.sparseNm = r.nestedNumber("sparseEfficiency", "nm", 1e-4, 1.0, true, SPARSE_KEYS);
    if (sparseUnstructured > systolicEfficiency
        || sparseBlock > systolicEfficiency
        || sparseNm > systolicEfficiency) {
      throw new IllegalArgumentException(
          r.origin()
              + ": contradictory fields: a sparseEfficiency entry exceeds systolicEfficiency ("
              + systolicEfficiency
              + "); sparse matmuls cannot run faster per useful FLOP than dense ones in this"
              + " model");
    }
    this.sectionSwitchSeconds = r.number("sectionSwitchUs", 0, 1e7) * 1e-6;
    this.tileTokens = (int) r.number("tileTokens", 1, 1e7);
    Double depth = r.optionalNumber("bufferDepth", 1, 64);
    this.bufferDepth = depth == null ? 2 : depth.intValue();
    Double perNode = r.optionalNumber("chipsPerNode", 1, 1e5);
    Double link = r.optionalNumber("chipLinkBandwidthGBs", 1e-3, 1e6);
    Double inter = r.optionalNumber("interNodeBandwidthGBs", 1e-3, 1e6);
    Double lat = r.optionalNumber("collectiveLatencyUs", 0, 1e6);
    int given =
        (perNode == null ? 0 : 1)
            + (link == null ? 0 : 1)
            + (inter == null ? 0 : 1)
            + (lat == null ? 0 : 1);
    if (given != 0 && given != 4) {
      throw new IllegalArgumentException(
          r.origin()
              + ": the interconnect fields chipsPerNode, chipLinkBandwidthGBs,"
              + " interNodeBandwidthGBs and collectiveLatencyUs go together; give all four or"
              + " none");
    }
    if (perNode != null && perNode != Math.rint(perNode)) {
      throw new IllegalArgumentException(
          r.origin() + ": chipsPerNode must be a whole number, got " + perNode);
    }
    this.chipsPerNode = perNode == null ? 0 : perNode.intValue();
    this.chipLinkBandwidth = link == null ? 0 : link * 1e9;
    this.interNodeBandwidth = inter == null ? 0 : inter * 1e9;
    this.collectiveLatencySeconds = lat == null ? 0 : lat * 1e-6;
    this.sources = Collections.unmodifiableMap(r.sources());
  }

  /** Built-in chips: sn10, sn30, sn40l. */
  public static ChipSpec builtin(String id) {
    String k = id == null ? "" : id.toLowerCase(Locale.ROOT);
    if (!Hardware.CHIPS.contains(k)) {
      throw new IllegalArgumentException(
          "chip '" + id + "' is unknown; allowed: " + Hardware.CHIPS + " (or pass a JSON file)");
    }
    return new ChipSpec(SpecReader.ofResource("/org/sparseflow/dataflow/hw/" + k + ".json"));
  }

  public static ChipSpec fromFile(Path file) {
    return new ChipSpec(SpecReader.ofFile(file));
  }

  public static ChipSpec fromJson(String origin, String json) {
    return new ChipSpec(SpecReader.ofString(origin, json));
  }

  public String name() {
    return name;
  }

  public String description() {
    return description;
  }

  public int computeUnits() {
    return computeUnits;
  }

  public int memoryUnits() {
    return memoryUnits;
  }

  public double peakFlops() {
    return peakTflops * 1e12;
  }

  public double flopsPerComputeUnit() {
    return peakFlops() / computeUnits;
  }

  public double onChipMemoryBytes() {
    return onChipMemoryBytes;
  }

  public double bytesPerMemoryUnit() {
    return onChipMemoryBytes / memoryUnits;
  }

  public double onChipBandwidth() {
    return onChipBandwidth;
  }

  public double offChipBandwidth() {
    return offChipBandwidth;
  }

  public double offChipCapacityBytes() {
    return offChipCapacityBytes;
  }

  public double systolicEfficiency() {
    return systolicEfficiency;
  }

  public double simdEfficiency() {
    return simdEfficiency;
  }

  public double sectionSwitchSeconds() {
    return sectionSwitchSeconds;
  }

  public int tileTokens() {
    return tileTokens;
  }

  public int bufferDepth() {
    return bufferDepth;
  }

  public Map<String, String> sources() {
    return sources;
  }

  /** Fraction of peak a sparse matmul reaches per useful (kept) FLOP, by pattern family. */
  public double sparseEfficiency(String family) {
    switch (family) {
      case "unstructured":
        return sparseUnstructured;
      case "block":
        return sparseBlock;
      case "nm":
        return sparseNm;
      default:
        return systolicEfficiency;
    }
  }

  /** True when the file describes the chip-to-chip interconnect (needed for chips > 1). */
  public boolean hasInterconnect() {
    return chipsPerNode > 0;
  }

  public int chipsPerNode() {
    return chipsPerNode;
  }

  /** Bandwidth of the ring between chips of one node (bytes/s per chip). */
  public double chipLinkBandwidth() {
    return chipLinkBandwidth;
  }

  /** Bandwidth per chip between nodes (bytes/s). */
  public double interNodeBandwidth() {
    return interNodeBandwidth;
  }

  public double collectiveLatencySeconds() {
    return collectiveLatencySeconds;
  }

  /** Copy with scaled resources, for what-if studies and property tests. */
  public ChipSpec scaled(double computeFactor, double offChipBwFactor, double onChipBwFactor) {
    return new ChipSpec(this, computeFactor, offChipBwFactor, onChipBwFactor, 1, -1);
  }

  /**
   * Copy with another unstructured sparse efficiency (the gather efficiency; sensitivity studies).
   * Must stay within (0, systolicEfficiency].
   */
  public ChipSpec withUnstructuredSparseEfficiency(double eff) {
    if (!(eff > 0 && eff <= systolicEfficiency)) {
      throw new IllegalArgumentException(
          "unstructured sparse efficiency must be in (0, "
              + systolicEfficiency
              + "] (systolicEfficiency), got "
              + eff);
    }
    ChipSpec c = new ChipSpec(this, 1, 1, 1, 1, eff);
    return c;
  }

  /** Copy with the chip-to-chip and inter-node bandwidths multiplied by factor. */
  public ChipSpec withLinkBandwidthScaled(double factor) {
    return new ChipSpec(this, 1, 1, 1, factor, -1);
  }

  /** Scaled copy; {@code unstructured < 0} keeps the original sparse efficiency. */
  private ChipSpec(ChipSpec o, double cf, double bf, double nf, double lf, double unstructured) {
    if (!(cf > 0 && bf > 0 && nf > 0 && lf > 0)) {
      throw new IllegalArgumentException(
          "scale factors must be > 0, got " + cf + ", " + bf + ", " + nf);
    }
    this.name =
        o.name
            + (cf == 1 && bf == 1 && nf == 1
                ? ""
                : String.format(Locale.ROOT, "[x%.2g cu, x%.2g bw]", cf, bf));
    this.description = o.description;
    this.computeUnits = Math.max(1, (int) Math.round(o.computeUnits * cf));
    this.memoryUnits = o.memoryUnits;
    this.peakTflops = o.peakTflops * this.computeUnits / o.computeUnits;
    this.onChipMemoryBytes = o.onChipMemoryBytes;
    this.onChipBandwidth = o.onChipBandwidth * nf;
    this.offChipBandwidth = o.offChipBandwidth * bf;
    this.offChipCapacityBytes = o.offChipCapacityBytes;
    this.systolicEfficiency = o.systolicEfficiency;
    this.simdEfficiency = o.simdEfficiency;
    this.sparseUnstructured = unstructured < 0 ? o.sparseUnstructured : unstructured;
    this.sparseBlock = o.sparseBlock;
    this.sparseNm = o.sparseNm;
    this.sectionSwitchSeconds = o.sectionSwitchSeconds;
    this.tileTokens = o.tileTokens;
    this.bufferDepth = o.bufferDepth;
    this.chipsPerNode = o.chipsPerNode;
    this.chipLinkBandwidth = o.chipLinkBandwidth * lf;
    this.interNodeBandwidth = o.interNodeBandwidth * lf;
    this.collectiveLatencySeconds = o.collectiveLatencySeconds;
    this.sources = o.sources;
  }
}
