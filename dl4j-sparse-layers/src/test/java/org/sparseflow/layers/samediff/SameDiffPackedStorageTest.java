package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.PackedMatmulOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * {@code storage: packed} on SameDiff graphs: weights become their kept blocks only, outputs equal
 * the masked rewrite, training and save/load work, and densify restores plain weights.
 */
class SameDiffPackedStorageTest {

  private static SparsityConfig config(String storage) {
    return SparsityConfig.builder()
        .pattern("block8")
        .storage(storage)
        .sparsity(0.5)
        .keepFirstDense(false)
        .initialMask(InitialMask.MAGNITUDE)
        .build();
  }

  private static long count(SameDiff sd, Class<?> op) {
    return sd.getOps().values().stream().filter(o -> op.isInstance(o.getOp())).count();
  }

  @Test
  void weightsBecomeTheirKeptBlocksAndComputeWhatMaskedStorageDoes(@TempDir File dir)
      throws Exception {
    SameDiff packed = SameDiffSparsifierTest.mlp();
    SameDiff masked = SameDiffSparsifierTest.mlp();
    SparsifyReport r = Sparsify.apply(config("packed"), packed).report();
    Sparsify.apply(config("masked"), masked);
    assertEquals(Status.SPARSE, r.entry("w1").status());
    assertEquals(PackedMatmulOp.OP_NAME, r.entry("w1").resultType());
    assertTrue(r.entry("w1").reason().contains("packed storage"), r.entry("w1").reason());
    assertEquals(2, count(packed, PackedMatmulOp.class));
    assertEquals(
        1,
        packed.getOps().values().stream()
            .filter(o -> o.getOp() instanceof PackedMatmulOp && o.getInputsToOp().size() == 3)
            .count(),
        "w1's bias add is folded into its packed matmul (fuse.biasAdd)");
    assertEquals(0, count(packed, SparseMatmulOp.class));
    assertFalse(packed.hasVariable("w1"), "the dense weight left the graph");
    assertTrue(
        r.entries().stream().noneMatch(e -> e.name().endsWith("_packed")),
        "packed values are reported under their weight's name, not as extra dense weights");
    assertFalse(packed.getVariablesArrays().hasArray("w1"));
    // 32 x 32 at block 8 and density 0.5: 8 of 16 blocks, [8 * 8, 8]
    assertArrayEquals(new long[] {64, 8}, packed.getArrForVarName("w1_packed").shape());

    INDArray x = SameDiffSparsifierTest.data(99).getFeatures();
    INDArray yp = packed.outputSingle(Map.of("in", x), "logits");
    INDArray ym = masked.outputSingle(Map.of("in", x), "logits");
    assertTrue(yp.equalsWithEps(ym, 1e-5), "packed and masked storage agree");

    double before = loss(packed);
    for (int i = 0; i < 30; i++) {
      packed.fit(SameDiffSparsifierTest.data(i % 4));
    }
    assertTrue(loss(packed) < before, "trains: " + before + " -> " + loss(packed));

    File f = new File(dir, "packed.fb");
    packed.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    INDArray trained = packed.outputSingle(Map.of("in", x), "logits");
    assertEquals(trained, loaded.outputSingle(Map.of("in", x), "logits"));

    Sparsify.densify(packed);
    assertEquals(0, count(packed, PackedMatmulOp.class));
    assertFalse(packed.hasVariable("w1_packed"));
    assertArrayEquals(new long[] {32, 32}, packed.getArrForVarName("w1").shape());
    double zeros =
        packed.getArrForVarName("w1").eq(0).castTo(DataType.DOUBLE).sumNumber().doubleValue();
    assertEquals(512, zeros, 0.0, "half the 32 x 32 weight is outside the kept blocks");
    assertTrue(packed.outputSingle(Map.of("in", x), "logits").equalsWithEps(trained, 1e-5));
  }

  private static double loss(SameDiff sd) {
    var d = SameDiffSparsifierTest.data(7);
    return sd.output(Map.of("in", d.getFeatures(), "label", d.getLabels()), "loss")
        .get("loss")
        .getDouble(0);
  }

