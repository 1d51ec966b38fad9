package org.sparseflow.train;

import java.util.ArrayList;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.train.optim.Optimizers;

/**
 * The reference GPT sizes behind the catalog names gpt-mini / gpt-small (SameDiff reference
 * builder).
 */
public final class GptModels {

  private GptModels() {}

  /** Architecture of a named model for a vocabulary and context length. */
  public static GptConfig config(String name, int vocab, int context, long seed) {
    if (!GptConfig.NAMES.contains(name)) {
      throw new IllegalArgumentException(
          "--model: unknown GPT '" + name + "'; allowed gpt-tiny, gpt-mini, gpt-small");
    }
    return GptConfig.named(name, vocab, context, seed);
  }

  static TrainableModel create(String name, TrainConfig c, int vocab) {
    GptConfig g = config(name, vocab, c.contextLength, c.seed);
    Optimizers o = c.optimizers();
    SameDiff sd = SameDiffGpt.build(g, o.updater());
    if (!o.regularization().isEmpty()) {
      sd.getTrainingConfig().setRegularization(new ArrayList<>(o.regularization()));
    }
    return new SameDiffModel(sd, vocab, c.contextLength);
  }
}
