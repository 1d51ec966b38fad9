package org.sparseflow.train;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.hw.Hardware;
import org.sparseflow.mst.core.MstConfig;

/**
 * What ships in the jar: sparsity presets (from mst-scheduler) and hardware files (from
 * dataflow-backend).
 */
public final class Catalogs {

  private Catalogs() {}

  /** Preset name -> one-line description. */
  public static Map<String, String> sparsityPresets() {
    Map<String, String> m = new LinkedHashMap<>();
    for (String name : MstConfig.PRESETS) {
      String d;
      try {
        d = MstConfig.preset(name).getDescription();
      } catch (RuntimeException e) {
        d = "(unreadable: " + e.getMessage() + ")";
      }
      m.put(name, d == null ? "" : d);
    }
    return m;
  }

  /** Hardware id -> description (chips for the dataflow simulator, GPUs for the baseline). */
  public static Map<String, String> hardwareFiles() {
    Map<String, String> m = new LinkedHashMap<>();
    for (String id : Hardware.CHIPS) {
      m.put(
          id,
          "chip: "
              + describe(
                  () -> {
                    ChipSpec c = ChipSpec.builtin(id);
                    return titled(c.name(), c.description());
                  }));
    }
    for (String id : Hardware.GPUS) {
      m.put(
          id,
          "GPU:  "
              + describe(
                  () -> {
                    GpuSpec g = GpuSpec.builtin(id);
                    return titled(g.name(), g.description());
                  }));
    }
    return m;
  }

  /** "name - description", or the name alone without a description. */
  private static String titled(String name, String description) {
    return name + (description == null ? "" : " - " + description);
  }

  private static String describe(Supplier<String> s) {
    try {
      String d = s.get();
      return d.length() > 110 ? d.substring(0, 107) + "..." : d;
    } catch (RuntimeException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }
}
