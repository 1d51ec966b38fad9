package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.impl.reduce.Mmul;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarDivision;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarMultiplication;
import org.nd4j.linalg.api.ops.impl.transforms.custom.SoftMax;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.layers.sparsify.SparsityPlanner;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.SparseAttentionOp;
import org.sparseflow.ops.samediff.SparseAttentionOps;
import org.sparseflow.ops.samediff.SparseFlowOps;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * Rewrites a SameDiff graph in place:
 *
 * <ul>
 *   <li>every {@code matmul(x, W)} (no transposes, alpha 1) whose second input is a trainable
 *       rank-2 variable selected by the config becomes {@link SparseFlowOps#sparseMatmul} with a
 *       0/1 mask constant {@code <W>_mask} (W is zeroed outside it); all uses of W must be such
 *       matmuls;
 *   <li>the causal attention subgraph {@code matmul(Q, K, transposeB) -> mul/div by a scalar ->
 *       add(causal bias constant) -> softmax(last dim) -> matmul(., V)} becomes {@link
 *       SparseAttentionOps#sparseAttention} when {@code attention.pattern} is set and {@code
 *       attention.layers} matches the softmax output name.
 * </ul>
 *
 * The graph is edited rather than rebuilt: the replaced op and its output variable are removed and
 * the new op's output takes the old output's name, so every consumer, loss variable and user
 * reference by name is unchanged. Must run before the gradient function exists (i.e. before the
 * first {@code fit()} / {@code calculateGradients}).
 */
public final class SameDiffSparsifier {
  private SameDiffSparsifier() {}

  public static SparsifyReport rewrite(SparsityConfig cfg, SameDiff sd) {
    if (sd.hasGradientFunction()) {
      throw new IllegalArgumentException(
          "model = a SameDiff graph whose gradient function already exists (fit() or "
              + "calculateGradients() was called); allowed: apply Sparsify before training starts");
    }
    SparseFlowOps.registerAll();
    List<Entry> entries = new ArrayList<>();
    rewriteAttention(cfg, sd, entries);
    rewriteMatmuls(cfg, sd, entries);
    renameOpsNamedLikeForeignVariables(sd);
    Set<String> reported = new HashSet<>();
    entries.forEach(e -> reported.add(e.name()));
    entries.addAll(LinearOps.unaccounted(sd, reported));
    return new SparsifyReport(
        "pattern="
            + cfg.getPattern()
            + " sparsity="
            + cfg.getSparsity()
            + " distribution="
            + cfg.getDistribution()
            + " initialMask="
            + cfg.getInitialMask()
            + " seed="
            + cfg.getSeed(),
        entries);
  }

  // ------------------------------------------------------------------------------------------
  // matmuls
  private static void rewriteMatmuls(SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    // weight name -> matmul ops using it, in graph (creation = topological) order
    Map<String, List<SameDiffOp>> uses = new LinkedHashMap<>();
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      if (!LinearOps.isLinear(op)) {
        continue;
      }
      String w = op.getInputsToOp().get(1);
      SDVariable wv = sd.getVariable(w);
      if (wv == null || wv.getVariableType() != VariableType.VARIABLE) {
        continue;
      }
      long[] shape = wv.getShape();
      if (shape == null || shape.length != 2) {
        continue;
      }
      uses.computeIfAbsent(w, k -> new ArrayList<>()).add(op);
    }
    List<SparsityPlanner.Item> items = new ArrayList<>();
    Map<String, String> blocked = new LinkedHashMap<>();
    for (Map.Entry<String, List<SameDiffOp>> e : uses.entrySet()) {
      String w = e.getKey();
      String why = null;
      for (SameDiffOp op : e.getValue()) {
        if (!plainMatmul(op)) {
          why = "used by a transposed/scaled matmul '" + op.getName() + "'";
        }
      }
      if (why == null) {
        for (String consumer : sd.getVariables().get(w).getInputsForOp()) {
          DifferentialFunction f = sd.getOps().get(consumer).getOp();
          if (!LinearOps.isLinear(sd.getOps().get(consumer))
              || !sd.getOps().get(consumer).getInputsToOp().get(1).equals(w)) {
            why = "also used by non-matmul op '" + consumer + "' (" + f.opName() + ")";
            break;
          }
        }
      }
      if (why != null) {
        blocked.put(w, why);
      }
      items.add(new SparsityPlanner.Item(w, List.of(w), Map.of(w, sd.getVariable(w).getShape())));
    }
    List<String> allNames = new ArrayList<>(sd.getVariables().keySet());
    Map<String, SparsityPlanner.Decision> plan = SparsityPlanner.plan(cfg, items, allNames);
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    for (SparsityPlanner.Item it : items) {
      String w = it.name();
      long[] shape = sd.getVariable(w).getShape();
      long n = shape[0] * shape[1];
      SparsityPlanner.Decision d = plan.get(w);
      String why = blocked.get(w);
      if (why != null || !d.sparse()) {
        entries.add(
            new Entry(
                w,
                LinearOps.kind(uses.get(w).get(0)),
                LinearOps.kind(uses.get(w).get(0)),
                Status.DENSE,
                null,
                1.0,
                Double.NaN,
                null,
                n,
                why != null ? why : d.reason()));
        continue;
      }
      INDArray warr = sd.getArrForVarName(w);
      SparseMask mask =
          cfg.getInitialMask() == InitialMask.MAGNITUDE
              ? spec.fromMagnitude(warr, d.density())
              : spec.random(shape[0], shape[1], d.density(), cfg.getSeed() * 31 + w.hashCode());
      INDArray dense01 = mask.toDense(warr.dataType());
      warr.muli(dense01);
      SDVariable maskVar = sd.constant(sd.generateNewVarName(w + "_mask", 0), dense01);
      for (SameDiffOp op : uses.get(w)) {
        String x = op.getInputsToOp().get(0);
        String out = op.getOutputsOfOp().get(0);
        SDVariable bias = LinearOps.bias(sd, op);
        List<String> consumers = removeOp(sd, op);
        SparseFlowOps.sparseMatmul(
            sd, out, sd.getVariable(x), sd.getVariable(w), maskVar, spec, bias, false);
        relink(sd, out, consumers);
      }
      entries.add(
          new Entry(
              w,
              LinearOps.kind(uses.get(w).get(0)),
              SparseMatmulOp.OP_NAME,
              Status.SPARSE,
              spec.toString(),
              d.density(),
              (double) mask.nnz() / n,
              null,
              n,
              d.reason() + " (" + uses.get(w).size() + " matmul(s))"));
    }
  }

  private static boolean plainMatmul(SameDiffOp op) {
    DifferentialFunction f = op.getOp();
    if (!(f instanceof CustomOp c)) {
      return false;
    }
    long[] ia = c.iArgs();
    if (ia != null) {
      for (long v : ia) {
        if (v != 0) {
          return false;
        }
      }
    }
    double[] ta = c.tArgs();
    return ta == null || ta.length == 0 || (ta[0] == 1.0 && (ta.length < 2 || ta[1] == 0.0));
  }

  // ------------------------------------------------------------------------------------------
  // attention
  private static void rewriteAttention(SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    for (SameDiffOp smOp : new ArrayList<>(sd.getOps().values())) {
      if (!(smOp.getOp() instanceof SoftMax) || !sd.getOps().containsKey(smOp.getName())) {
        continue;
      }
      Match m = match(sd, smOp);
      if (m == null) {
        continue;
      }
      String name = m.probs;
      boolean wanted =
          cfg.getAttention() != null
              && cfg.getAttention().sparseAttentionRequested()
              && (cfg.attentionSelects(name) || cfg.attentionSelects(m.out));
      String why = m.problem;
      if (why == null && !wanted) {
        why =
            cfg.getAttention() == null || !cfg.getAttention().sparseAttentionRequested()
                ? "no sparse attention pattern in the config"
                : "not matched by attention.layers " + cfg.getAttention().getLayers();
      }
      if (why == null && wanted && !Backends.javaKernelsRun()) {
        // the matched subgraph already is the dense masked attention; the Java op would not run
        // here
        why =
            "the ND4J backend's executioner cannot run sparseflow_sparse_attention (CUDA, or"
                + " -Dsparseflow.backend=stock); kept as the dense masked subgraph";
      }
      int bs = wanted ? cfg.getAttention().getBlockSize() : 0;
      if (why == null && m.t % bs != 0) {
        why = "context length " + m.t + " is not a multiple of attention.blockSize " + bs;
      }
      AttentionPattern p = null;
      if (why == null) {
        try {
          p = AttentionPattern.parse(cfg.getAttention().getPattern());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(
              "Sparsity config: field 'attention.pattern' has value '"
                  + cfg.getAttention().getPattern()
                  + "': "
                  + e.getMessage(),
              e);
        }
      }
      if (why != null) {
        entries.add(
            new Entry(
                name,
                "causal attention",
                "causal attention",
                Status.DENSE,
                null,
                1.0,
                Double.NaN,
                null,
                0,
                why));
        continue;
      }
      List<String> consumers = sd.getVariables().get(m.out).getInputsForOp();
      consumers = consumers == null ? new ArrayList<>() : new ArrayList<>(consumers);
      for (SameDiffOp op : m.chain) {
        removeOp(sd, op);
      }
      SparseAttentionOps.sparseAttention(
          sd, m.out, sd.getVariable(m.q), sd.getVariable(m.k), sd.getVariable(m.v), p, bs, m.scale);
      relink(sd, m.out, consumers);
      entries.add(
          new Entry(
              name,
              "causal attention",
              "sparseflow attention",
              Status.SPARSE_ATTENTION,
              null,
              1.0,
              Double.NaN,
              p.toString(),
              0,
              "T="
                  + m.t
                  + " blockSize="
                  + bs
                  + " scale="
                  + m.scale
                  + " element density vs dense causal "
                  + String.format(java.util.Locale.ROOT, "%.3f", p.elementDensity(m.t))));
    }
  }

  /**
   * A recognised causal attention chain; {@code problem} != null when recognised but not
   * replaceable.
   */
  private record Match(
      String q,
      String k,
      String v,
      String probs,
      String out,
      double scale,
      int t,
      List<SameDiffOp> chain,
      String problem) {}

  private static Match match(SameDiff sd, SameDiffOp smOp) {
    long[] smArgs = ((CustomOp) smOp.getOp()).iArgs();
    String probs = smOp.getOutputsOfOp().get(0);
    SameDiffOp add = producer(sd, smOp.getInputsToOp().get(0));
    if (add == null || !(add.getOp() instanceof AddOp) || add.getInputsToOp().size() != 2) {
      return null;
    }
    String biasName = null, scaled = null;
    for (String in : add.getInputsToOp()) {
      SDVariable v = sd.getVariable(in);
      if (v.getVariableType() == VariableType.CONSTANT) {
        biasName = in;
      } else {
        scaled = in;
      }
    }
    if (biasName == null || scaled == null) {
      return null;
    }
    SameDiffOp scale = producer(sd, scaled);
    if (scale == null
        || !(scale.getOp() instanceof ScalarMultiplication
            || scale.getOp() instanceof ScalarDivision)) {
      return null;
    }
    double s = ((org.nd4j.linalg.api.ops.BaseScalarOp) scale.getOp()).scalar().getDouble(0);
    if (scale.getOp() instanceof ScalarDivision) {
      s = 1.0 / s;
    }
    SameDiffOp qk = producer(sd, scale.getInputsToOp().get(0));
    if (qk == null || !(qk.getOp() instanceof Mmul)) {
      return null;
    }
    long[] ia = ((CustomOp) qk.getOp()).iArgs();
    if (ia == null || ia.length < 2 || ia[0] != 0 || ia[1] != 1 || (ia.length > 2 && ia[2] != 0)) {
      return null;
    }
    List<String> probsUses = sd.getVariables().get(probs).getInputsForOp();
    if (probsUses == null || probsUses.size() != 1) {
      return null;
    }
    SameDiffOp pv = sd.getOps().get(probsUses.get(0));
    if (!(pv.getOp() instanceof Mmul)
        || !plainMatmul(pv)
        || !pv.getInputsToOp().get(0).equals(probs)) {
      return null;
    }
    List<SameDiffOp> chain = List.of(qk, scale, add, smOp, pv);
    String problem = null;
    if (smArgs != null && smArgs.length > 0 && smArgs[0] != 3 && smArgs[0] != -1) {
      problem = "softmax is not over the last dimension";
    }
    for (SameDiffOp op : List.of(qk, scale, add)) {
      List<String> u = sd.getVariables().get(op.getOutputsOfOp().get(0)).getInputsForOp();
      if (u == null || u.size() != 1) {
        problem = "intermediate '" + op.getOutputsOfOp().get(0) + "' is used outside the attention";
      }
    }
    INDArray bias = sd.getArrForVarName(biasName);
    int t = bias == null ? -1 : (int) bias.size(-1);
    if (bias == null || bias.rank() != 2 || bias.size(0) != bias.size(1)) {
      problem = "bias '" + biasName + "' is not a [T, T] matrix";
    } else if (!isCausal(bias)) {
      problem =
          "bias '" + biasName + "' is not a causal mask (0 on/below the diagonal, <= -1e4 above)";
    }
    return new Match(
        qk.getInputsToOp().get(0),
        qk.getInputsToOp().get(1),
        pv.getInputsToOp().get(1),
        probs,
        pv.getOutputsOfOp().get(0),
        s,
        t,
        chain,
        problem);
  }

  private static boolean isCausal(INDArray b) {
    long t = b.size(0);
    for (long i = 0; i < t; i++) {
      for (long j = 0; j < t; j++) {
        double v = b.getDouble(i, j);
        if (j <= i ? v != 0.0 : v > -1e4) {
          return false;
        }
      }
    }
    return true;
  }

  // ------------------------------------------------------------------------------------------
  // densify
  /**
   * Replaces every sparse matmul by a plain matmul of its (already zero-filled) weight, and every
   * sparse attention op by stock ops computing {@code softmax(scale Q K^T + bias) V} with a
   * constant additive mask (0 where the op's layout computes a pair, -1e9 elsewhere) so that the
   * result needs no SparseFlow op.
   *
   * @param seqLen sequence length T of the attention inputs; {@code <= 0} reads it from the static
   *     shape of Q
   */
  public static void densify(SameDiff sd, int seqLen) {
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      if (op.getOp() instanceof SparseMatmulOp) {
        densifyMatmul(sd, op);
      } else if (op.getOp() instanceof SparseAttentionOp attention) {
        densifyAttention(sd, op, attention, seqLen);
      }
    }
    renameOpsNamedLikeForeignVariables(sd);
  }

  /**
   * SameDiff gives a new op the first free op name ("matmul_13"), which may equal the name of a
   * variable that another op outputs (an output name we kept so consumers stay linked). The graph
   * runs, but SameDiff's FlatBuffers loader then binds that variable to the wrong op and the model
   * loses outputs after save/load. Such ops get a fresh name.
   */
  static void renameOpsNamedLikeForeignVariables(SameDiff sd) {
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      String name = op.getName();
      if (!sd.getVariables().containsKey(name) || op.getOutputsOfOp().contains(name)) {
        continue;
      }
      String fresh = name + "_op";
      for (int i = 1; sd.getOps().containsKey(fresh) || sd.getVariables().containsKey(fresh); i++) {
        fresh = name + "_op" + i;
      }
      sd.getOps().remove(name);
      op.setName(fresh);
      op.getOp().setOwnName(fresh);
      sd.getOps().put(fresh, op);
      for (String in : op.getInputsToOp()) {
        List<String> users = sd.getVariables().get(in).getInputsForOp();
        if (users != null) {
          users.replaceAll(u -> u.equals(name) ? op.getName() : u);
        }
      }
      for (String out : op.getOutputsOfOp()) {
        sd.getVariables().get(out).setOutputOfOp(fresh);
      }
    }
  }

  private static void densifyMatmul(SameDiff sd, SameDiffOp op) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    String out = op.getOutputsOfOp().get(0);
    INDArray w = sd.getArrForVarName(in.get(1)), m = sd.getArrForVarName(in.get(2));
    if (w != null && m != null) {
      w.muli(m);
    }
    List<String> consumers = removeOp(sd, op);
    SDVariable y =
        sd.mmul(out + "_densified_mm", sd.getVariable(in.get(0)), sd.getVariable(in.get(1)));
    if (in.size() > 3) {
      y = y.add(out + "_densified_bias", sd.getVariable(in.get(3)));
    }
    sd.updateVariableNameAndReference(y, out);
    relink(sd, out, consumers);
  }

  private static void densifyAttention(
      SameDiff sd, SameDiffOp op, SparseAttentionOp attention, int seqLen) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    String out = op.getOutputsOfOp().get(0);
    for (String extra : op.getOutputsOfOp().subList(1, op.getOutputsOfOp().size())) {
      List<String> users = sd.getVariables().get(extra).getInputsForOp();
      if (users != null && !users.isEmpty()) {
        throw new IllegalArgumentException(
            "sparse attention op '"
                + op.getName()
                + "': its output '"
                + extra
                + "' (softmax statistics) is used by "
                + users
                + "; densify allows only the attention output");
      }
    }
    SDVariable q = sd.getVariable(in.get(0)),
        k = sd.getVariable(in.get(1)),
        v = sd.getVariable(in.get(2));
    long[] shape = q.getShape(); // [B, H, T, D] when known statically
    boolean staticShape = shape != null && shape.length == 4 && shape[1] > 0 && shape[2] > 0;
    int t = seqLen > 0 ? seqLen : staticShape ? (int) shape[2] : -1;
    if (t <= 0) {
      throw new IllegalArgumentException(
          "seqLen = "
              + seqLen
              + " and the shape of '"
              + q.name()
              + "' is "
              + Arrays.toString(shape)
              + "; pass the sequence length (> 0): Sparsify.densify(sd, seqLen)");
    }
    AttentionPattern pattern = attention.pattern();
    boolean perHead =
        pattern.getComponents().stream().anyMatch(c -> c.getKind() == AttentionPattern.Kind.RANDOM);
    if (perHead && !staticShape) {
      throw new IllegalArgumentException(
          "attention pattern '"
              + pattern
              + "' of op '"
              + op.getName()
              + "' draws random blocks per head, but the head count of '"
              + q.name()
              + "' is not known "
              + "statically (shape "
              + Arrays.toString(shape)
              + "); densify needs a static [B, H, T, D] shape");
    }
    int heads = perHead ? (int) shape[1] : 1; // without RANDOM every head has the same layout
    BlockLayout layout = pattern.layout(t, attention.blockSize(), heads);
    INDArray bias =
        SparseAttention.maskBias(layout, heads, q.dataType()); // [heads, T, T], broadcast over B
    List<String> consumers = removeOp(sd, op);
    // explicit names: SameDiff's generated names can collide with those left by earlier rewrites
    String base = out + "_densified";
    SDVariable scores =
        sd.mmul(base + "_qk", q, k, false, true, false)
            .mul(base + "_scaled", attention.scale())
            .add(base + "_masked", sd.constant(base + "_mask", bias));
    SDVariable y = sd.mmul(base + "_pv", sd.nn().softmax(base + "_softmax", scores, 3), v);
    sd.updateVariableNameAndReference(y, out);
    relink(sd, out, consumers);
  }

  // ------------------------------------------------------------------------------------------
  // graph editing
  private static SameDiffOp producer(SameDiff sd, String var) {
    Variable v = sd.getVariables().get(var);
    return v == null || v.getOutputOfOp() == null ? null : sd.getOps().get(v.getOutputOfOp());
  }

  /**
   * Removes {@code op} and its output variables from the graph; returns the consumers of its first
   * output (their input lists still name that output, so a new variable of the same name reconnects
   * them).
   */
  static List<String> removeOp(SameDiff sd, SameDiffOp op) {
    String out = op.getOutputsOfOp().get(0);
    List<String> consumers = sd.getVariables().get(out).getInputsForOp();
    consumers = consumers == null ? new ArrayList<>() : new ArrayList<>(consumers);
    for (String in : op.getInputsToOp()) {
      Variable v = sd.getVariables().get(in);
      if (v != null && v.getInputsForOp() != null) {
        v.getInputsForOp().remove(op.getName());
      }
    }
    for (String o : op.getOutputsOfOp()) {
      sd.getVariables().remove(o);
    }
    sd.getOps().remove(op.getName());
    return consumers;
  }

  static void relink(SameDiff sd, String out, List<String> consumers) {
    Variable v = sd.getVariables().get(out);
    if (v == null) {
      throw new IllegalStateException("rewritten output '" + out + "' is missing from the graph");
    }
    List<String> l =
        v.getInputsForOp() == null ? new ArrayList<>() : new ArrayList<>(v.getInputsForOp());
    for (String c : consumers) {
      if (!l.contains(c)) {
        l.add(c);
      }
    }
    v.setInputsForOp(l);
  }

  static String shape(long[] s) {
    return Arrays.toString(s);
  }
}
