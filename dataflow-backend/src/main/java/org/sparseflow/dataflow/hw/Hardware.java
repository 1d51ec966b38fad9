package org.sparseflow.dataflow.hw;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Lookup of built-in hardware files by id, or of a user file by path. */
public final class Hardware {
  public static final List<String> CHIPS = List.of("sn10", "sn30", "sn40l");
  public static final List<String> GPUS = List.of("a100-40gb", "a100-80gb", "h100");

  private Hardware() {}

  /** A built-in chip id, or a path to a chip JSON file. */
  public static ChipSpec chip(String idOrPath) {
    if (idOrPath != null && (idOrPath.endsWith(".json") || Files.exists(Path.of(idOrPath)))) {
      return ChipSpec.fromFile(Path.of(idOrPath));
    }
    return ChipSpec.builtin(idOrPath);
  }

  /** A built-in GPU id, or a path to a GPU JSON file. */
  public static GpuSpec gpu(String idOrPath) {
    if (idOrPath != null && (idOrPath.endsWith(".json") || Files.exists(Path.of(idOrPath)))) {
      return GpuSpec.fromFile(Path.of(idOrPath));
    }
    return GpuSpec.builtin(idOrPath);
  }
}
