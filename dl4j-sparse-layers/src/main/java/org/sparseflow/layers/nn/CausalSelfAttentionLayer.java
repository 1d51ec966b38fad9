package org.sparseflow.layers.nn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.InputTypeUtil;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.shade.jackson.annotation.JsonInclude;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Multi-head causal self-attention for recurrent input [minibatch, nIn, T] (NCW, the default),
 * output [minibatch, nOut, T]; with {@code dataFormat(NWC)} input [minibatch, T, nIn] and output
 * [minibatch, T, nOut] (the natural transformer layout: the projections then read and write the
 * activations without transposes). Classic DL4J layer (not a SameDiffLayer, so no doubled
 * gradients).
 *
 * <p>q = x Wq + bq, k = x Wk + bk, v = x Wv + bv (each [*, nOut], split into nHeads heads of size
 * nOut/nHeads), o = softmax(q k^T / sqrt(headSize) restricted to the causal pattern) v, y = act(o
 * Wo + bo). Params: "Wq", "Wk", "Wv" [nIn, nOut], "Wo" [nOut, nOut], biases "bq", "bk", "bv", "bo"
 * (if hasBias), and, when {@code projectionPattern} is set, frozen 0/1 masks "Mq", "Mk", "Mv", "Mo"
 * for sparse projections.
 *
 * <p>{@code attentionPattern}: an {@code AttentionPattern} string (e.g. {@code dense}, {@code
 * local:64+strided:64}); {@code blockSize}: block size of the sparse attention kernel, which must
 * divide T for non-dense patterns (a dense pattern falls back to one block of T when it does not).
 * DL4J time-step masks are passed through but not applied as key masks: with causal attention and
 * right padding, valid positions never see padding. Activation defaults to identity.
 */
public class CausalSelfAttentionLayer extends SparseFlowFeedForwardLayer {
  private static final long serialVersionUID = 1L;

  private int nHeads = 1;
  private String attentionPattern = "dense";
  private int blockSize = 16;
  private String projectionPattern;
  private double projectionDensity = 1.0;
  private String projectionStorage = PackedStorage.MASKED;
  private int[][] projectionLayouts;
  private int[] projectionCapacities; // block slots of packed Wq, Wk, Wv, Wo; null: the kept blocks
  private boolean hasBias = true;
  private RNNFormat dataFormat = RNNFormat.NCW;

  /** Jackson. */
  public CausalSelfAttentionLayer() {}

  protected CausalSelfAttentionLayer(Builder b) {
    super(b);
    this.nHeads = b.nHeads;
    this.attentionPattern = b.attentionPattern;
    this.blockSize = b.blockSize;
    this.projectionPattern = b.projectionPattern;
    this.projectionDensity = b.projectionDensity;
    this.projectionStorage = b.projectionStorage;
    this.projectionLayouts = b.projectionLayouts;
    this.hasBias = b.hasBias;
    this.dataFormat = b.dataFormat;
    initializeConstraints(b);
  }

  static final String[] PROJ = {"q", "k", "v", "o"};

  @Override
  public List<ParamSpec> paramSpecs() {
    List<ParamSpec> l = new ArrayList<>();
    if (packedProjections()) {
      validate();
      PatternSpec ps = SparseKernels.parsePattern("projectionPattern", projectionPattern);
      checkCapacities(ps);
      int b = ps.getBlockSize();
      for (int i = 0; i < PROJ.length; i++) {
        long rows = PROJ[i].equals("o") ? nOut : nIn;
        long packedRows =
            ps.getN() > 0 ? rows / ps.getM() * ps.getN() : (long) projectionLayouts[i].length * b;
        long slotRows = ps.getN() > 0 ? packedRows : (long) projectionSlots(i) * b;
        l.add(
            ParamSpec.packedWeight(
                "W" + PROJ[i], slotRows, packedRows, ps.getN() > 0 ? nOut : b, rows, nOut));
        if (hasBias) {
          l.add(ParamSpec.bias("b" + PROJ[i], nOut));
        }
      }
      return l;
    }
    checkCapacities(null); // masked projections take none
    for (String p : PROJ) {
      long rows = p.equals("o") ? nOut : nIn;
      l.add(ParamSpec.weight("W" + p, rows, nOut));
      if (hasBias) {
        l.add(ParamSpec.bias("b" + p, nOut));
      }
    }
    if (projectionPattern != null) {
      for (String p : PROJ) {
        long rows = p.equals("o") ? nOut : nIn;
        l.add(ParamSpec.mask("M" + p, "W" + p, rows, nOut, projectionPattern, projectionDensity));
      }
    }
    return l;
  }

