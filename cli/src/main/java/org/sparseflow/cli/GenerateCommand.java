package org.sparseflow.cli;

import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import org.sparseflow.train.Sampling;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sparseflow generate}: samples text from a trained run. */
@Command(
    name = "generate",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description =
        "Sample text from a run directory's model (model.zip, or its checkpoint if training was"
            + " interrupted).")
public final class GenerateCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--run-dir",
      required = true,
      paramLabel = "<run-dir>",
      description = "Run directory written by 'sparseflow train'.")
  Path runDir;

  @Option(names = "--prompt", description = "Text to continue (default: '${DEFAULT-VALUE}').")
  String prompt = "Call me ";

  @Option(
      names = "--length",
      description = "Characters to generate, 1..100000 (default: ${DEFAULT-VALUE}).")
  int length = 300;

  @Option(
      names = "--temperature",
      description = "Sampling temperature, > 0 and <= 10 (default: ${DEFAULT-VALUE}).")
  double temperature = 0.8;

  @Option(names = "--seed", description = "Random seed (default: ${DEFAULT-VALUE}).")
  long seed = 1;

  @Override
  public Integer call() throws Exception {
    if (length < 1 || length > 100_000) {
      throw new IllegalArgumentException("--length: " + length + " is outside 1..100000");
    }
    if (!(temperature > 0 && temperature <= 10)) {
      throw new IllegalArgumentException("--temperature: " + temperature + " is outside (0, 10]");
    }
    if (prompt.isEmpty()) {
      throw new IllegalArgumentException("--prompt: is empty; give at least one character");
    }
    Sampling.Loaded loaded = Sampling.load(runDir);
    String text =
        Sampling.generate(loaded, prompt, length, temperature, new SplittableRandom(seed));
    var out = spec.commandLine().getOut();
    out.println(prompt + text);
    out.flush();
    return 0;
  }
}
