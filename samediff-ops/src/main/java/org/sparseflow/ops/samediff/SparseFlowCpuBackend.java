package org.sparseflow.ops.samediff;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import org.nd4j.common.io.AbstractResource;
import org.nd4j.common.io.Resource;
import org.nd4j.linalg.cpu.nativecpu.CpuBackend;

/**
 * nd4j-native's CPU backend with another op executioner written into its configuration (a copy of
 * nd4j-native.properties with {@code opexec} replaced). Not registered with ServiceLoader: {@link
 * org.sparseflow.ops.backend.SparseFlowBackend}, which links only against nd4j-api, creates it when
 * nd4j-native is on the classpath and delegates to it.
 */
public class SparseFlowCpuBackend extends CpuBackend {

  private final String executionerClassName;

  /** The CPU backend with {@link SparseFlowOpExecutioner}. */
  public SparseFlowCpuBackend() {
    this(SparseFlowOpExecutioner.class.getName());
  }

  /** The CPU backend with the named executioner (a subclass of {@link SparseFlowOpExecutioner}). */
  public SparseFlowCpuBackend(String executionerClassName) {
    super();
    this.executionerClassName = executionerClassName;
  }

  /** Name of the executioner class written into the configuration. */
  public String executionerClassName() {
    return executionerClassName;
  }

  @Override
  public Resource getConfigurationResource() {
    Properties props = new Properties();
    try (InputStream in = super.getConfigurationResource().getInputStream()) {
      props.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read nd4j-native.properties", e);
    }
    props.setProperty("opexec", executionerClassName);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      props.store(bytes, "nd4j-native.properties with SparseFlow op executioner");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new BytesResource(bytes.toByteArray(), "sparseflow-nd4j-native.properties");
  }

  /** In-memory properties resource. */
  private static final class BytesResource extends AbstractResource {
    private final byte[] data;
    private final String name;

    BytesResource(byte[] data, String name) {
      this.data = data;
      this.name = name;
    }

    @Override
    public InputStream getInputStream() {
      return new ByteArrayInputStream(data);
    }

    @Override
    public boolean exists() {
      return true;
    }

    @Override
    public long contentLength() {
      return data.length;
    }

    @Override
    public String getFilename() {
      return name;
    }

    @Override
    public String getDescription() {
      return "in-memory " + name;
    }
  }
}
