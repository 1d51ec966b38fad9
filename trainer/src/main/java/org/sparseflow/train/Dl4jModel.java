package org.sparseflow.train;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.examples.data.Batches;

/**
 * {@link TrainableModel} over a DL4J {@link ComputationGraph} (one input, one output) or {@link
 * MultiLayerNetwork} that takes token ids [batch, T] and outputs next-token probabilities. The
 * output layout (NCW [B, V, T], NWC [B, T, V] or rows [B*T, V]) is detected once with a probe
 * forward pass, and the one-hot labels are built in the same layout.
 */
public final class Dl4jModel implements TrainableModel {

  /** Layout of the model's output (and therefore of its labels). */
  enum Layout {
    NCW,
    NWC,
    ROWS
  }

  private Model model; // replaced when MST rebuilds a packed network for a new phase
  private final int vocab;
  private final Layout layout;

  public Dl4jModel(Model model, int expectedVocab) {
    if (!(model instanceof ComputationGraph) && !(model instanceof MultiLayerNetwork)) {
      throw new IllegalArgumentException(
          "model: "
              + model.getClass().getName()
              + " is not supported; expected a DL4J ComputationGraph or MultiLayerNetwork");
    }
    this.model = model;
    this.vocab = expectedVocab;
    this.layout = probeLayout();
  }

  /**
   * Reads a model written by {@link #save} or by DL4J's ModelSerializer (with or without updater).
   */
  public static Dl4jModel load(InputStream in, int expectedVocab) throws IOException {
    byte[] bytes = in.readAllBytes();
    Model m;
    try {
      m = ModelSerializer.restoreComputationGraph(new ByteArrayInputStream(bytes), true);
    } catch (Exception notAGraph) {
      try {
        m = ModelSerializer.restoreMultiLayerNetwork(new ByteArrayInputStream(bytes), true);
      } catch (Exception notANetwork) {
        throw new IOException(
            "not a DL4J ComputationGraph or MultiLayerNetwork model zip ("
                + notAGraph.getMessage()
                + ")");
      }
    }
    return new Dl4jModel(m, expectedVocab);
  }

  private Layout probeLayout() {
    int t = 3;
    INDArray probe = Nd4j.zeros(DataType.FLOAT, 1, t);
    INDArray out;
    try {
      out = output(probe);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "model: a forward pass on token ids of shape [1, "
              + t
              + "] failed; the model must take token ids [batch, T] as input ("
              + e.getMessage()
              + ")",
          e);
    }
    long[] s = out.shape();
    if (s.length == 3 && s[1] == vocab && s[2] == t) {
      return Layout.NCW;
    }
    if (s.length == 3 && s[2] == vocab && s[1] == t) {
      return Layout.NWC;
    }
    if (s.length == 2 && s[0] == t && s[1] == vocab) {
      return Layout.ROWS;
    }
    throw new IllegalArgumentException(
        "model: output shape "
            + Arrays.toString(s)
            + " for input [1, "
            + t
            + "] does not match the corpus vocabulary of "
            + vocab
            + " characters; expected [1, "
            + vocab
            + ", "
            + t
            + "], [1, "
            + t
            + ", "
            + vocab
            + "] or ["
            + t
            + ", "
            + vocab
            + "]");
  }

  private INDArray output(INDArray input) {
    if (model instanceof ComputationGraph g) {
      return g.outputSingle(false, input);
    }
    return ((MultiLayerNetwork) model).output(input, false);
  }

  private INDArray labels(int[][] windows) {
    return switch (layout) {
      case NCW -> Batches.targetOneHotNcw(windows, vocab, DataType.FLOAT);
      case NWC -> Batches.targetOneHotNwc(windows, vocab, DataType.FLOAT);
      case ROWS -> Batches.targetOneHotRows(windows, vocab, DataType.FLOAT);
    };
  }

  @Override
  public String kind() {
    return "dl4j";
  }

  @Override
  public int vocabSize() {
    return vocab;
  }

  @Override
  public double fit(int[][] windows) {
    DataSet ds = new DataSet(Batches.inputIndices(windows, DataType.FLOAT), labels(windows));
    if (model instanceof ComputationGraph g) {
      g.fit(ds);
    } else {
      ((MultiLayerNetwork) model).fit(ds);
    }
    // DL4J's score is the loss summed over time steps and averaged over the batch: per-token = / T
    double score = model.score();
    return layout == Layout.ROWS ? score : score / (windows[0].length - 1);
  }

  @Override
  public double loss(int[][] windows) {
    INDArray probs =
        toRows(
            output(Batches.inputIndices(windows, DataType.FLOAT)),
            windows.length,
            windows[0].length - 1);
    INDArray target = Batches.targetOneHotRows(windows, vocab, DataType.FLOAT);
    // mean over tokens of -log p(target); clamp avoids -inf for a zero probability
    INDArray p = probs.mul(target).sum(1);
    return -Transforms.log(Transforms.max(p, 1e-12), false).meanNumber().doubleValue();
  }

  /** Converts the output to rows [B*T, V] with row i*T + j = window i, position j. */
  private INDArray toRows(INDArray out, int b, int t) {
    return switch (layout) {
      case NCW -> out.permute(0, 2, 1).dup('c').reshape(b * (long) t, vocab);
      case NWC -> out.dup('c').reshape(b * (long) t, vocab);
      case ROWS -> out;
    };
  }

  @Override
  public double[] nextTokenProbabilities(int[] context) {
    int[][] w = new int[1][context.length + 1];
    System.arraycopy(context, 0, w[0], 0, context.length);
    INDArray rows = toRows(output(Batches.inputIndices(w, DataType.FLOAT)), 1, context.length);
    return rows.getRow(context.length - 1).castTo(DataType.DOUBLE).toDoubleVector();
  }

  @Override
  public long parameterCount() {
    return model.numParams();
  }

  @Override
  public void save(OutputStream out) throws IOException {
    ModelSerializer.writeModel(model, out, true);
  }

  /**
   * Trains on {@code next} from now on: the same network rebuilt (e.g. by MST with other block
   * slots for packed weights), so the output layout is unchanged.
   */
  void replace(Model next) {
    if (!(next instanceof ComputationGraph) && !(next instanceof MultiLayerNetwork)) {
      throw new IllegalArgumentException(
          "next: "
              + next.getClass().getName()
              + "; expected a ComputationGraph or MultiLayerNetwork");
    }
    model = next;
  }

  @Override
  public Object unwrap() {
    return model;
  }
}