  /** Validates the whole configuration (also used after setInputType has filled nIn). */
  void validate() {
    String name = getLayerName();
    LayerValidation.checkPositive(name, "nHeads", nHeads);
    LayerValidation.checkPositive(name, "blockSize", blockSize);
    if (nOut > 0 && nOut % nHeads != 0) {
      throw new IllegalArgumentException(
          LayerValidation.where(name)
              + "nOut = "
              + nOut
              + " is not divisible by nHeads = "
              + nHeads
              + "; allowed: nOut a multiple of nHeads");
    }
    try {
      SparseKernels.parseAttentionPattern("attentionPattern", attentionPattern);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(LayerValidation.where(name) + e.getMessage(), e);
    }
    if (projectionPattern != null) {
      LayerValidation.checkWeightSparsity(name, projectionPattern, projectionDensity, nIn, nOut);
      if (nOut > 0) {
        LayerValidation.checkWeightSparsity(name, projectionPattern, projectionDensity, nOut, nOut);
      }
    }
    if (packedProjections() && projectionLayouts == null) {
      throw new IllegalArgumentException(
          LayerValidation.where(name)
              + "projectionStorage = packed with projectionLayouts = null; allowed: four kept-block"
              + " index arrays (q, k, v, o; the layer builder fills them in)");
    }
    resolveLayouts(projectionLayouts, 0L);
  }

  /** Block slots of packed projection i (q, k, v, o): its capacity, else its kept blocks. */
  int projectionSlots(int i) {
    int c = projectionCapacities == null ? 0 : projectionCapacities[i];
    return c > 0 ? c : projectionLayouts[i].length;
  }

  /**
   * Gives packed projection i (q, k, v, o) {@code slots} block slots; the other projections keep
   * theirs, which become explicit capacities.
   */
  void setProjectionSlots(int i, int slots) {
    int[] caps = new int[4];
    for (int k = 0; k < 4; k++) {
      caps[k] = k == i ? slots : projectionSlots(k);
    }
    setProjectionCapacities(caps);
  }

  /** Checks projectionCapacities against the layouts (packed block projections only). */
  private void checkCapacities(PatternSpec ps) {
    if (projectionCapacities == null) {
      return;
    }
    if (!packedProjections() || ps == null || ps.getN() > 0 || projectionCapacities.length != 4) {
      throw new IllegalArgumentException(
          LayerValidation.where(getLayerName())
              + "projectionCapacities = "
              + Arrays.toString(projectionCapacities)
              + "; allowed: null, or 4 entries (q, k, v, o) with packed block projections");
    }
    for (int i = 0; i < 4; i++) {
      PackedStorage.checkCapacity(
          getLayerName(),
          projectionCapacities[i],
          projectionLayouts[i].length,
          i == 3 ? nOut : nIn,
          nOut,
          ps.getBlockSize());
    }
  }

  /** Whether the projections are stored packed. Not a bean getter: stays out of the JSON. */
  boolean packedProjections() {
    return PackedStorage.isPacked(projectionStorage);
  }

  /**
   * Checks projectionStorage; for packed storage returns the four validated layouts (q, k, v, o),
   * seeded random ones when {@code layouts} is null.
   */
  int[][] resolveLayouts(int[][] layouts, long seed) {
    return PackedStorage.resolveProjections(
        getLayerName(),
        projectionStorage,
        projectionPattern,
        projectionDensity,
        nIn,
        nOut,
        layouts,
        seed);
  }

  @Override
  Layer newImplementation(NeuralNetConfiguration conf, DataType dataType) {
    validate();
    return new CausalSelfAttentionLayerImpl(conf, dataType);
  }

