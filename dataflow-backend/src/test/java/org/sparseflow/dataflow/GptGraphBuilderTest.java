package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;

class GptGraphBuilderTest {

  private static GptSpec small() {
    return new GptSpec()
        .name("t")
        .layers(3)
        .dModel(64)
        .heads(4)
        .ffn(256)
        .seq(32)
        .batch(2)
        .vocab(100);
  }

  @Test
  void denseMatmulFlopsMatchTheClosedForm() {
    GptSpec s = small().recompute("none");
    OpGraph g = GptGraphBuilder.build(s, 1);
    double tokens = s.getBatch() * s.getSeq(), d = s.getDModel(), L = s.getLayers(), T = s.getSeq();
    // linear weights 12 d^2 per layer (qkv 3d^2, proj d^2, fc1+fc2 8d^2 with ffn=4d) + LM head d*V;
    // x3 for fwd+bwd
    double linear = 6 * tokens * (L * (3 * d * d + d * d + 2 * d * s.getFfn()) + d * s.getVocab());
    // attention: QK^T and AV, 2*T*d FLOPs per token each, x3 for fwd+bwd
    double attention = 3 * L * 2 * (2 * tokens * T * d);
    double matmul = 0;
    for (OpNode op : g.ops()) {
      if (op.kind().isMatmul()) {
        matmul += op.flops();
      }
    }
    assertEquals(linear + attention, matmul, 1e-6 * matmul);
  }

  @Test
  void sparseLinearFlopsScaleWithDensityAndEveryWeightHasOneUpdate() {
    OpGraph dense = GptGraphBuilder.build(small(), 1);
    OpGraph sparse = GptGraphBuilder.build(small().sparsity(0.75), 1);
    double denseSparseable = 0, sparseSparse = 0;
    for (OpNode op : dense.ops()) {
      if (op.kind() == OpKind.LINEAR && op.layer() >= 0) {
        denseSparseable += op.flops();
      }
    }
    for (OpNode op : sparse.ops()) {
      if (op.kind() == OpKind.SPARSE_LINEAR) {
        sparseSparse += op.flops();
      }
    }
    assertEquals(0.25 * denseSparseable, sparseSparse, 1e-6 * denseSparseable);
    Set<Integer> updated = new HashSet<>();
    int weights = 0;
    for (Tensor t : sparse.tensors()) {
      if (t.kind() == TensorKind.WEIGHT && sparse.producer(t) == null) {
        weights++;
      }
    }
    for (OpNode op : sparse.ops()) {
      if (op.phase() != Phase.OPTIMIZER) {
        continue;
      }
      assertTrue(updated.add(op.inputs().get(0).id()), "one update per gradient");
    }
    assertEquals(weights, updated.size());
  }

  @Test
  void fullRecomputeAddsOneForwardAndSavesLessActivation() {
    OpGraph sel = GptGraphBuilder.build(small().recompute("attention"), 1);
    OpGraph full = GptGraphBuilder.build(small().recompute("full"), 1);
    assertTrue(full.totalFlops() > sel.totalFlops());
    assertTrue(full.ops().size() > sel.ops().size());
  }

  @Test
  void badSpecsNameTheField() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> small().heads(5).validate());
    assertTrue(e.getMessage().contains("heads"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> small().sparsity(1.0).validate());
    assertTrue(e.getMessage().contains("sparsity"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> small().pattern("block0").validate());
    assertTrue(e.getMessage().contains("block0"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> GptSpec.preset("gpt5"));
    assertTrue(
        e.getMessage().contains("gpt5") && e.getMessage().contains("gpt3-13b"), e.getMessage());
  }

  @Test
  void specJsonRoundTripsAndRejectsBadFields() {
    GptSpec s = GptSpec.preset("gpt3-13b").sparsity(0.875).pattern("block16").recompute("full");
    s.setSparseFc2(false);
    GptSpec back = GptSpec.fromJson(s.toJson());
    assertEquals(s, back);
    assertEquals(
        GptGraphBuilder.build(s, 1).totalFlops(), GptGraphBuilder.build(back, 1).totalFlops());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> GptSpec.fromJson("{\"layerz\": 3}"));
    assertTrue(e.getMessage().contains("layerz"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                GptSpec.fromJson(
                    s.toJson().replace("\"recompute\" : \"full\"", "\"recompute\" : \"some\"")));
    assertTrue(e.getMessage().contains("some"), e.getMessage());
  }

  @Test
  void presetParameterCountsAreTheKnownSizes() {
    // GPT-2 small ~124M with tied embeddings and a 1024 context; GPT-3 13B ~12.9B
    assertEquals(124e6, GptSpec.preset("gpt2-small").parameterCount(), 1e6);
    assertEquals(12.85e9, GptSpec.preset("gpt3-13b").parameterCount(), 0.1e9);
  }
}
