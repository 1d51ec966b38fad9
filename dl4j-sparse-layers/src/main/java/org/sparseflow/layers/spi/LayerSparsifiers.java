package org.sparseflow.layers.spi;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.sparseflow.layers.config.SparsityConfig;

/**
 * Discovery of {@link LayerSparsifier}s with {@link ServiceLoader} (context class loader, then this
 * one).
 */
public final class LayerSparsifiers {
  private LayerSparsifiers() {}

  /** Every sparsifier on the classpath, highest priority first (stable by class name). */
  public static List<LayerSparsifier> all() {
    List<LayerSparsifier> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    ClassLoader ctx = Thread.currentThread().getContextClassLoader();
    for (ClassLoader cl : new ClassLoader[] {ctx, LayerSparsifier.class.getClassLoader()}) {
      if (cl == null) {
        continue;
      }
      for (LayerSparsifier s : ServiceLoader.load(LayerSparsifier.class, cl)) {
        if (seen.add(s.getClass().getName())) {
          out.add(s);
        }
      }
    }
    out.sort(
        Comparator.comparingInt(LayerSparsifier::priority)
            .reversed()
            .thenComparing(s -> s.getClass().getName()));
    return out;
  }

  /** The highest-priority sparsifier supporting {@code layer}, or null. */
  public static LayerSparsifier find(
      List<LayerSparsifier> sparsifiers, Layer layer, SparsityConfig cfg) {
    for (LayerSparsifier s : sparsifiers) {
      if (s.supports(layer, cfg)) {
        return s;
      }
    }
    return null;
  }
}
