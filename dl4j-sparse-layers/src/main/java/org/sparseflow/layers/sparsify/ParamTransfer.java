package org.sparseflow.layers.sparsify;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.HeadMasks;
import org.sparseflow.layers.nn.SparseWeightLayer;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.packed.PackedNmLinear;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Moves parameters between the layers of a model and its sparsified or densified twin: trained
 * values are copied, masks are computed (magnitude) or drawn (seeded random), and folded back into
 * the weights when densifying.
 */
final class ParamTransfer {
  private ParamTransfer() {}

  /**
   * Copies parameters old -> new layer and sets masks for a replaced layer; records the measured
   * density.
   */
  static void transfer(
      SparsityConfig cfg,
      SparsifyPlan plan,
      SparsifyPlan.LayerRef r,
      Layer oldL,
      Layer newL,
      Map<String, Double> measured) {
    oldL = Sparsify.unwrap(oldL);
    newL = Sparsify.unwrap(newL);
    SparsifyPlan.Choice c = null;
    for (SparsifyPlan.Choice ch : plan.choices()) {
      if (ch.ref() == r) {
        c = ch;
      }
    }
    Map<String, INDArray> oldP = oldL.paramTable(), newP = newL.paramTable();
    Map<String, String> mapping =
        c != null && c.sparsifier() != null && c.replacement() != null
            ? c.sparsifier().paramMapping(r.layer(), c.replacement())
            : Map.of();
    List<String> reinit = new ArrayList<>();
    for (Map.Entry<String, INDArray> e : newP.entrySet()) {
      String src = mapping.getOrDefault(e.getKey(), e.getKey());
      INDArray o = oldP.get(src);
      PackedLayout packed = packedLayoutOf(newL, e.getKey());
      PackedNmLayout nm = packedNmLayoutOf(newL, e.getKey());
      if (o != null && nm != null && o.length() == nm.rows() * nm.cols()) {
        // packed n:m storage: the trained weight's kept values (the layout was chosen from it)
        PackedNmLinear.packInto(o.reshape(nm.rows(), nm.cols()), nm, e.getValue());
      } else if (o != null && packed != null && o.length() == packed.rows() * packed.cols()) {
        // packed storage: the trained weight's kept blocks (the layout was chosen from it)
        PackedBlockLinear.packInto(o.reshape(packed.rows(), packed.cols()), packed, e.getValue());
      } else if (o != null
          && o.length() == e.getValue().length()
          && Math.max(o.size(-1), 1) == Math.max(e.getValue().size(-1), 1)) {
        // same values; DL4J biases are [nOut] where the plugin's are [1, nOut]
        e.getValue().assign(o.reshape(e.getValue().shape()));
      } else if (!(newL instanceof SparseWeightLayer sw && isMaskKey(sw, e.getKey()))) {
        reinit.add(e.getKey());
      }
    }
    if (c != null && !reinit.isEmpty() && c.replacement() != null) {
      // the entry's reason tells the user these started fresh
      int idx = plan.choices().indexOf(c);
      plan.choices()
          .set(
              idx,
              new SparsifyPlan.Choice(
                  c.ref(),
                  c.sparsifier(),
                  c.target(),
                  c.replacement(),
                  c.entry()
                      .withReason(
                          c.entry().reason()
                              + " (parameters "
                              + reinit
                              + " initialised fresh: layout differs)")));
    }
    if (!(newL instanceof SparseWeightLayer sw)) {
      return;
    }
    boolean remask = c != null && c.target() != null && c.target().sparseWeights();
    PatternSpec spec = PatternSpec.parse(remask ? c.target().pattern() : cfg.getPattern());
    long kept = 0, total = 0;
    for (String wk : sw.sparseWeightKeys()) {
      PackedNmLayout nmLayout = sw.packedNmLayout(wk);
      if (nmLayout != null) { // packed n:m: fixed in the configuration
        kept += nmLayout.packedLength();
        total += nmLayout.rows() * nmLayout.cols();
        continue;
      }
      PackedLayout layout = sw.packedLayout(wk);
      if (layout != null) { // packed: the layout is the mask, fixed in the configuration
        kept += (long) layout.keptBlocks() * layout.blockSize() * layout.blockSize();
        total += layout.rows() * layout.cols();
        continue;
      }
      INDArray w = newP.get(wk), m = newP.get(sw.maskKey(wk));
      if (remask) {
        SparseMask mask =
            cfg.getInitialMask() == InitialMask.MAGNITUDE
                ? spec.fromMagnitude(w, c.target().density())
                : spec.random(
                    w.rows(), w.columns(), c.target().density(), maskSeed(cfg, r.name(), wk));
        m.assign(mask.toDense(m.dataType()));
      }
    }
    if (remask) {
      HeadMasks.adjustAttentionLayer(newL.conf().getLayer(), newP);
    }
    for (String wk : sw.sparseWeightKeys()) {
      INDArray m = newP.get(sw.maskKey(wk));
      if (m != null) {
        kept += m.neq(0).castTo(DataType.INT64).sumNumber().longValue();
        total += m.length();
      }
    }
    sw.applyMasks();
    if (total > 0) {
      measured.put(r.name(), (double) kept / total);
    }
  }

