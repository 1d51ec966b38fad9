package org.sparseflow.train;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.config.AttentionSettings;
import org.sparseflow.layers.config.DensityDistribution;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * MST that executes its sparsity on a SameDiff model: before training, the graph's attention/MLP
 * matmuls become SparseFlow sparse matmul ops and its causal attention the sparse attention op
 * ({@link Sparsify#apply}); {@code MstListener} then drives their masks, block layouts, dense-dW
 * switch and attention pattern. By step time alone the ComputationGraph GPT is the faster sparse
 * path at gpt-mini (docs/experiments/mst-samediff.md); the command line stays on the SameDiff model
 * because its checkpoints, resume, sampling and simulation are built around it.
 */
final class SparseExecution {
  private static final Logger LOG = LoggerFactory.getLogger(SparseExecution.class);

  /** The reference GPTs' attention and MLP weights (embeddings, norms and the head stay dense). */
  static final String GPT_WEIGHTS = SameDiffGpt.BLOCK_WEIGHTS;

  private SparseExecution() {}

  /**
   * A DL4J model brings its own storage. When it has packed block weights (layers built with
   * storage = packed), MST drives them, the trainer taking the rebuilt network whenever a phase
   * wants other block slots, and the default include ({@code .*}) narrows to them; {@code packed}
   * (--storage packed) requires such weights.
   */
  static MstConfig dl4jStorage(boolean packed, MstConfig mst, Object model) {
    List<String> names = new ArrayList<>();
    if (model instanceof Model m) {
      SparseParams.findPacked(m).stream()
          .filter(p -> p.layout() != null)
          .forEach(p -> names.add(p.name()));
    }
    if (packed && names.isEmpty()) {
      throw new IllegalArgumentException(
          "--storage packed: the DL4J model has no packed block weights; allowed: a model whose"
              + " sparse layers were built with storage = packed (block patterns), a SameDiff"
              + " model (e.g. gpt-mini), or --storage masked");
    }
    boolean defaultInclude = mst.getInclude().equals(List.of(".*")) && mst.getExclude().isEmpty();
    if (names.isEmpty() || !defaultInclude) {
      return mst;
    }
    MstConfig effective = MstConfig.fromJson(mst.toJson());
    effective.setInclude(names);
    LOG.info("MST drives the DL4J model's {} packed weights ({})", names.size(), names);
    return effective;
  }

  /**
   * Rewrites {@code sd} for MST config {@code mst} when its pattern has a kernel that skips work
   * (blockB) and SparseFlow's Java ops run on this backend; returns the MST config to use (with the
   * default include narrowed to the rewritten weights), or {@code mst} unchanged when nothing was
   * rewritten. With {@code packed} the weights become packed variables holding the blocks of MST's
   * own first masks ({@link MstListener#firstMasks} for a run of {@code steps}): all blocks when
   * the schedule warms up dense (so until the ultra-sparse phase the arrays are dense-sized), the
   * schedule's first level on a sparse start.
   */
  static MstConfig rewrite(SameDiff sd, MstConfig mst, boolean packed, long steps) {
    PatternSpec spec = PatternSpec.parse(mst.getPattern());
    if (spec.getKind() != MaskPattern.Kind.BLOCK || !Backends.javaKernelsRun()) {
      if (packed) {
        throw new IllegalArgumentException(
            "--storage packed: MST pattern "
                + mst.getPattern()
                + (spec.getKind() != MaskPattern.Kind.BLOCK
                    ? " is not a block pattern"
                    : " needs SparseFlow's Java ops, which this ND4J backend does not run")
                + "; allowed: a block pattern (blockB) on the CPU backend, or --storage masked");
      }
      return mst;
    }
    boolean defaultInclude = mst.getInclude().equals(List.of(".*")) && mst.getExclude().isEmpty();
    List<String> include = defaultInclude ? List.of(GPT_WEIGHTS) : mst.getInclude();
    MstConfig effective = mst;
    if (defaultInclude) {
      effective = MstConfig.fromJson(mst.toJson());
      effective.setInclude(List.of(GPT_WEIGHTS));
    }
    SparsityConfig sc = new SparsityConfig();
    sc.setPattern(mst.getPattern());
    sc.setStorage(packed ? "packed" : "masked");
    // any level: the masks are MST's (given below when packed, set by MST when it binds otherwise)
    sc.setSparsity(0.5);
    sc.setDistribution(DensityDistribution.UNIFORM);
    sc.setKeepFirstDense(false);
    sc.setKeepLastDense(false);
    sc.setInclude(new ArrayList<>(include));
    sc.setExclude(new ArrayList<>(mst.getExclude()));
    sc.setSeed(mst.getSeed());
    int block = mst.getAttention().getBlockSize();
    boolean sparseAttention = !mst.getAttention().getRules().isEmpty();
    if (sparseAttention) {
      sc.setAttention(new AttentionSettings("local:" + block, block, List.of(".*"), false));
    }
    Map<String, INDArray> before = new LinkedHashMap<>();
    sd.variables().stream()
        .filter(v -> v.getArr() != null && v.getVariableType() == VariableType.VARIABLE)
        .forEach(v -> before.put(v.name(), v.getArr().dup()));
    SparsifyReport report =
        packed
            ? Sparsify.apply(sc, sd, MstListener.firstMasks(effective.withTotalSteps(steps), sd))
                .report()
            : Sparsify.apply(sc, sd).report();
    for (Map.Entry<String, INDArray> e : before.entrySet()) {
      INDArray now = sd.getArrForVarName(e.getKey());
      if (now != null) {
        now.assign(e.getValue());
      }
    }
    List<String> sparse = new ArrayList<>();
    for (SparsifyReport.Entry e : report.entries()) {
      if (e.status() == SparsifyReport.Status.SPARSE) {
        sparse.add(e.name());
      }
    }
    LOG.info("MST executes sparse on SameDiff: {} rewritten ({})", sparse.size(), sparse);
    return effective;
  }
}
