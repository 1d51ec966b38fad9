package org.sparseflow.dataflow.capture;

import org.sparseflow.dataflow.graph.Tensor;

/** One decoder layer's weights and the activations kept between its forward and backward pass. */
final class LayerTensors {
  Tensor x,
      g1,
      b1,
      h1,
      wqkv,
      bqkv,
      qkv,
      qkvb,
      q,
      k,
      v,
      p,
      ctxm,
      wo,
      bo,
      ob,
      x1,
      g2,
      b2,
      h2,
      w1,
      bb1,
      f,
      fb,
      gl,
      w2,
      bb2,
      x2;

  LayerTensors copyWeights() {
    LayerTensors c = new LayerTensors();
    c.g1 = g1;
    c.b1 = b1;
    c.wqkv = wqkv;
    c.bqkv = bqkv;
    c.wo = wo;
    c.bo = bo;
    c.g2 = g2;
    c.b2 = b2;
    c.w1 = w1;
    c.bb1 = bb1;
    c.w2 = w2;
    c.bb2 = bb2;
    return c;
  }
}
