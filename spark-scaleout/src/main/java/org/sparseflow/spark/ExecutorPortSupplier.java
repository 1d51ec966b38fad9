package org.sparseflow.spark;

import org.apache.spark.SparkEnv;
import org.nd4j.parameterserver.distributed.v2.transport.PortSupplier;

/**
 * Gradient sharing: gives the driver and every Spark executor its own UDP port for the
 * parameter-server transport: the driver (the mesh root) {@code basePort}, executor {@code i}
 * {@code basePort + 1 + i} (executor ids are 0, 1, 2, ... within an application).
 *
 * <p>dl4j-spark-parameterserver M2 names a mesh node by {@code ip:port}, and its driver takes the
 * root's port from the same supplier. With one fixed port ({@code VoidConfiguration.unicastPort})
 * the driver and the executors on one host share an id: measured on a one-host cluster, an executor
 * took itself for the root and logged "Skipping broadcast due to absence of nodes in mesh" on every
 * step while the other one received nothing. On separate hosts a fixed port works; this supplier
 * needs the range {@code basePort .. basePort + 1 + highest executor id} open (UDP) instead.
 */
public final class ExecutorPortSupplier implements PortSupplier {
  private static final long serialVersionUID = 1L;
  private final int basePort;

  /**
   * @param basePort the driver's port; executor {@code i} uses {@code basePort + 1 + i}
   */
  public ExecutorPortSupplier(int basePort) {
    if (basePort < 1024 || basePort > 65000) {
      throw new IllegalArgumentException(
          "basePort = " + basePort + " is invalid; allowed: 1024..65000");
    }
    this.basePort = basePort;
  }

  @Override
  public int getPort() {
    SparkEnv env = SparkEnv.get();
    String id = env == null ? null : env.executorId();
    if (id == null || !id.chars().allMatch(Character::isDigit) || id.isEmpty()) {
      return basePort; // driver or local mode: one JVM, one port
    }
    int port = basePort + 1 + Integer.parseInt(id);
    if (port > 65535) {
      throw new IllegalStateException(
          "executor id " + id + " gives UDP port " + port + " > 65535; lower the base port");
    }
    return port;
  }

  @Override
  public String toString() {
    return "ExecutorPortSupplier(basePort=" + basePort + ")";
  }
}