  /** The input type as recurrent, or a clear error for any other (or no) input type. */
  private InputType.InputTypeRecurrent recurrent(InputType inputType) {
    if (inputType == null || inputType.getType() != InputType.Type.RNN) {
      throw new IllegalArgumentException(
          LayerValidation.where(getLayerName())
              + "input type = "
              + inputType
              + " is not allowed; allowed: recurrent [minibatch, nIn, T] (InputType.recurrent)");
    }
    return (InputType.InputTypeRecurrent) inputType;
  }

  @Override
  public InputType getOutputType(int layerIndex, InputType inputType) {
    return InputType.recurrent(nOut, recurrent(inputType).getTimeSeriesLength(), dataFormat);
  }

  @Override
  public void setNIn(InputType inputType, boolean override) {
    InputType.InputTypeRecurrent r = recurrent(inputType);
    if (nIn <= 0 || override) {
      nIn = r.getSize();
    }
  }

  @Override
  public InputPreProcessor getPreProcessorForInputType(InputType inputType) {
    return InputTypeUtil.getPreprocessorForInputTypeRnnLayers(
        inputType, dataFormat, getLayerName());
  }

  public int getNHeads() {
    return nHeads;
  }

  public void setNHeads(int nHeads) {
    this.nHeads = nHeads;
  }

  public String getAttentionPattern() {
    return attentionPattern;
  }

  public void setAttentionPattern(String attentionPattern) {
    this.attentionPattern = attentionPattern;
  }

  public int getBlockSize() {
    return blockSize;
  }

  public void setBlockSize(int blockSize) {
    this.blockSize = blockSize;
  }

  /** Pattern of the projection weights, or null for dense projections. */
  public String getProjectionPattern() {
    return projectionPattern;
  }

  public void setProjectionPattern(String projectionPattern) {
    this.projectionPattern = projectionPattern;
  }

  public double getProjectionDensity() {
    return projectionDensity;
  }

  public void setProjectionDensity(double projectionDensity) {
    this.projectionDensity = projectionDensity;
  }

  /** {@code masked} (default) or {@code packed} projections: see {@link PackedStorage}. */
  public String getProjectionStorage() {
    return projectionStorage;
  }

  public void setProjectionStorage(String projectionStorage) {
    this.projectionStorage = projectionStorage;
  }

  /** Packed storage: the kept blocks of Wq, Wk, Wv, Wo as row-major block indices, else null. */
  public int[][] getProjectionLayouts() {
    return projectionLayouts == null ? null : PackedStorage.copy(projectionLayouts);
  }

  public void setProjectionLayouts(int[][] projectionLayouts) {
    this.projectionLayouts =
        projectionLayouts == null ? null : PackedStorage.copy(projectionLayouts);
  }

  /**
   * Packed block projections: the block slots of Wq, Wk, Wv, Wo (room for blocks MST grows within a
   * phase; spare slots hold zeros), or null (the default, left out of the JSON) for exactly the
   * kept blocks; an entry of 0 also means the kept blocks.
   */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public int[] getProjectionCapacities() {
    return projectionCapacities == null ? null : projectionCapacities.clone();
  }

  public void setProjectionCapacities(int[] projectionCapacities) {
    this.projectionCapacities = projectionCapacities == null ? null : projectionCapacities.clone();
  }

  public boolean isHasBias() {
    return hasBias;
  }

  public void setHasBias(boolean hasBias) {
    this.hasBias = hasBias;
  }

  public boolean hasBias() {
    return hasBias;
  }

  /** Layout of input and output: NCW [minibatch, n, T] or NWC [minibatch, T, n]. */
  public RNNFormat getDataFormat() {
    return dataFormat;
  }

