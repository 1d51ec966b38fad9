package org.sparseflow.dataflow;

import java.util.Iterator;
import java.util.ServiceLoader;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.sparseflow.ops.backend.Backends;

/**
 * Child JVM for {@link NoNativeClasspathTest}: lists the registered ND4J backends as ServiceLoader
 * instantiates them, then runs ND4J's own discovery ({@code Nd4jBackend.load()}).
 */
public final class DiscoveryChild {
  private DiscoveryChild() {}

  public static void main(String[] args) {
    System.out.println("NATIVE " + Backends.nativeCpuPresent());
    Iterator<Nd4jBackend> it = ServiceLoader.load(Nd4jBackend.class).iterator();
    while (it.hasNext()) {
      try {
        Nd4jBackend b = it.next();
        System.out.println(
            "PROVIDER " + b.getClass().getName() + " " + b.getPriority() + " " + b.isAvailable());
      } catch (Throwable t) {
        System.out.println("BROKEN " + t);
      }
    }
    try {
      System.out.println("LOADED " + Nd4jBackend.load().getClass().getName());
    } catch (Nd4jBackend.NoAvailableBackendException e) {
      System.out.println("NOBACKEND " + e.getMessage());
    } catch (Throwable t) {
      System.out.println("BROKEN " + t);
    }
  }
}
