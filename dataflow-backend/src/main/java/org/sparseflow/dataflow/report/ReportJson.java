package org.sparseflow.dataflow.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.dataflow.api.Comparison;
import org.sparseflow.dataflow.sim.SimulationReport;
import org.sparseflow.ops.config.JsonText;

/** JSON form of simulation reports (every document carries "label": "SIMULATED"). */
public final class ReportJson {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private ReportJson() {}

  public static String toJson(SimulationReport r) {
    return JsonText.of(() -> MAPPER.writeValueAsString(r));
  }

  public static SimulationReport fromJson(String json) {
    try {
      return MAPPER.readValue(json, SimulationReport.class);
    } catch (IOException e) {
      throw new IllegalArgumentException("not a simulation report JSON: " + e.getMessage(), e);
    }
  }

  /** The whole comparison: inputs, the four reports and the derived ratios. */
  public static String toJson(Comparison c) {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("label", SimulationReport.SIMULATED);
    root.set("model", MAPPER.valueToTree(c.sparseSpec()));
    root.put("chips", c.chips());
    root.put("speedupVsBaseline", c.speedupVsBaseline());
    root.put("speedupKernelByKernelVsBaseline", c.speedupKernelByKernelVsBaseline());
    root.put("dataflowOverKernelByKernel", c.dataflowOverKernelByKernel());
    root.put("flopReduction", c.flopReduction());
    root.put("speedupVsKernelRoofline", c.speedupVsKernelRoofline());
    root.put("chipGradientAllReduceSeconds", c.chipCommSeconds());
    if (c.gpuCluster() != null) {
      root.set("gpuCluster", MAPPER.valueToTree(c.gpuCluster()));
    }
    root.put("simulationSecondsMeasured", c.simulationSeconds());
    root.set("dataflow", MAPPER.valueToTree(c.dataflow()));
    root.set("kernelByKernel", MAPPER.valueToTree(c.kernelByKernel()));
    root.set("gpuDense", MAPPER.valueToTree(c.gpuDense()));
    root.set("gpuSparse", MAPPER.valueToTree(c.gpuSparse()));
    return JsonText.of(() -> MAPPER.writeValueAsString(root));
  }

  public static void write(Path file, String json) {
    try {
      if (file.getParent() != null) {
        Files.createDirectories(file.getParent());
      }
      Files.writeString(file, json);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }
}
