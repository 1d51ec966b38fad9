package org.sparseflow.dataflow;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import org.nd4j.common.io.AbstractResource;
import org.nd4j.common.io.Resource;
import org.nd4j.linalg.factory.Environment;
import org.nd4j.linalg.factory.Nd4jBackend;

/**
 * Stands in for nd4j-cuda's backend (priority 100, available) in {@link NoNativeClasspathTest}:
 * registered only on that child JVM's classpath. Never initialised; ND4J only has to find it.
 */
public class FakeGpuBackend extends Nd4jBackend {
  @Override
  public boolean allowsOrder() {
    return false;
  }

  @Override
  public int getPriority() {
    return BACKEND_PRIORITY_GPU;
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public boolean canRun() {
    return true;
  }

  @Override
  public Resource getConfigurationResource() {
    return new AbstractResource() {
      @Override
      public String getDescription() {
        return "empty configuration of the test stand-in";
      }

      @Override
      public InputStream getInputStream() {
        return new ByteArrayInputStream(new byte[0]);
      }
    };
  }

  @Override
  public Class<?> getNDArrayClass() {
    throw new UnsupportedOperationException("test stand-in");
  }

  @Override
  public Environment getEnvironment() {
    throw new UnsupportedOperationException("test stand-in");
  }

  @Override
  public String buildInfo() {
    return "fake";
  }

  @Override
  public void logBackendInit() {}
}
