package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.compile.FusedKernel;
import org.sparseflow.dataflow.compile.Fuser;
import org.sparseflow.dataflow.compile.FusionRules;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpNode;

class FusionTest {
  private final OpGraph g =
      GptGraphBuilder.build(
          new GptSpec().layers(2).dModel(32).heads(2).ffn(128).seq(16).vocab(50).sparsity(0.5), 1);

  @Test
  void everyOpIsInExactlyOneKernelInOrder() {
    List<FusedKernel> ks = Fuser.withBuiltinRules().fuse(g);
    Set<Integer> seen = new HashSet<>();
    int last = -1;
    for (FusedKernel k : ks) {
      for (OpNode op : k.ops()) {
        assertTrue(seen.add(op.id()));
        assertEquals(last + 1, op.id(), "kernels keep execution order");
        last = op.id();
      }
    }
    assertEquals(g.ops().size(), seen.size());
    assertTrue(
        ks.size() < g.ops().size() / 2,
        "fusion groups ops: " + ks.size() + " kernels for " + g.ops().size() + " ops");
  }

  @Test
  void attentionBlockAndMatmulEpiloguesAreFused() {
    List<FusedKernel> ks = Fuser.withBuiltinRules().fuse(g);
    FusedKernel att =
        ks.stream().filter(k -> k.rule().equals("attention")).findFirst().orElseThrow();
    List<String> names = att.ops().stream().map(OpNode::opName).toList();
    assertTrue(names.containsAll(List.of("matmul", "mul", "softmax")), names.toString());
    assertTrue(
        ks.stream()
            .anyMatch(
                k ->
                    k.rule().equals("matmul_bias_activation")
                        && k.ops().stream().anyMatch(o -> o.opName().equals("gelu"))));
    assertTrue(ks.stream().anyMatch(k -> k.rule().equals("attention_backward")));
  }

  @Test
  void rulesAreDataAndAnEmptyRuleSetFusesNothing() {
    assertEquals(g.ops().size(), new Fuser(List.of()).fuse(g).size());
    var only =
        FusionRules.fromJson(
            "{\"rules\":[{\"name\":\"mm_act\",\"steps\":[{\"kinds\":[\"SPARSE_LINEAR\"]},{\"kinds\":[\"ELEMENTWISE\"]},{\"kinds\":[\"ACTIVATION\"]}]}]}");
    List<FusedKernel> ks = new Fuser(only).fuse(g);
    assertTrue(ks.stream().anyMatch(k -> k.rule().equals("mm_act") && k.ops().size() == 3));
    assertTrue(ks.stream().allMatch(k -> k.rule().equals("mm_act") || k.ops().size() == 1));
  }

  @Test
  void badRuleFilesNameTheProblem() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                FusionRules.fromJson(
                    "{\"rules\":[{\"name\":\"x\",\"steps\":[{\"kinds\":[\"CONV\"]}]}]}"));
    assertTrue(
        e.getMessage().contains("CONV") && e.getMessage().contains("LINEAR"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                FusionRules.fromJson(
                    "{\"rules\":[{\"name\":\"x\",\"steps\":[{\"kinds\":[\"LINEAR\"],\"repeat\":\"#\"}]}]}"));
    assertTrue(e.getMessage().contains("repeat"), e.getMessage());
  }
}