  public void setDataFormat(RNNFormat dataFormat) {
    this.dataFormat = dataFormat;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof CausalSelfAttentionLayer) || !super.equals(o)) {
      return false;
    }
    CausalSelfAttentionLayer t = (CausalSelfAttentionLayer) o;
    return nHeads == t.nHeads
        && blockSize == t.blockSize
        && hasBias == t.hasBias
        && dataFormat == t.dataFormat
        && Double.compare(projectionDensity, t.projectionDensity) == 0
        && Objects.equals(attentionPattern, t.attentionPattern)
        && Objects.equals(projectionPattern, t.projectionPattern)
        && Objects.equals(projectionStorage, t.projectionStorage)
        && Arrays.deepEquals(projectionLayouts, t.projectionLayouts)
        && Arrays.equals(projectionCapacities, t.projectionCapacities);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.deepHashCode(projectionLayouts)
        + 17 * Arrays.hashCode(projectionCapacities)
        + Objects.hash(
            super.hashCode(),
            projectionStorage,
            nHeads,
            attentionPattern,
            blockSize,
            projectionPattern,
            projectionDensity,
            hasBias,
            dataFormat);
  }

  @Override
  public String toString() {
    return "CausalSelfAttentionLayer(name="
        + getLayerName()
        + ", nIn="
        + nIn
        + ", nOut="
        + nOut
        + ", nHeads="
        + nHeads
        + ", attentionPattern="
        + attentionPattern
        + ", blockSize="
        + blockSize
        + ", projectionPattern="
        + projectionPattern
        + ", projectionDensity="
        + projectionDensity
        + ", projectionStorage="
        + projectionStorage
        + ", dataFormat="
        + dataFormat
        + ")";
  }

  /** Builder in DL4J style. */
  // DL4J's Layer.Builder declares a generic <E extends Layer> E build(); javac reports the concrete
  // override, which gives callers the layer's own type, as an unchecked conversion on the class.
  @SuppressWarnings("unchecked")
  public static class Builder extends RecurrentLayerBuilder<Builder> {
    private int nHeads = 1;
    private String attentionPattern = "dense";
    private int blockSize = 16;
    private String projectionPattern;
    private double projectionDensity = 1.0;
    private String projectionStorage = PackedStorage.MASKED;
    private int[][] projectionLayouts;
    private long layoutSeed = 12345L;
    private boolean hasBias = true;

    public Builder nHeads(int nHeads) {
      this.nHeads = nHeads;
      return this;
    }

    /**
     * AttentionPattern string, e.g. "dense", "local:64", "local:64+strided:64", "fixed:64:1",
     * "random:2:seed=7".
     */
    public Builder attentionPattern(String attentionPattern) {
      this.attentionPattern = attentionPattern;
      return this;
    }

    /**
     * Block size of the sparse attention layout; must divide the sequence length (non-dense
     * patterns).
     */
    public Builder blockSize(int blockSize) {
      this.blockSize = blockSize;
      return this;
    }

    /** Makes the four projections sparse with this weight pattern (null: dense projections). */
    public Builder projectionPattern(String projectionPattern) {
      this.projectionPattern = projectionPattern;
      return this;
    }

    /** Initial density of sparse projections, in (0, 1]. */
    public Builder projectionDensity(double projectionDensity) {
      this.projectionDensity = projectionDensity;
      return this;
    }

    /**
     * Projection storage: {@code masked} (default) or {@code packed} (block projectionPattern: only
     * the kept blocks are params; fixed layouts, no MST).
     */
    public Builder projectionStorage(String projectionStorage) {
      this.projectionStorage = projectionStorage;
      return this;
    }

    /**
     * Packed storage: the kept blocks of Wq, Wk, Wv, Wo as row-major block indices; when not given,
     * seeded random layouts of projectionDensity ({@link #layoutSeed}).
     */
    public Builder projectionLayouts(int[][] projectionLayouts) {
      this.projectionLayouts =
          projectionLayouts == null ? null : PackedStorage.copy(projectionLayouts);
      return this;
    }

    /** Seed of the random packed layouts when none are given (default 12345). */
    public Builder layoutSeed(long layoutSeed) {
      this.layoutSeed = layoutSeed;
      return this;
    }

    public Builder hasBias(boolean hasBias) {
      this.hasBias = hasBias;
      return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public CausalSelfAttentionLayer build() {
      CausalSelfAttentionLayer l = new CausalSelfAttentionLayer(this);
      l.projectionLayouts = l.resolveLayouts(projectionLayouts, layoutSeed);
      l.validate();
      return l;
    }
  }
}
