package org.sparseflow.layers.nn;

import java.util.List;

/** Implemented by the SparseFlow layer configurations: the ordered list of their parameters. */
interface SparseFlowLayerConf {
  /** Parameters in flat-view order. Not a bean getter, so it stays out of the JSON. */
  List<ParamSpec> paramSpecs();
}
