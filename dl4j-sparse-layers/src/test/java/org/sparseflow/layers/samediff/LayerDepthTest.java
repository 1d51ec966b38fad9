package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;

/**
 * keepFirstDense / keepLastDense count layers by depth from the graph inputs, not op order: a
 * shallow auxiliary head built last is a first layer, the deep head built before it is the last.
 */
class LayerDepthTest {

  @Test
  void firstAndLastFollowDepthNotOpOrder() {
    Nd4j.getRandom().setSeed(2);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, -1, 16);
    SDVariable h = x;
    for (int i = 0; i < 3; i++) {
      h = sd.nn.tanh(h.mmul(ThirdPartyGraphs.weight(sd, "trunk" + i, 16, 16, 0.3)));
    }
    SDVariable residual = h.add(x); // a skip connection does not make the head shallower
    residual.mmul("main_out", ThirdPartyGraphs.weight(sd, "main_head", 16, 16, 0.3));
    x.mmul("aux_out", ThirdPartyGraphs.weight(sd, "aux_head", 16, 16, 0.3)); // created last
    SparsifyReport r =
        Sparsify.apply(SparsityConfig.fromYaml("pattern: block8\nsparsity: 0.5\n"), sd).report();
    assertEquals(Status.DENSE, r.entry("trunk0").status(), r.toString());
    assertTrue(r.entry("trunk0").reason().contains("keepFirstDense"), r.toString());
    assertEquals(Status.DENSE, r.entry("aux_head").status(), r.toString());
    assertTrue(r.entry("aux_head").reason().contains("keepFirstDense"), r.toString());
    assertTrue(r.entry("aux_head").reason().contains("first = 1, last = 4"), r.toString());
    assertEquals(Status.DENSE, r.entry("main_head").status(), r.toString());
    assertTrue(r.entry("main_head").reason().contains("keepLastDense"), r.toString());
    for (String w : new String[] {"trunk1", "trunk2"}) {
      assertEquals(Status.SPARSE, r.entry(w).status(), r.toString());
    }
  }
}
