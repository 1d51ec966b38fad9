package org.sparseflow.spark;

import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicLong;
import org.nd4j.common.primitives.Atomic;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.parameterserver.distributed.v2.ModelParameterServer;
import org.nd4j.parameterserver.distributed.v2.transport.Transport;
import org.nd4j.parameterserver.distributed.v2.transport.UpdatesHandler;
import org.nd4j.parameterserver.distributed.v2.transport.impl.BaseTransport;
import org.nd4j.parameterserver.distributed.v2.util.MeshOrganizer;
import org.reactivestreams.Subscription;

/**
 * Reads, inside one JVM, what the gradient-sharing parameter server (dl4j-spark-parameterserver's
 * {@link ModelParameterServer}) did: the size of its mesh and the number of gradient updates that
 * arrived from peers. {@link MaskGuardListener} puts both in every audit record, so the driver can
 * tell a job whose executors exchanged updates from one whose executors each trained alone.
 */
final class GradientSharingProbe {
  private static final AtomicLong RECEIVED = new AtomicLong();
  private static Transport counted;

  private GradientSharingProbe() {}

  /**
   * Nodes (root included) in the mesh this JVM's transport broadcasts to, or -1 when no parameter
   * server runs here. This is the mesh that {@code BaseTransport.propagateMessage} checks before it
   * logs "Skipping broadcast due to absence of nodes in mesh"; {@code Transport.totalNumberOfNodes}
   * is a separate counter that can already show every node while this mesh is still empty. The
   * field is protected in dl4j M2 with no getter, hence the reflective read.
   */
  @SuppressWarnings("unchecked")
  static synchronized int meshNodes() {
    ModelParameterServer mps = ModelParameterServer.getInstance();
    Transport t = mps.getTransport();
    if (!mps.isInitialized() || !(t instanceof BaseTransport)) {
      return -1;
    }
    ensureCounting(mps);
    try {
      Field f = BaseTransport.class.getDeclaredField("mesh");
      f.setAccessible(true);
      MeshOrganizer mesh = ((Atomic<MeshOrganizer>) f.get(t)).get();
      return mesh == null ? 0 : (int) mesh.totalNodes();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return t.totalNumberOfNodes();
    }
  }

  /** Updates received from peers by this JVM so far (all runs). */
  static long received() {
    return RECEIVED.get();
  }

  /**
   * Subscribes a counter to the parameter server's incoming updates, again after each restart (a
   * restart drops every subscriber).
   */
  private static void ensureCounting(ModelParameterServer mps) {
    if (mps.getTransport() == counted) {
      return;
    }
    counted = mps.getTransport();
    mps.addUpdatesSubscriber(
        new UpdatesHandler() {
          @Override
          public INDArray getParametersArray() {
            return null;
          }

          @Override
          public void onSubscribe(Subscription s) {
            // pushed by the parameter server; nothing to request
          }

          @Override
          public void onNext(INDArray update) {
            RECEIVED.incrementAndGet();
          }

          @Override
          public void onError(Throwable t) {
            // the training thread sees transport errors itself
          }

          @Override
          public void onComplete() {
            // nothing to release
          }
        });
  }
}