  @Test
  void transposedUsesArePackedInTheirOwnOrientation() {
    SameDiff packed = ThirdPartyGraphs.torchStyleMlp();
    SameDiff masked = ThirdPartyGraphs.torchStyleMlp();
    SparsifyReport r = Sparsify.apply(config("packed"), packed).report();
    Sparsify.apply(config("masked"), masked);
    assertEquals(PackedMatmulOp.OP_NAME, r.entry("l1_weight").resultType());
    // l1_weight is [out 32, in 32] used as x·Wᵀ: packed as Wᵀ
    assertTrue(packed.hasVariable("l1_weight_packed"));
    Nd4j.getRandom().setSeed(4);
    INDArray x = Nd4j.randn(DataType.DOUBLE, 5, 16);
    assertTrue(
        packed
            .outputSingle(Map.of("in", x), "out")
            .equalsWithEps(masked.outputSingle(Map.of("in", x), "out"), 1e-10));
  }

  @Test
  void aTiedLookupKeepsMaskedStorageAndSaysWhy() {
    SameDiff sd = ThirdPartyGraphs.tiedEmbeddingModel(64, 32);
    SparsityConfig cfg =
        SparsityConfig.builder()
            .pattern("block8")
            .storage("packed")
            .sparsity(0.5)
            .keepFirstDense(false)
            .keepLastDense(false)
            .exclude()
            .build();
    SparsifyReport r = Sparsify.apply(cfg, sd).report();
    assertEquals(SparseMatmulOp.OP_NAME, r.entry("tok_emb").resultType());
    assertTrue(r.entry("tok_emb").reason().contains("masked storage: a GATHER use"));
    assertEquals(PackedMatmulOp.OP_NAME, r.entry("ff_in").resultType());
  }

  @Test
  void givenMasksArePackedAsGivenAndBadOnesAreRefusedBeforeTheGraphChanges() {
    SameDiff sd = SameDiffSparsifierTest.mlp();
    // w1: all 16 blocks (a dense start); w0: the blocks of one fixed random mask
    SparseMask all = PatternSpec.block(8).random(32, 32, 1.0, 1);
    SparseMask some = PatternSpec.block(8).random(16, 32, 0.25, 2);
    SparsifyReport r = Sparsify.apply(config("packed"), sd, Map.of("w1", all, "w0", some)).report();
    assertEquals(PackedMatmulOp.OP_NAME, r.entry("w1").resultType());
    assertTrue(r.entry("w1").reason().contains("given mask"), r.entry("w1").reason());
    assertEquals(1.0, r.entry("w1").measuredDensity(), 0.0);
    assertArrayEquals(new long[] {16 * 8, 8}, sd.getArrForVarName("w1_packed").shape());
    PackedMatmulOp w0 =
        sd.getOps().values().stream()
            .map(o -> o.getOp())
            .filter(o -> o instanceof PackedMatmulOp)
            .map(o -> (PackedMatmulOp) o)
            .filter(o -> o.layout().rows() == 16)
            .findFirst()
            .orElseThrow();
    assertEquals(some, w0.layout().toMask(), "w0 packed at the given mask");

    SameDiff fresh = SameDiffSparsifierTest.mlp();
    int ops = fresh.getOps().size();
    Map<String, SparseMask> unknown = Map.of("nope", some);
    Exception e =
        assertThrows(
            IllegalArgumentException.class, () -> Sparsify.apply(config("packed"), fresh, unknown));
    assertTrue(e.getMessage().contains("'nope' is not a trainable rank-2 weight"), e.getMessage());
    Map<String, SparseMask> shape = Map.of("w1", some);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> Sparsify.apply(config("packed"), fresh, shape));
    assertTrue(e.getMessage().contains("allowed: the weight's shape [32, 32]"), e.getMessage());
    Map<String, SparseMask> pattern = Map.of("w1", PatternSpec.block(16).random(32, 32, 0.5, 3));
    e =
        assertThrows(
            IllegalArgumentException.class, () -> Sparsify.apply(config("packed"), fresh, pattern));
    assertTrue(e.getMessage().contains("allowed: the config's pattern block8"), e.getMessage());
    SparsityConfig excluding =
        SparsityConfig.builder()
            .pattern("block8")
            .storage("packed")
            .sparsity(0.5)
            .keepFirstDense(false)
            .exclude("w1")
            .build();
    Map<String, SparseMask> excluded = Map.of("w1", all);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> Sparsify.apply(excluding, fresh, excluded));
    assertTrue(e.getMessage().contains("'w1', which the config's include"), e.getMessage());
    assertTrue(e.getMessage().contains("allowed: masks for the weights the config selects"));
    assertEquals(ops, fresh.getOps().size(), "the graph is unchanged after the refusals");
    assertTrue(fresh.hasVariable("w1"));
  }
}
