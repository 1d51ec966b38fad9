package org.sparseflow.train;

import java.util.ArrayList;
import java.util.List;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.mst.core.FlopCounter;

/**
 * MST's FLOP model ({@link FlopCounter}) for the reference SameDiff GPT, with one linear per
 * SameDiff weight ({@code h<i>_attn_wq/wk/wv/wo}, {@code h<i>_mlp_fc/proj}, {@code lm_head}) so
 * per-weight densities map 1:1. Dense and sparse runs are counted with the same formulas, so their
 * FLOPs compare fairly.
 */
public final class GptFlops {

  private GptFlops() {}

  public static FlopCounter counter(GptConfig g, int batch) {
    int c = g.dModel();
    List<FlopCounter.Linear> ls = new ArrayList<>();
    for (int i = 0; i < g.layers(); i++) {
      String p = "h" + i + "_";
      for (String w : new String[] {"attn_wq", "attn_wk", "attn_wv", "attn_wo"}) {
        ls.add(new FlopCounter.Linear(p + w, c, c));
      }
      ls.add(new FlopCounter.Linear(p + "mlp_fc", c, 4L * c));
      ls.add(new FlopCounter.Linear(p + "mlp_proj", 4L * c, c));
    }
    ls.add(new FlopCounter.Linear(g.tiedHead() ? "wte" : "lm_head", c, g.vocab()));
    return counter(g, batch, ls);
  }

  /**
   * MST's FLOP model of GPT {@code g} at {@code batch} sequences per step with the given linears
   * (named as the model names its weights); attention scores and the other dense work follow {@link
   * FlopCounter}'s GPT formulas.
   */
  public static FlopCounter counter(GptConfig g, int batch, List<FlopCounter.Linear> linears) {
    return new FlopCounter(
        (long) batch * g.context(),
        linears,
        g.layers(),
        batch,
        g.heads(),
        g.headSize(),
        g.context(),
        FlopCounter.gptExtraDenseFlops(g.layers(), g.dModel(), g.context(), g.vocab(), batch));
  }

  /** The GPT architecture of a catalog model name, or null for other models. */
  public static GptConfig architecture(TrainConfig c, int vocab) {
    try {
      return GptModels.config(c.model, vocab, c.contextLength, c.seed);
    } catch (IllegalArgumentException notAGpt) {
      return null;
    }
  }
}
