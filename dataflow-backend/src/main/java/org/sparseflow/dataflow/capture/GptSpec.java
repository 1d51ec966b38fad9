package org.sparseflow.dataflow.capture;

import java.io.IOException;
import java.util.List;
import java.util.Locale;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.ops.config.JsonText;

/**
 * Shapes-only description of a GPT-style decoder (pre-LayerNorm, GELU MLP, tied embeddings), enough
 * to build the op graph of one training step without allocating any weights. Mutable bean with
 * fluent setters (JSON friendly); {@link #validate()} checks every field.
 */
public final class GptSpec {
  private String name = "custom";
  private int layers = 2;
  private int dModel = 64;
  private int heads = 2;
  private int ffn = 256;
  private int seq = 64;

  /** Sequences per micro-batch on one chip. */
  private int batch = 1;

  private int vocab = 256;

  /** Fraction of pruned weights in the sparse linear layers (0 = dense). */
  private double sparsity = 0.0;

  /** Sparsity pattern of the sparse linear layers: unstructured, block16, 2:4, ... */
  private String pattern = "unstructured";

  /** Which linear layers are sparse; the LM head and embeddings stay dense. */
  private boolean sparseQkv = true;

  private boolean sparseProj = true;
  private boolean sparseFc1 = true;
  private boolean sparseFc2 = true;

  /**
   * Activation recomputation in backward: "attention" recomputes scores/softmax instead of saving
   * the [B,H,T,T] probabilities (Megatron-style selective recompute); "full" saves only each
   * layer's input and recomputes the whole layer forward (activation checkpointing); "none" saves
   * everything.
   */
  private String recompute = "attention";

  /** Sequences in one optimizer step over all chips (GPT-3 13B: 1024 x 2048 tokens = 2M tokens). */
  private int globalBatch = 1;

  public static final List<String> RECOMPUTE = List.of("none", "attention", "full");

  public GptSpec() {}

  /** Presets: gpt-mini (the reference char-level GPT), gpt2-small, gpt3-13b. */
  public static GptSpec preset(String model) {
    String m = model == null ? "" : model.toLowerCase(Locale.ROOT);
    switch (m) {
      case "gpt-mini":
        return new GptSpec()
            .name("gpt-mini")
            .layers(4)
            .dModel(128)
            .heads(4)
            .ffn(512)
            .seq(128)
            .vocab(96)
            .globalBatch(16)
            .batch(16);
      case "gpt2-small":
        // Radford et al. 2019, GPT-2 small (117M/124M): 12 layers, 768 wide, 12 heads, 1024
        // context, 50257 BPE tokens.
        return new GptSpec()
            .name("gpt2-small")
            .layers(12)
            .dModel(768)
            .heads(12)
            .ffn(3072)
            .seq(1024)
            .vocab(50257)
            .globalBatch(512);
      case "gpt3-13b":
        // Brown et al. 2020 (GPT-3) Table 2.1: 13B has 40 layers, 40 heads of 128, batch 2M tokens.
        // The table prints d_model 5140; 40 x 128 = 5120 is used here (as in DFModel's GPT3_13B).
        return new GptSpec()
            .name("gpt3-13b")
            .layers(40)
            .dModel(5120)
            .heads(40)
            .ffn(20480)
            .seq(2048)
            .vocab(50257)
            .globalBatch(1024);
      default:
        throw new IllegalArgumentException(
            "model '" + model + "' is unknown; allowed: gpt-mini, gpt2-small, gpt3-13b");
    }
  }

  public GptSpec validate() {
    positive("layers", layers);
    positive("dModel", dModel);
    positive("heads", heads);
    positive("ffn", ffn);
    positive("seq", seq);
    positive("batch", batch);
    positive("vocab", vocab);
    positive("globalBatch", globalBatch);
    if (dModel % heads != 0) {
      throw new IllegalArgumentException(
          "dModel (" + dModel + ") must be divisible by heads (" + heads + ")");
    }
    if (!(sparsity >= 0.0 && sparsity < 1.0)) {
      throw new IllegalArgumentException("sparsity must be in [0, 1), got " + sparsity);
    }
    new SparsityInfo(0.5, pattern); // validates the pattern string
    if (!RECOMPUTE.contains(recompute)) {
      throw new IllegalArgumentException(
          "recompute '" + recompute + "' is unknown; allowed: " + RECOMPUTE);
    }
    return this;
  }

  private static void positive(String field, int v) {
    if (v <= 0) {
      throw new IllegalArgumentException(field + " must be > 0, got " + v);
    }
  }

  public long parameterCount() {
    long d = dModel;
    long perLayer = 4 * d * d + 2 * d * ffn + 3 * d + d + ffn + d + 4 * d;
    return layers * perLayer + (long) vocab * d + (long) seq * d + 2 * d;
  }

