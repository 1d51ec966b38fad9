package org.sparseflow.mst.core;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * Everything needed to resume MST exactly: steps completed, phase, masks, RNG state and FLOP totals
 * (the schedule and drop-fraction positions are functions of the step). JSON via ND4J's shaded
 * Jackson.
 */
public final class MstState {

  /** One layer's mask. */
  public static final class Mask {
    private String name;
    private int rows;
    private int cols;
    private String pattern;
    private String bits;

    public Mask() {}

    public Mask(LayerMask m) {
      name = m.name();
      rows = m.rows();
      cols = m.cols();
      pattern = m.pattern().toString();
      bits = m.encodeBits();
    }

    public LayerMask toLayerMask() {
      return new LayerMask(
          name, rows, cols, MaskPattern.parse(pattern), LayerMask.decodeBits(bits));
    }

    public String getName() {
      return name;
    }

    public void setName(String v) {
      name = v;
    }

    public int getRows() {
      return rows;
    }

    public void setRows(int v) {
      rows = v;
    }

    public int getCols() {
      return cols;
    }

    public void setCols(int v) {
      cols = v;
    }

    public String getPattern() {
      return pattern;
    }

    public void setPattern(String v) {
      pattern = v;
    }

    public String getBits() {
      return bits;
    }

    public void setBits(String v) {
      bits = v;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Mask
          && Objects.equals(((Mask) o).name, name)
          && ((Mask) o).rows == rows
          && ((Mask) o).cols == cols
          && Objects.equals(((Mask) o).pattern, pattern)
          && Objects.equals(((Mask) o).bits, bits);
    }

    @Override
    public int hashCode() {
      return Objects.hash(name, rows, cols, pattern, bits);
    }
  }

  private int version = 1;
  private long step;
  private Phase phase = Phase.WARMUP;
  private long rngState;
  private double cumulativeFlops;
  private double cumulativeDenseFlops;
  private long topologyUpdates;
  private List<String> attentionPatterns = new ArrayList<>();
  private List<Mask> masks = new ArrayList<>();
  private String config;
  private Map<String, String> unitResetSteps = new LinkedHashMap<>();

  public MstState() {}

  public String toJson() {
    return MstConfigIO.text(() -> MstConfigIO.JSON.writeValueAsString(this));
  }

  public byte[] toBytes() {
    return toJson().getBytes(StandardCharsets.UTF_8);
  }

  public static MstState fromJson(String json) {
    try {
      MstState s = MstConfigIO.JSON.readValue(json, MstState.class);
      if (s.version != 1) {
        throw Args.bad("MstState.version", s.version, "1");
      }
      return s;
    } catch (IOException e) {
      throw new IllegalArgumentException("invalid MST state JSON: " + e.getMessage(), e);
    }
  }

  public static MstState fromBytes(byte[] b) {
    return fromJson(new String(b, StandardCharsets.UTF_8));
  }

  public int getVersion() {
    return version;
  }

  public void setVersion(int v) {
    version = v;
  }

  public long getStep() {
    return step;
  }

  public void setStep(long v) {
    step = v;
  }

  public Phase getPhase() {
    return phase;
  }

  public void setPhase(Phase v) {
    phase = v;
  }

  public long getRngState() {
    return rngState;
  }

  public void setRngState(long v) {
    rngState = v;
  }

  public double getCumulativeFlops() {
    return cumulativeFlops;
  }

  public void setCumulativeFlops(double v) {
    cumulativeFlops = v;
  }

  public double getCumulativeDenseFlops() {
    return cumulativeDenseFlops;
  }

  public void setCumulativeDenseFlops(double v) {
    cumulativeDenseFlops = v;
  }

  public long getTopologyUpdates() {
    return topologyUpdates;
  }

  public void setTopologyUpdates(long v) {
    topologyUpdates = v;
  }

  public List<String> getAttentionPatterns() {
    return attentionPatterns;
  }

  public void setAttentionPatterns(List<String> v) {
    attentionPatterns = v;
  }

  public List<Mask> getMasks() {
    return masks;
  }

  public void setMasks(List<Mask> v) {
    masks = v;
  }

  /**
   * Per layer (only layers with a reset, only with MstConfig#isResetBiasCorrection): for each mask
   * unit, the step after which its optimizer state was last reset, -1 if never; little-endian
   * int32, Base64.
   */
  public Map<String, String> getUnitResetSteps() {
    return unitResetSteps;
  }

  public void setUnitResetSteps(Map<String, String> v) {
    unitResetSteps = v == null ? new LinkedHashMap<>() : v;
  }

  static String encodeInts(int[] a) {
    ByteBuffer b = ByteBuffer.allocate(a.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asIntBuffer().put(a);
    return Base64.getEncoder().encodeToString(b.array());
  }

  static int[] decodeInts(String s) {
    IntBuffer b =
        ByteBuffer.wrap(Base64.getDecoder().decode(s)).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
    int[] a = new int[b.remaining()];
    b.get(a);
    return a;
  }

  /** The run's MstConfig as JSON (so a checkpoint is self-describing). */
  public String getConfig() {
    return config;
  }

  public void setConfig(String v) {
    config = v;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof MstState)) {
      return false;
    }
    MstState s = (MstState) o;
    return version == s.version
        && step == s.step
        && phase == s.phase
        && rngState == s.rngState
        && cumulativeFlops == s.cumulativeFlops
        && cumulativeDenseFlops == s.cumulativeDenseFlops
        && topologyUpdates == s.topologyUpdates
        && Objects.equals(attentionPatterns, s.attentionPatterns)
        && Objects.equals(masks, s.masks)
        && Objects.equals(config, s.config)
        && Objects.equals(unitResetSteps, s.unitResetSteps);
  }

  @Override
  public int hashCode() {
    return Objects.hash(step, rngState, masks);
  }
}
