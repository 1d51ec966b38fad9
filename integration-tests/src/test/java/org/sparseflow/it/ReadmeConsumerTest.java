package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The consumer project that the invoker plugin builds (src/it/consumer) is made from README.md
 * alone: its dependency block is the README's Maven snippet and the code it runs holds the README's
 * Java examples, verbatim. Also: the BOM and the reactor have one version.
 */
class ReadmeConsumerTest {

  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
  private static final Path CONSUMER = Path.of("src/it/consumer");

  /** Lines between two marker lines, with the common indentation removed. */
  private static String between(String text, String begin, String end) {
    List<String> out = new ArrayList<>();
    boolean in = false;
    for (String line : text.split("\n", -1)) {
      if (line.contains(end)) {
        break;
      }
      if (in) {
        out.add(line);
      }
      if (line.contains(begin)) {
        in = true;
      }
    }
    assertTrue(in, "marker '" + begin + "' not found");
    int indent = Integer.MAX_VALUE;
    for (String l : out) {
      if (!l.isBlank()) {
        indent = Math.min(indent, l.length() - l.stripLeading().length());
      }
    }
    StringBuilder sb = new StringBuilder();
    for (String l : out) {
      sb.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    }
    return sb.toString().strip();
  }

  /** The fenced code blocks of a language in README.md. */
  private static List<String> readmeBlocks(String readme, String lang) {
    List<String> blocks = new ArrayList<>();
    Matcher m = Pattern.compile("```" + lang + "\n(.*?)```", Pattern.DOTALL).matcher(readme);
    while (m.find()) {
      blocks.add(m.group(1).strip());
    }
    return blocks;
  }

  @Test
  void consumerPomIsTheReadmeSnippetAndRunsTheReadmeJava() throws Exception {
    String readme = Files.readString(ROOT.resolve("README.md"));
    String pom = Files.readString(CONSUMER.resolve("pom.xml"));
    String java = Files.readString(CONSUMER.resolve("src/main/java/example/Consumer.java"));
    String snippet = between(pom, "README snippet: begin", "README snippet: end");
    assertTrue(
        readmeBlocks(readme, "xml").contains(snippet),
        "README.md has no ```xml block equal to the consumer pom's snippet:\n" + snippet);
    List<String> javaBlocks = readmeBlocks(readme, "java");
    for (String part : new String[] {"dl4j", "samediff"}) {
      String code = between(java, "README: " + part + " begin", "README: " + part + " end");
      assertTrue(
          javaBlocks.contains(code),
          "README.md has no ```java block equal to the consumer's " + part);
    }
  }

  @Test
  void bomAndReactorHaveOneVersion() throws Exception {
    String bom = Files.readString(ROOT.resolve("sparseflow-bom/pom.xml"));
    String parent = Files.readString(ROOT.resolve("pom.xml"));
    Matcher pv =
        Pattern.compile("<artifactId>sparseflow-parent</artifactId>\\s*<version>([^<]+)</version>")
            .matcher(parent);
    Matcher bv = Pattern.compile("<sparseflow.version>([^<]+)</sparseflow.version>").matcher(bom);
    assertTrue(pv.find() && bv.find());
    assertEquals(pv.group(1), bv.group(1), "sparseflow-bom's sparseflow.version");
    assertTrue(
        bom.contains("<version>" + pv.group(1) + "</version>"), "sparseflow-bom's own version");
  }
}
