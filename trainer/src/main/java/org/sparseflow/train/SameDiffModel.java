package org.sparseflow.train;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.BaseListener;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.examples.data.Batches;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * {@link TrainableModel} over a SameDiff graph in the reference-GPT convention: placeholders {@code
 * input} and {@code label} [batch, T] holding token ids, output {@code logits} [batch*T, V], scalar
 * loss {@code loss} (mean per-token cross-entropy). T is fixed by the graph; shorter contexts
 * (generation) are right-padded, which a causal model ignores.
 */
public final class SameDiffModel implements TrainableModel {

  public static final String INPUT = "input";
  public static final String LABEL = "label";
  public static final String LOGITS = "logits";
  public static final String LOSS = "loss";

  private final SameDiff sd;
  private final int vocab;
  private final int context;

  public SameDiffModel(SameDiff sd, int vocab, int context) {
    for (String name : new String[] {INPUT, LABEL, LOGITS, LOSS}) {
      if (!sd.hasVariable(name)) {
        throw new IllegalArgumentException(
            "model: SameDiff graph has no variable '"
                + name
                + "'; expected placeholders input/label [batch, T], outputs logits [batch*T, V] and"
                + " loss");
      }
    }
    if (sd.getTrainingConfig() == null) {
      throw new IllegalArgumentException(
          "model: SameDiff graph has no TrainingConfig; set one with an updater");
    }
    this.sd = sd;
    this.vocab = vocab;
    this.context = context;
  }

  public static SameDiffModel load(byte[] bytes, int vocab, int context) throws IOException {
    SparseFlowOps.registerAll(); // SameDiff.load re-creates SparseFlow ops by name
    SameDiff sd = SameDiff.load(new ByteArrayInputStream(bytes), true);
    return new SameDiffModel(sd, vocab, context);
  }

  /**
   * Computes the step's loss from the logits as they are produced during fit: in M2.1 training runs
   * only the loss op's gradient, never the loss op itself, and History's loss curve stays empty for
   * fit(DataSet).
   */
  private static final class LossCapture extends BaseListener {
    double loss = Double.NaN;

    @Override
    public boolean isActive(Operation operation) {
      return operation == Operation.TRAINING;
    }

    @Override
    public void opExecution(
        SameDiff sd, At at, MultiDataSet batch, SameDiffOp op, OpContext ctx, INDArray[] outputs) {
      List<String> outs = op.getOutputsOfOp();
      int i = outs == null ? -1 : outs.indexOf(LOGITS);
      if (i >= 0 && outputs != null && i < outputs.length && outputs[i] != null && batch != null) {
        loss = crossEntropy(outputs[i], batch.getLabels(0));
      }
    }
  }

  /**
   * Mean over rows of logsumexp(logits) - logits[target]; logits [N, V], targets N ids in any
   * shape.
   */
  static double crossEntropy(INDArray logits, INDArray targets) {
    INDArray l = logits.castTo(DataType.DOUBLE);
    INDArray max = l.max(true, 1);
    INDArray lse =
        Transforms.log(Transforms.exp(l.subColumnVector(max), false).sum(true, 1), false).addi(max);
    long[] t = targets.castTo(DataType.INT64).reshape(-1).toLongVector();
    double sum = 0;
    for (int r = 0; r < t.length; r++) {
      sum += lse.getDouble(r, 0) - l.getDouble(r, t[r]);
    }
    return sum / t.length;
  }

  @Override
  public String kind() {
    return "samediff";
  }

  @Override
  public int vocabSize() {
    return vocab;
  }

  public int context() {
    return context;
  }

  @Override
  public double fit(int[][] windows) {
    LossCapture capture = new LossCapture();
    int[][] w = windows;
    sd.fit(
        new DataSet(
            Batches.inputIndices(w, DataType.FLOAT), Batches.targetIndices(w, DataType.FLOAT)),
        capture);
    // a rewritten graph may produce the logits under another op; then measure the loss after the
    // step
    return Double.isNaN(capture.loss) ? loss(w) : capture.loss;
  }

  @Override
  public double loss(int[][] windows) {
    Map<String, INDArray> out =
        sd.output(
            Map.of(
                INPUT,
                Batches.inputIndices(windows, DataType.FLOAT),
                LABEL,
                Batches.targetIndices(windows, DataType.FLOAT)),
            LOSS);
    // the reference GPT's "loss" is per token ([B*T]) in M2.1, not a scalar: average it (a scalar
    // averages to itself)
    return out.get(LOSS).castTo(DataType.DOUBLE).meanNumber().doubleValue();
  }

  @Override
  public double[] nextTokenProbabilities(int[] ctx) {
    int n = Math.min(ctx.length, context);
    int[][] w = new int[1][context + 1];
    System.arraycopy(ctx, ctx.length - n, w[0], 0, n);
    INDArray logits =
        sd.output(Map.of(INPUT, Batches.inputIndices(w, DataType.FLOAT)), LOGITS).get(LOGITS);
    double[] row = logits.getRow(n - 1).castTo(DataType.DOUBLE).toDoubleVector();
    double max = Double.NEGATIVE_INFINITY;
    for (double v : row) {
      max = Math.max(max, v);
    }
    double sum = 0;
    for (int i = 0; i < row.length; i++) {
      row[i] = Math.exp(row[i] - max);
      sum += row[i];
    }
    for (int i = 0; i < row.length; i++) {
      row[i] /= sum;
    }
    return row;
  }

  @Override
  public long parameterCount() {
    long n = 0;
    for (var v : sd.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE && v.getArr() != null) {
        n += v.getArr().length();
      }
    }
    return n;
  }

  @Override
  public void save(OutputStream out) throws IOException {
    sd.save(out, true);
  }

  @Override
  public SameDiff unwrap() {
    return sd;
  }
}
