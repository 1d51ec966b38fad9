package org.sparseflow.ops.packed;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/** A GPT-sized projection (512 x 512, block16, 50 %): many panels with several runs each. */
class PackedLargeTest {
  @Test
  void forwardOfAGptSizedProjectionMatchesTheDenseProduct() {
    BlockMask m = (BlockMask) PatternSpec.block(16).random(512, 512, 0.5, 7);
    PackedLayout l = PackedLayout.of(m);
    INDArray w = Nd4j.randn(DataType.FLOAT, 512, 512).muli(m.toDense(DataType.FLOAT));
    INDArray x = Nd4j.randn(DataType.FLOAT, 512, 512);
    INDArray y = PackedBlockLinear.forward(x, PackedBlockLinear.pack(w, l), null, l);
    assertTrue(x.mmul(w).equalsWithEps(y, 1e-3));
  }
}