  public String getName() {
    return name;
  }

  public void setName(String v) {
    name = v;
  }

  public GptSpec name(String v) {
    name = v;
    return this;
  }

  public int getLayers() {
    return layers;
  }

  public void setLayers(int v) {
    layers = v;
  }

  public GptSpec layers(int v) {
    layers = v;
    return this;
  }

  public int getDModel() {
    return dModel;
  }

  public void setDModel(int v) {
    dModel = v;
  }

  public GptSpec dModel(int v) {
    dModel = v;
    return this;
  }

  public int getHeads() {
    return heads;
  }

  public void setHeads(int v) {
    heads = v;
  }

  public GptSpec heads(int v) {
    heads = v;
    return this;
  }

  public int getFfn() {
    return ffn;
  }

  public void setFfn(int v) {
    ffn = v;
  }

  public GptSpec ffn(int v) {
    ffn = v;
    return this;
  }

  public int getSeq() {
    return seq;
  }

  public void setSeq(int v) {
    seq = v;
  }

  public GptSpec seq(int v) {
    seq = v;
    return this;
  }

  public int getBatch() {
    return batch;
  }

  public void setBatch(int v) {
    batch = v;
  }

  public GptSpec batch(int v) {
    batch = v;
    return this;
  }

  public int getVocab() {
    return vocab;
  }

  public void setVocab(int v) {
    vocab = v;
  }

  public GptSpec vocab(int v) {
    vocab = v;
    return this;
  }

  public double getSparsity() {
    return sparsity;
  }

  public void setSparsity(double v) {
    sparsity = v;
  }

  public GptSpec sparsity(double v) {
    sparsity = v;
    return this;
  }

  public String getPattern() {
    return pattern;
  }

  public void setPattern(String v) {
    pattern = v;
  }

  public GptSpec pattern(String v) {
    pattern = v;
    return this;
  }

  public boolean isSparseQkv() {
    return sparseQkv;
  }

  public void setSparseQkv(boolean v) {
    sparseQkv = v;
  }

  public boolean isSparseProj() {
    return sparseProj;
  }

  public void setSparseProj(boolean v) {
    sparseProj = v;
  }

  public boolean isSparseFc1() {
    return sparseFc1;
  }

  public void setSparseFc1(boolean v) {
    sparseFc1 = v;
  }

  public boolean isSparseFc2() {
    return sparseFc2;
  }

  public void setSparseFc2(boolean v) {
    sparseFc2 = v;
  }

  public String getRecompute() {
    return recompute;
  }

  public void setRecompute(String v) {
    recompute = v;
  }

  public GptSpec recompute(String v) {
    recompute = v;
    return this;
  }

  public int getGlobalBatch() {
    return globalBatch;
  }

  public void setGlobalBatch(int v) {
    globalBatch = v;
  }

  public GptSpec globalBatch(int v) {
    globalBatch = v;
    return this;
  }

  /** JSON form (all fields); {@link #fromJson(String)} is its inverse. */
  public String toJson() {
    return JsonText.of(
        () -> new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(this));
  }

  /** Reads a spec written by {@link #toJson()} (unknown fields are rejected) and validates it. */
  public static GptSpec fromJson(String json) {
    try {
      return new ObjectMapper().readValue(json, GptSpec.class).validate();
    } catch (IOException e) {
      throw new IllegalArgumentException("not a GPT model description: " + e.getMessage(), e);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GptSpec g
        && g.toString().equals(toString())
        && g.globalBatch == globalBatch
        && g.sparseQkv == sparseQkv
        && g.sparseProj == sparseProj
        && g.sparseFc1 == sparseFc1
        && g.sparseFc2 == sparseFc2;
  }

  @Override
  public int hashCode() {
    return toString().hashCode();
  }

  public GptSpec copy() {
    GptSpec c =
        new GptSpec()
            .name(name)
            .layers(layers)
            .dModel(dModel)
            .heads(heads)
            .ffn(ffn)
            .seq(seq)
            .batch(batch)
            .vocab(vocab)
            .sparsity(sparsity)
            .pattern(pattern)
            .recompute(recompute)
            .globalBatch(globalBatch);
    c.sparseQkv = sparseQkv;
    c.sparseProj = sparseProj;
    c.sparseFc1 = sparseFc1;
    c.sparseFc2 = sparseFc2;
    return c;
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT,
        "%s(L=%d d=%d h=%d ffn=%d seq=%d batch=%d vocab=%d sparsity=%.4f %s recompute=%s)",
        name,
        layers,
        dModel,
        heads,
        ffn,
        seq,
        batch,
        vocab,
        sparsity,
        pattern,
        recompute);
  }
}