  /** The seed of a layer weight's random mask: the config seed mixed with the names. */
  static long maskSeed(SparsityConfig cfg, String layerName, String weightKey) {
    return cfg.getSeed() * 31 + (layerName + "/" + weightKey).hashCode();
  }

  /** The packed layout of a layer's weight, or null when it is not a packed sparse weight. */
  private static PackedLayout packedLayoutOf(Layer l, String key) {
    if (l instanceof SparseWeightLayer sw && sw.sparseWeightKeys().contains(key)) {
      return sw.packedLayout(key);
    }
    return null;
  }

  /** The packed n:m layout of a layer's weight, or null when it is not a packed n:m weight. */
  private static PackedNmLayout packedNmLayoutOf(Layer l, String key) {
    if (l instanceof SparseWeightLayer sw && sw.sparseWeightKeys().contains(key)) {
      return sw.packedNmLayout(key);
    }
    return null;
  }

  private static boolean isMaskKey(SparseWeightLayer sw, String key) {
    for (String wk : sw.sparseWeightKeys()) {
      if (key.equals(sw.maskKey(wk))) {
        return true;
      }
    }
    return false;
  }

  /** Copies the params of a layer into its stock twin with the masks folded into the weights. */
  static void copyFolded(Layer from, Layer to) {
    from = Sparsify.unwrap(from);
    to = Sparsify.unwrap(to);
    Map<String, INDArray> src = from.paramTable(), dst = to.paramTable();
    Map<String, String> maskOf = new LinkedHashMap<>();
    Map<String, PackedLayout> packed = new LinkedHashMap<>();
    Map<String, PackedNmLayout> packedNm = new LinkedHashMap<>();
    if (from instanceof SparseWeightLayer sw) {
      for (String wk : sw.sparseWeightKeys()) {
        if (sw.packedNmLayout(wk) != null) {
          packedNm.put(wk, sw.packedNmLayout(wk));
        } else if (sw.packedLayout(wk) != null) {
          packed.put(wk, sw.packedLayout(wk));
        } else {
          maskOf.put(wk, sw.maskKey(wk));
        }
      }
    }
    for (Map.Entry<String, INDArray> e : dst.entrySet()) {
      INDArray s = src.get(e.getKey());
      if (s == null) {
        continue;
      }
      if (packedNm.containsKey(e.getKey())) { // packed n:m values -> dense W, zeros elsewhere
        INDArray dense = PackedSparseParam.unpack(s, packedNm.get(e.getKey()));
        e.getValue().assign(dense.reshape(e.getValue().shape()));
        continue;
      }
      if (packed.containsKey(e.getKey())) { // packed kept blocks -> dense W, zeros elsewhere
        INDArray dense = PackedSparseParam.unpack(s, packed.get(e.getKey()));
        e.getValue().assign(dense.reshape(e.getValue().shape()));
        continue;
      }
      String mk = maskOf.get(e.getKey());
      INDArray m = mk == null ? null : src.get(mk);
      INDArray v = m == null ? s : s.mul(m);
      e.getValue().assign(v.reshape(e.getValue().shape()));
    }
  }
}
