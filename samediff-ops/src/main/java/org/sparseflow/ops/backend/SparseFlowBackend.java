package org.sparseflow.ops.backend;

import com.google.auto.service.AutoService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.nd4j.common.io.Resource;
import org.nd4j.linalg.factory.Environment;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ND4J backend SparseFlow registers: the native CPU backend with SparseFlow's op executioner
 * (which runs SparseFlow's Java ops and sends every other op to libnd4j unchanged).
 *
 * <p>It extends nd4j-api's {@link Nd4jBackend}, not nd4j-native's {@code CpuBackend}: ND4J's {@code
 * Nd4jBackend.load()} wraps its whole ServiceLoader loop in one {@code catch
 * (ServiceConfigurationError)}, so a registered class that cannot be linked (a {@code CpuBackend}
 * subclass without nd4j-native) would end the loop and could hide the CUDA backend. This class
 * always loads; it creates its delegate ({@code SparseFlowCpuBackend}) only when nd4j-native is on
 * the classpath, and otherwise reports itself unavailable with a priority below every stock
 * backend, so ND4J never even asks.
 *
 * <p>Priority {@code BACKEND_PRIORITY_CPU + 10}: above the stock CPU backend, below CUDA (100).
 * Switched off by {@code -Dsparseflow.backend=stock} or {@code SPARSEFLOW_BACKEND=stock} (see
 * {@link BackendSwitch}).
 */
@AutoService(Nd4jBackend.class)
public class SparseFlowBackend extends Nd4jBackend {

  /** Priority offset above the stock CPU backend. */
  public static final int PRIORITY_OFFSET = 10;

  /** Priority when not usable: below every stock backend, so ND4J never reaches it. */
  static final int PRIORITY_UNUSED = BACKEND_PRIORITY_CPU - 100;

  private static final Logger LOG = LoggerFactory.getLogger(SparseFlowBackend.class);
  private static final AtomicBoolean ANNOUNCED = new AtomicBoolean();

  private volatile Nd4jBackend delegate;

  public SparseFlowBackend() {
    super();
  }

  /** Whether this backend was asked for; subclasses add their own switch. */
  protected boolean wanted() {
    return BackendSwitch.sparseFlowBackendWanted();
  }

  /** Offset of this backend's priority above the stock CPU backend. */
  protected int priorityOffset() {
    return PRIORITY_OFFSET;
  }

  /** Name of the op executioner class written into the CPU backend's configuration. */
  protected String executionerClassName() {
    return "org.sparseflow.ops.samediff.SparseFlowOpExecutioner";
  }

  private boolean usable() {
    return wanted() && Backends.nativeCpuPresent();
  }

  /** The CPU backend this one delegates to; created on first use. */
  private Nd4jBackend delegate() {
    Nd4jBackend d = delegate;
    if (d == null) {
      synchronized (this) {
        d = delegate;
        if (d == null) {
          if (!Backends.nativeCpuPresent()) {
            throw new IllegalStateException(
                getClass().getSimpleName()
                    + " needs org.nd4j:nd4j-native on the classpath; it is absent, so ND4J should"
                    + " have picked another backend");
          }
          d = NativeCpu.newBackend(executionerClassName());
          delegate = d;
        }
      }
    }
    return d;
  }

  /** True once this backend runs on (delegates to) the native CPU backend. */
  public boolean delegatesToNativeCpu() {
    return delegate != null;
  }

  @Override
  public int getPriority() {
    return usable() ? BACKEND_PRIORITY_CPU + priorityOffset() : PRIORITY_UNUSED;
  }

  @Override
  public boolean isAvailable() {
    return usable() && delegate().isAvailable();
  }

  @Override
  public boolean canRun() {
    return delegate().canRun();
  }

  @Override
  public boolean allowsOrder() {
    return delegate().allowsOrder();
  }

  @Override
  public Resource getConfigurationResource() {
    return delegate().getConfigurationResource();
  }

  @Override
  public Class<?> getNDArrayClass() {
    return delegate().getNDArrayClass();
  }

  @Override
  public Environment getEnvironment() {
    return delegate().getEnvironment();
  }

  @Override
  public String buildInfo() {
    return delegate().buildInfo();
  }

  /** ND4J's last initialisation step: the CPU backend's own lines, then one INFO line of ours. */
  @Override
  public void logBackendInit() {
    delegate().logBackendInit();
    if (ANNOUNCED.compareAndSet(false, true)) {
      LOG.info(
          "SparseFlow: ND4J runs the native CPU backend with SparseFlow's op executioner {}"
              + " (SparseFlow's Java ops run in Java, every other op in libnd4j unchanged). Switch"
              + " off with -D{}=stock or {}=stock.",
          executionerClassName(),
          BackendSwitch.PROPERTY,
          BackendSwitch.ENV);
    }
  }
}
