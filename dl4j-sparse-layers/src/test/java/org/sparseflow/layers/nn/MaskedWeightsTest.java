package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

class MaskedWeightsTest {

  /** The mask cache's change detection: bitwise equality, any single changed element is seen. */
  @Test
  void sameContentSeesEverySingleElementChange() {
    INDArray a = Nd4j.rand(DataType.FLOAT, 32, 48).gt(0.5).castTo(DataType.FLOAT);
    INDArray b = a.dup();
    assertTrue(MaskedWeights.sameContent(a, b));
    for (long[] at : new long[][] {{0, 0}, {31, 47}, {17, 3}}) {
      INDArray c = a.dup();
      c.putScalar(at, 1.0f - c.getFloat(at));
      assertFalse(MaskedWeights.sameContent(a, c), "change at " + at[0] + "," + at[1]);
    }
    assertTrue(MaskedWeights.sameContent(a, a.dup('f')), "other order: compared by value");
    assertFalse(MaskedWeights.sameContent(a, a.castTo(DataType.DOUBLE)), "other type");
    assertFalse(MaskedWeights.sameContent(a, a.reshape(48, 32)), "other shape");
    assertTrue(
        MaskedWeights.sameContent(
            a.get(NDArrayIndex.interval(0, 4), NDArrayIndex.all()),
            b.get(NDArrayIndex.interval(0, 4), NDArrayIndex.all())),
        "views: compared by value");
  }

  /**
   * Params are 'f' views at an offset into the network's flat vector (the layout that once crashed
   * memcmp).
   */
  @Test
  void sameContentOnParamStyleViews() {
    INDArray flat = Nd4j.rand(DataType.FLOAT, 1, 4000).gt(0.5).castTo(DataType.FLOAT);
    INDArray view =
        flat.get(NDArrayIndex.point(0), NDArrayIndex.interval(1000, 1000 + 32 * 48))
            .reshape('f', 32, 48);
    INDArray copy = view.dup(view.ordering());
    assertTrue(MaskedWeights.sameContent(copy, view));
    flat.putScalar(0, 1000 + 5 * 1, 1.0f - flat.getFloat(0, 1000 + 5));
    assertFalse(MaskedWeights.sameContent(copy, view), "a write through the flat vector is seen");
    flat.putScalar(0, 999, 7f); // outside the view
    flat.putScalar(0, 1000 + 32 * 48, 7f);
    assertTrue(
        MaskedWeights.sameContent(view.dup(view.ordering()), view),
        "neighbours outside the view ignored");
  }
}
