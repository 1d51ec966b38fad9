package org.sparseflow.cli;

import java.nio.file.Path;
import java.util.Locale;
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
        "Sample text from a run directory's model: model.zip when training completed, else the"
            + " checkpoint; model.zip with summary.json alone also works. Everything is checked"
            + " before use.")
public final class GenerateCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--run-dir",
      required = true,
      paramLabel = "<run-dir>",
      description =
          "Run directory written by 'sparseflow train' (with checkpoint.zip, or model.zip and"
              + " summary.json).")
  Path runDir;

  @Option(
      names = "--prompt",
      description =
          "Text to continue, 1..10000 characters of the run's vocabulary (default:"
              + " '${DEFAULT-VALUE}').")
  String prompt = "Call me ";

  @Option(
      names = "--length",
      description = "Characters to generate, 1..100000 (default: ${DEFAULT-VALUE}).")
  int length = 300;

  @Option(
      names = "--temperature",
      description = "Sampling temperature, > 0 and <= 10 (default: ${DEFAULT-VALUE}).")
  double temperature = 0.8;

  @Option(
      names = "--seed",
      description = "Random seed, any 64-bit integer (default: ${DEFAULT-VALUE}).")
  long seed = 1;

  @Override
  public Integer call() throws Exception {
    if (length < 1 || length > 100_000) {
      throw new IllegalArgumentException("--length: " + length + " is outside 1..100000");
    }
    if (!(temperature > 0 && temperature <= 10)) {
      throw new IllegalArgumentException("--temperature: " + temperature + " is outside (0, 10]");
    }
    if (prompt.isEmpty() || prompt.length() > 10_000) {
      throw new IllegalArgumentException(
          "--prompt: " + prompt.length() + " characters; allowed: 1..10000 characters");
    }
    Sampling.Loaded loaded = Sampling.load(runDir);
    String vocabulary = loaded.tokenizer().vocabulary();
    for (int i = 0; i < prompt.length(); i++) {
      char ch = prompt.charAt(i);
      if (vocabulary.indexOf(ch) < 0) {
        throw new IllegalArgumentException(
            String.format(
                Locale.ROOT,
                "--prompt: character '%c' (U+%04X) at position %d is not in the run's"
                    + " vocabulary; allowed: its %d characters",
                ch,
                (int) ch,
                i,
                vocabulary.length()));
      }
    }
    String text =
        Sampling.generate(loaded, prompt, length, temperature, new SplittableRandom(seed));
    var out = spec.commandLine().getOut();
    out.println(prompt + text);
    out.flush();
    return 0;
  }
}
