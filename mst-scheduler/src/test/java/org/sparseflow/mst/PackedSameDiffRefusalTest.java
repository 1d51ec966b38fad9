package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.samediff.SparseFlowOps;

/** MST changes kept blocks; a SameDiff graph on packed storage (fixed blocks) is refused. */
class PackedSameDiffRefusalTest {

  @Test
  void mstRefusesPackedStorageWithAClearError() {
    Nd4j.getRandom().setSeed(1);
    PackedLayout l = PackedLayout.of((BlockMask) PatternSpec.block(8).random(16, 16, 0.5, 3));
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.FLOAT, -1, 16);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 16);
    SDVariable w = sd.var("w_packed", Nd4j.randn(DataType.FLOAT, l.packedShape()));
    SDVariable y = SparseFlowOps.packedMatmul(sd, "y", in, w, l, null);
    sd.loss().meanSquaredError("loss", label, y, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-3))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    MstListener mst = new MstListener(SameDiffListenerTest.config(10));
    mst.addTo(sd);
    DataSet d = new DataSet(Nd4j.randn(DataType.FLOAT, 4, 16), Nd4j.randn(DataType.FLOAT, 4, 16));
    Exception e = assertThrows(RuntimeException.class, () -> sd.fit(d));
    Throwable root = e;
    while (!(root instanceof IllegalArgumentException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertTrue(root.getMessage().contains("packed-storage matmuls"), root.getMessage());
    assertTrue(root.getMessage().contains("storage: masked for MST"), root.getMessage());
  }
}
