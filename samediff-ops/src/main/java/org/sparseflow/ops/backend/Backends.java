package org.sparseflow.ops.backend;

import java.util.concurrent.atomic.AtomicBoolean;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The single guard for "is this the native CPU backend": every SparseFlow check goes through here,
 * and nothing here touches nd4j-native or OpenBLAS classes unless they are on the classpath (their
 * names are compared as strings; {@link NativeCpu} is the only class that links against them).
 */
public final class Backends {

  private static final Logger LOG = LoggerFactory.getLogger(Backends.class);

  /** nd4j-native's backend class, named as a string so that nothing links against it. */
  static final String CPU_BACKEND_CLASS = "org.nd4j.linalg.cpu.nativecpu.CpuBackend";

  private static final String CPU_PACKAGE = "org.nd4j.linalg.cpu.nativecpu.";
  private static final AtomicBoolean FALLBACK_ANNOUNCED = new AtomicBoolean();
  private static volatile Boolean nativePresent;
  private static volatile Boolean cpuOpenBlas;

  private Backends() {}

  /** True when nd4j-native's classes are on the classpath (loads nothing from it). */
  public static boolean nativeCpuPresent() {
    Boolean p = nativePresent;
    if (p == null) {
      boolean ok;
      try {
        Class.forName(CPU_BACKEND_CLASS, false, Backends.class.getClassLoader());
        ok = true;
      } catch (ClassNotFoundException | LinkageError e) {
        ok = false;
      }
      nativePresent = p = ok;
    }
    return p;
  }

  /** True when ND4J runs on the native CPU backend (stock, or SparseFlow's delegating one). */
  public static boolean isNativeCpu() {
    Nd4jBackend b = Nd4j.getBackend();
    if (b instanceof SparseFlowBackend) {
      return ((SparseFlowBackend) b).delegatesToNativeCpu();
    }
    return b.getClass().getName().startsWith(CPU_PACKAGE);
  }

  /**
   * True when SparseFlow's BLAS kernels (raw OpenBLAS calls on ND4J buffers) can run: the native
   * CPU backend with OpenBLAS. Otherwise logs once at INFO that the dense masked fallback runs.
   */
  public static boolean isCpuOpenBlas() {
    Boolean b = cpuOpenBlas;
    if (b == null) {
      boolean ok;
      String why = null;
      try {
        ok = isNativeCpu();
        if (!ok) {
          why =
              "ND4J backend "
                  + Nd4j.getBackend().getClass().getSimpleName()
                  + " is not the native CPU backend";
        } else if (Nd4j.factory().blas().getBlasVendor() != Blas.Vendor.OPENBLAS) {
          ok = false;
          why = "BLAS vendor " + Nd4j.factory().blas().getBlasVendor() + " is not OpenBLAS";
        } else {
          NativeCpu.loadOpenBlas();
        }
      } catch (RuntimeException | LinkageError e) {
        ok = false;
        why = e.toString();
      }
      if (!ok) {
        announceDenseFallback(why);
      }
      cpuOpenBlas = b = ok;
    }
    return b;
  }

  /** True when the op executioner runs SparseFlow's Java ops (SparseFlow's backend is active). */
  public static boolean javaKernelsRun() {
    return Nd4j.getExecutioner() instanceof JavaKernelExecutioner;
  }

  /**
   * Says once per JVM, at INFO, that SparseFlow ops run as dense masked ND4J ops (same results,
   * dense cost) and why.
   */
  public static void announceDenseFallback(String why) {
    if (FALLBACK_ANNOUNCED.compareAndSet(false, true)) {
      LOG.info(
          "SparseFlow: {}; sparse layers and ops run as dense masked ND4J ops (same results, dense"
              + " cost). The block-sparse kernels need the ND4J native CPU backend"
              + " (org.nd4j:nd4j-native).",
          why);
    }
  }
}
