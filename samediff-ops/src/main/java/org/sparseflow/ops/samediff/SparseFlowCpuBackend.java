package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import org.nd4j.common.io.AbstractResource;
import org.nd4j.common.io.Resource;
import org.nd4j.linalg.cpu.nativecpu.CpuBackend;
import org.nd4j.linalg.factory.Nd4jBackend;

/**
 * ND4J CPU backend with {@link SparseFlowOpExecutioner} as op executioner, so SparseFlow Java ops
 * run whenever samediff-ops is on the classpath. Everything else is the stock CPU backend: its
 * configuration is a copy of nd4j-native.properties with {@code opexec} replaced. Priority {@code
 * BACKEND_PRIORITY_CPU + 10} (still below CUDA's 100). Switch it off with {@code
 * -Dsparseflow.backend.disable=true}.
 */
@AutoService(Nd4jBackend.class)
public class SparseFlowCpuBackend extends CpuBackend {

  /** Priority offset above the stock CPU backend. */
  public static final int PRIORITY_OFFSET = 10;

  public SparseFlowCpuBackend() {
    super();
  }

  @Override
  public int getPriority() {
    return super.getPriority() + PRIORITY_OFFSET;
  }

  @Override
  public boolean isAvailable() {
    return !Boolean.getBoolean("sparseflow.backend.disable") && super.isAvailable();
  }

  /**
   * Called by {@code Nd4j.initWithBackend} as its last step, when ND4J is fully set up: the safe
   * point to register the Java ops (doing it earlier re-enters ND4J initialisation through
   * ImportClassMapping).
   */
  @Override
  public void logBackendInit() {
    super.logBackendInit();
    SparseFlowOps.registerAll();
  }

  /** Name of the executioner class written into the configuration; subclasses may change it. */
  protected String executionerClassName() {
    return SparseFlowOpExecutioner.class.getName();
  }

  @Override
  public Resource getConfigurationResource() {
    Properties props = new Properties();
    try (InputStream in = super.getConfigurationResource().getInputStream()) {
      props.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read nd4j-native.properties", e);
    }
    props.setProperty("opexec", executionerClassName());
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
