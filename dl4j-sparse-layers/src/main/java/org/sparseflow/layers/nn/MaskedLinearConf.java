package org.sparseflow.layers.nn;

import java.util.ArrayList;
import java.util.List;

/**
 * The configuration side of {@link MaskedLinearLayer}: {@link SparseDenseLayer} and {@link
 * SparseOutputLayer} (a masked weight W with its pattern and an optional bias).
 */
interface MaskedLinearConf extends SparseFlowLayerConf {

  /** Pattern string of W (PatternSpec form). */
  String getPattern();

  /** Whether the layer has a bias param b. */
  boolean hasBias();

  /** Target density of the initial mask. */
  double getDensity();

  long getNIn();

  long getNOut();

  /** W [nIn, nOut], b [nOut] when present, then the mask M of W. */
  @Override
  default List<ParamSpec> paramSpecs() {
    List<ParamSpec> l = new ArrayList<>();
    l.add(ParamSpec.weight("W", getNIn(), getNOut()));
    if (hasBias()) {
      l.add(ParamSpec.bias("b", getNOut()));
    }
    l.add(ParamSpec.mask("M", "W", getNIn(), getNOut(), getPattern(), getDensity()));
    return l;
  }
}
