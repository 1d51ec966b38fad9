package org.sparseflow.bench.ops;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The host a benchmark ran on, as {@code cpu=<model> isa=<avx2|avx512|other> blas=<name>} for
 * RESULT lines: the CPU model and ISA from {@code /proc/cpuinfo} (Linux), the BLAS vendor ND4J
 * reports plus {@code OPENBLAS_CORETYPE} when it is set (it forces OpenBLAS's kernels, e.g. Haswell
 * AVX2 kernels on an AVX-512 machine), and which block-sparse kernel ran ({@code
 * kernel=vector<lanes>} for the JDK Vector API one, {@code kernel=blas} without {@code
 * --add-modules jdk.incubator.vector}). When the JVM runs with {@code -XX:UseAVX=2} or lower on an
 * AVX-512 host (to emulate an AVX2-only host), the ISA reads e.g. {@code avx512_jvm_avx2}.
 */
final class HostInfo {

  private HostInfo() {}

  private static String cached;

  /** {@code cpu=... isa=... blas=... kernel=...} (spaces in the model name become underscores). */
  static synchronized String fields() {
    if (cached == null) {
      String model = "unknown";
      String isa = "other";
      try {
        List<String> lines = Files.readAllLines(Path.of("/proc/cpuinfo"));
        for (String l : lines) {
          if (l.startsWith("model name") && model.equals("unknown")) {
            model = l.substring(l.indexOf(':') + 1).trim();
          }
          if (l.startsWith("flags")) {
            String flags = " " + l.substring(l.indexOf(':') + 1) + " ";
            isa = flags.contains(" avx512f ") ? "avx512" : flags.contains(" avx2 ") ? "avx2" : isa;
            break;
          }
        }
      } catch (IOException | RuntimeException e) {
        // not Linux: leave unknown
      }
      String blas = Nd4j.factory().blas().getBlasVendor().name().toLowerCase();
      String core = System.getenv("OPENBLAS_CORETYPE");
      if (core != null && !core.isBlank()) {
        blas += "(coretype=" + core.trim() + ")";
      }
      String useAvx = useAvx();
      if (isa.equals("avx512") && useAvx != null && !useAvx.equals("3")) {
        isa += useAvx.equals("2") ? "_jvm_avx2" : "_jvm_useavx" + useAvx;
      }
      String kernel = VectorSupport.AVAILABLE ? "vector" + VectorSupport.lanes() : "blas";
      cached =
          "cpu="
              + model.replaceAll("\\s+", "_")
              + " isa="
              + isa
              + " blas="
              + blas
              + " kernel="
              + kernel;
    }
    return cached;
  }

  /** The HotSpot {@code UseAVX} level, or null where the JVM does not report it. */
  private static String useAvx() {
    try {
      return ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
          .getVMOption("UseAVX")
          .getValue();
    } catch (RuntimeException e) {
      return null;
    }
  }
}
