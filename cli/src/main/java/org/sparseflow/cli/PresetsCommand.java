package org.sparseflow.cli;

import java.util.concurrent.Callable;
import org.sparseflow.train.Catalogs;
import org.sparseflow.train.ModelCatalog;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code sparseflow presets}: lists shipped sparsity presets, models and hardware files. */
@Command(
    name = "presets",
    mixinStandardHelpOptions = true,
    description =
        "List the shipped sparsity presets (for --sparsity), models (for --model) and hardware"
            + " files (for simulate).")
public final class PresetsCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    var out = spec.commandLine().getOut();
    out.println("Sparsity presets (--sparsity <name>, or a YAML/JSON file):");
    Catalogs.sparsityPresets().forEach((k, v) -> out.printf("  %-12s %s%n", k, v));
    out.println();
    out.println("Models (--model <name>, or a saved DL4J model .zip):");
    ModelCatalog.names().forEach((k, v) -> out.printf("  %-12s %s%n", k, v));
    out.println();
    out.println(
        "Hardware (simulate --chip / --baseline, or your own JSON file with --chip-file /"
            + " --gpu-file):");
    var hw = Catalogs.hardwareFiles();
    if (hw.isEmpty()) {
      out.println("  (none in this build)");
    }
    hw.forEach((k, v) -> out.printf("  %-12s %s%n", k, v));
    out.flush();
    return 0;
  }
}
