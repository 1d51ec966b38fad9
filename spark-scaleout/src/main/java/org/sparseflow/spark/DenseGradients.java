package org.sparseflow.spark;

import java.io.Serializable;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.dl4j.Dl4jWeights;

/**
 * Dense gradients of the sparse weights (what RigL-style regrowth scores), averaged over
 * minibatches. On Spark each partition computes the gradients of its first minibatches on a replica
 * of the driver's (averaged) network and the sums are tree-aggregated to the driver: one gradient
 * estimate from all workers' data, one topology decision.
 */
public final class DenseGradients {

  /** Sum of dense gradients by weight name plus the number of minibatches summed. */
  public static final class Sum implements Serializable {
    private static final long serialVersionUID = 1L;
    final LinkedHashMap<String, float[]> sums = new LinkedHashMap<>();
    long batches;

    Sum add(Sum o) {
      for (Map.Entry<String, float[]> e : o.sums.entrySet()) {
        float[] mine = sums.get(e.getKey());
        if (mine == null) {
          sums.put(e.getKey(), e.getValue().clone());
        } else {
          float[] v = e.getValue();
          for (int i = 0; i < v.length; i++) {
            mine[i] += v[i];
          }
        }
      }
      batches += o.batches;
      return this;
    }

    /** Mean gradient by name, or null when no batch was seen. */
    Map<String, float[]> mean() {
      if (batches == 0) {
        return null;
      }
      Map<String, float[]> out = new LinkedHashMap<>();
      for (Map.Entry<String, float[]> e : sums.entrySet()) {
        float[] v = e.getValue().clone();
        for (int i = 0; i < v.length; i++) {
          v[i] /= batches;
        }
        out.put(e.getKey(), v);
      }
      return out;
    }
  }

  private DenseGradients() {}

  /**
   * Mean dense gradients over at most {@code maxBatches} minibatches, computed on {@code model} in
   * this JVM.
   */
  public static Map<String, float[]> local(
      Model model, MstConfig config, Iterator<DataSet> batches, int maxBatches) {
    return accumulate(model, config, batches, maxBatches).mean();
  }

  /**
   * Mean dense gradients over the first {@code maxBatchesPerPartition} minibatches of every
   * partition of {@code data}, evaluated at the driver network's current parameters.
   */
  public static Map<String, float[]> spark(
      JavaSparkContext sc,
      JavaRDD<DataSet> data,
      Model driverNet,
      MstConfig config,
      int maxBatchesPerPartition) {
    if (maxBatchesPerPartition < 1) {
      throw new IllegalArgumentException(
          "maxBatchesPerPartition = "
              + maxBatchesPerPartition
              + " is invalid; allowed: an integer >= 1");
    }
    String conf;
    boolean graph;
    if (driverNet instanceof MultiLayerNetwork) {
      conf = ((MultiLayerNetwork) driverNet).getLayerWiseConfigurations().toJson();
      graph = false;
    } else if (driverNet instanceof ComputationGraph) {
      conf = ((ComputationGraph) driverNet).getConfiguration().toJson();
      graph = true;
    } else {
      throw new IllegalArgumentException(
          "driverNet = "
              + driverNet
              + " is not supported; allowed: "
              + "MultiLayerNetwork, ComputationGraph");
    }
    Broadcast<INDArray> params = sc.broadcast(driverNet.params().dup());
    PartitionGradients f =
        new PartitionGradients(conf, graph, params, config.toJson(), maxBatchesPerPartition);
    Sum total = data.mapPartitions(f).treeReduce(Sum::add);
    params.unpersist(false);
    return total.mean();
  }

  static Sum accumulate(Model model, MstConfig config, Iterator<DataSet> batches, int maxBatches) {
    List<Dl4jWeights.Binding> bindings = Dl4jWeights.find(model, config);
    Sum s = new Sum();
    for (Dl4jWeights.Binding b : bindings) {
      b.requestDense(true);
    }
    try {
      while (batches.hasNext() && s.batches < maxBatches) {
        DataSet ds = batches.next();
        if (model instanceof MultiLayerNetwork) {
          MultiLayerNetwork n = (MultiLayerNetwork) model;
          n.setInput(ds.getFeatures());
          n.setLabels(ds.getLabels());
          n.setLayerMaskArrays(ds.getFeaturesMaskArray(), ds.getLabelsMaskArray());
          n.computeGradientAndScore();
        } else {
          ComputationGraph g = (ComputationGraph) model;
          g.setInputs(ds.getFeatures());
          g.setLabels(ds.getLabels());
          g.computeGradientAndScore();
        }
        Sum one = new Sum();
        one.batches = 1;
        for (Dl4jWeights.Binding b : bindings) {
          INDArray g = b.denseGradient(model);
          if (g == null) {
            throw new IllegalStateException("no dense gradient for " + b.name);
          }
          one.sums.put(b.name, g.castTo(DataType.FLOAT).dup('c').data().asFloat());
        }
        s.add(one);
      }
    } finally {
      for (Dl4jWeights.Binding b : bindings) {
        b.requestDense(false);
      }
    }
    return s;
  }

  /**
   * Worker side: rebuild the network from the broadcast, sum gradients of the partition's first
   * batches.
   */
  static final class PartitionGradients implements FlatMapFunction<Iterator<DataSet>, Sum> {
    private static final long serialVersionUID = 1L;
    private final String conf;
    private final boolean graph;
    private final Broadcast<INDArray> params;
    private final String mstConfig;
    private final int maxBatches;

    PartitionGradients(
        String conf, boolean graph, Broadcast<INDArray> params, String mstConfig, int maxBatches) {
      this.conf = conf;
      this.graph = graph;
      this.params = params;
      this.mstConfig = mstConfig;
      this.maxBatches = maxBatches;
    }

    @Override
    public Iterator<Sum> call(Iterator<DataSet> it) {
      if (!it.hasNext()) {
        return Collections.emptyIterator();
      }
      Model m;
      if (graph) {
        ComputationGraph g = new ComputationGraph(ComputationGraphConfiguration.fromJson(conf));
        g.init(params.getValue().dup(), false);
        m = g;
      } else {
        MultiLayerNetwork n = new MultiLayerNetwork(MultiLayerConfiguration.fromJson(conf));
        n.init(params.getValue().dup(), false);
        m = n;
      }
      return Collections.singletonList(accumulate(m, MstConfig.fromJson(mstConfig), it, maxBatches))
          .iterator();
    }
  }
}
