package org.sparseflow.layers.sparsify;

import org.deeplearning4j.nn.conf.layers.BaseRecurrentLayer;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.SelfAttentionLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.Bidirectional;
import org.deeplearning4j.nn.conf.layers.recurrent.LastTimeStep;
import org.deeplearning4j.nn.conf.layers.samediff.AbstractSameDiffLayer;
import org.sparseflow.layers.config.SparsityConfig;

/** Why a DL4J layer that no sparsifier took stays dense, in words for the report. */
final class DenseReasons {

  private DenseReasons() {}

  /**
   * "recurrent (LSTM)" or "convolution (ConvolutionLayer)" for layer kinds SparseFlow has no sparse
   * version of, else null. Wrappers (Bidirectional, LastTimeStep) report what they wrap.
   */
  static String unsupportedKind(Layer layer) {
    Layer inner = layer;
    if (inner instanceof Bidirectional b) {
      inner = b.getFwd();
    } else if (inner instanceof LastTimeStep l) {
      inner = l.getUnderlying();
    }
    String type = inner.getClass().getSimpleName();
    // RnnOutputLayer is a per-time-step dense layer, not a recurrent one: match the classes, not
    // "Rnn"
    if (inner instanceof BaseRecurrentLayer || type.contains("GRU")) {
      return "recurrent (" + type + ")";
    }
    if (inner instanceof ConvolutionLayer || type.contains("Convolution")) {
      return "convolution (" + type + ")";
    }
    return null;
  }

  /**
   * When the config's attention section selects this layer and asks for sparse attention but the
   * layer was left as it was, says why; else null.
   */
  static String attentionNotApplied(SparsityConfig cfg, String name, Layer layer) {
    if (cfg.getAttention() == null
        || !cfg.getAttention().sparseAttentionRequested()
        || !cfg.attentionSelects(name)) {
      return null;
    }
    if (layer instanceof SelfAttentionLayer s) {
      if (!cfg.getAttention().isReplaceSelfAttention()) {
        return "attention section not applied: DL4J SelfAttentionLayer is bidirectional and stays"
            + " as it is unless attention.replaceSelfAttention: true (which replaces it with"
            + " the causal CausalSelfAttentionLayer)";
      }
      return "attention section not applied: replaceSelfAttention needs projectInput and nHeads *"
          + " headSize == nOut (got projectInput="
          + s.isProjectInput()
          + ", nHeads="
          + s.getNHeads()
          + ", headSize="
          + s.getHeadSize()
          + ", nOut="
          + s.getNOut()
          + ")";
    }
    if (layer instanceof AbstractSameDiffLayer
        && layer.getClass().getSimpleName().contains("Attention")) {
      return "attention section not applied: SparseFlow has no sparse version of "
          + layer.getClass().getSimpleName();
    }
    return null;
  }
}
