package org.sparseflow.dataflow.report;

import java.util.List;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ArrayNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.dataflow.sim.KernelTiming;
import org.sparseflow.dataflow.sim.SectionTiming;
import org.sparseflow.dataflow.sim.SimulationReport;
import org.sparseflow.ops.config.JsonText;

/**
 * Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per report, sections
 * on thread 1 and fused kernels on thread 2, one micro-batch of forward+backward followed by the
 * optimizer. Timestamps are SIMULATED microseconds.
 */
public final class ChromeTrace {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private ChromeTrace() {}

  public static String toJson(List<SimulationReport> reports) {
    ObjectNode root = MAPPER.createObjectNode();
    ArrayNode events = root.putArray("traceEvents");
    int pid = 1;
    for (SimulationReport r : reports) {
      meta(
          events,
          pid,
          0,
          "process_name",
          "SIMULATED " + r.target() + " " + r.mode() + " (" + r.model() + ")");
      meta(events, pid, 1, "thread_name", r.targetKind().equals("gpu") ? "kernels" : "sections");
      if (!r.targetKind().equals("gpu")) {
        meta(events, pid, 2, "thread_name", "fused kernels");
      }
      double t = 0;
      double[] start = new double[r.sections().size()];
      for (SectionTiming s : r.sections()) {
        start[s.index()] = t;
        ObjectNode e = events.addObject();
        e.put("name", s.name());
        e.put("cat", s.phase());
        e.put("ph", "X");
        e.put("ts", t * 1e6);
        e.put("dur", s.totalS() * 1e6);
        e.put("pid", pid);
        e.put("tid", 1);
        ObjectNode a = e.putObject("args");
        a.put("bound", s.bound());
        a.put("utilisation", s.utilisation());
        a.put("flops", s.flops());
        a.put("repeatsPerStep", s.repeats());
        a.put("label", SimulationReport.SIMULATED);
        t += s.totalS();
      }
      if (!r.targetKind().equals("gpu")) {
        double[] offset = new double[r.sections().size()];
        for (KernelTiming k : r.kernels()) {
          ObjectNode e = events.addObject();
          e.put("name", k.name());
          e.put("cat", k.rule());
          e.put("ph", "X");
          e.put("ts", (start[k.section()] + offset[k.section()]) * 1e6);
          e.put("dur", k.timeS() * 1e6);
          e.put("pid", pid);
          e.put("tid", 2);
          offset[k.section()] += k.timeS();
        }
      }
      pid++;
    }
    root.put("displayTimeUnit", "ms");
    root.putObject("otherData")
        .put("label", "SIMULATED by SparseFlow dataflow-backend; one micro-batch + optimizer");
    return JsonText.of(() -> MAPPER.writeValueAsString(root));
  }

  private static void meta(ArrayNode events, int pid, int tid, String what, String name) {
    ObjectNode e = events.addObject();
    e.put("name", what);
    e.put("ph", "M");
    e.put("pid", pid);
    e.put("tid", tid);
    e.putObject("args").put("name", name);
  }
}
