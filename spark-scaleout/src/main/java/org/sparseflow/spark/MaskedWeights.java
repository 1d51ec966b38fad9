package org.sparseflow.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.nn.SparseWeightLayer;

/**
 * The masked weights of a model built from SparseFlow layers ({@link SparseWeightLayer}): each
 * weight W with its 0/1 mask param M. Because M is an ordinary (frozen) parameter, it is part of
 * the flat parameter vector that DL4J's distributed trainers broadcast, average and share, so every
 * worker trains with the driver's masks.
 */
public final class MaskedWeights {

  /** One masked weight: live views of W and M. */
  public static final class Ref {
    public final String name;
    public final SparseWeightLayer layer;
    public final String weightKey;
    public final String maskKey;

    Ref(String name, SparseWeightLayer layer, String weightKey, String maskKey) {
      this.name = name;
      this.layer = layer;
      this.weightKey = weightKey;
      this.maskKey = maskKey;
    }

    public INDArray weight() {
      return layer.getParam(weightKey);
    }

    public INDArray mask() {
      return layer.getParam(maskKey);
    }
  }

  private MaskedWeights() {}

  /**
   * All masked weights of a MultiLayerNetwork or ComputationGraph, named
   * "&lt;layer&gt;_&lt;key&gt;" like DL4J params.
   */
  public static List<Ref> find(Model model) {
    List<Ref> out = new ArrayList<>();
    for (Layer l : SparseParams.layers(model)) {
      if (!(l instanceof SparseWeightLayer)) {
        continue;
      }
      SparseWeightLayer s = (SparseWeightLayer) l;
      String prefix =
          model instanceof ComputationGraph
              ? l.conf().getLayer().getLayerName()
              : String.valueOf(l.getIndex());
      for (String k : s.sparseWeightKeys()) {
        out.add(new Ref(prefix + "_" + k, s, k, s.maskKey(k)));
      }
    }
    return out;
  }

  /** Number of entries with W != 0 where M == 0. */
  public static long violations(Ref r) {
    INDArray w = r.weight();
    INDArray m = r.mask();
    // |W| * (1 - M) > 0 exactly where a pruned weight is nonzero
    INDArray outside = m.castTo(w.dataType()).rsub(1.0).muli(w).neq(0.0);
    return outside.castTo(DataType.INT64).sumNumber().longValue();
  }

  /**
   * A 64-bit fingerprint of a 0/1 mask (FNV-1a over the row-major indices of kept entries). Equal
   * masks have equal digests; used to check that every worker trains with the driver's topology.
   */
  public static long digest(INDArray mask) {
    float[] v = mask.castTo(DataType.FLOAT).dup('c').data().asFloat();
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < v.length; i++) {
      if (v[i] != 0f) {
        h ^= i;
        h *= 0x100000001b3L;
      }
    }
    h ^= v.length;
    h *= 0x100000001b3L;
    return h;
  }

  /**
   * One digest for a whole topology: FNV-1a over the weight names and their mask digests, in name
   * order.
   */
  public static long combined(Map<String, Long> digests) {
    long h = 0xcbf29ce484222325L;
    for (Map.Entry<String, Long> e : new TreeMap<>(digests).entrySet()) {
      h ^= e.getKey().hashCode();
      h *= 0x100000001b3L;
      h ^= e.getValue();
      h *= 0x100000001b3L;
    }
    return h;
  }
}
