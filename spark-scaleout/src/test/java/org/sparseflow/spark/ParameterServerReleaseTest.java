package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.DatagramSocket;
import java.net.InetAddress;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.nd4j.parameterserver.distributed.conf.VoidConfiguration;
import org.nd4j.parameterserver.distributed.v2.transport.impl.AeronUdpTransport;

/** Stopped Aeron transports leave no threads behind once released. */
class ParameterServerReleaseTest {

  /** Threads currently running one of AeronUdpTransport's loops (poll, message, sender). */
  static Set<Thread> transportThreads() {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(
            e -> {
              for (StackTraceElement f : e.getValue()) {
                if (f.getClassName().startsWith(AeronUdpTransport.class.getName() + "$")) {
                  return true;
                }
              }
              return false;
            })
        .map(Map.Entry::getKey)
        .collect(Collectors.toSet());
  }

  static int freePort() throws Exception {
    try (DatagramSocket s = new DatagramSocket(0, InetAddress.getByName("127.0.0.1"))) {
      return s.getLocalPort();
    }
  }

  static AeronUdpTransport root() throws Exception {
    int port = freePort();
    AeronUdpTransport t =
        new AeronUdpTransport(
            "127.0.0.1", port, VoidConfiguration.builder().unicastPort(port).build());
    t.launchAsMaster();
    return t;
  }

  static Set<Thread> awaitThreadsOtherThan(Set<Thread> keep, int expected) throws Exception {
    Set<Thread> left = null;
    for (int i = 0; i < 200; i++) {
      left = transportThreads();
      left.removeAll(keep);
      if (left.size() == expected) {
        break;
      }
      Thread.sleep(25);
    }
    return left;
  }

  @Test
  void releasedTransportThreadsEndWhileARunningTransportKeepsItsOwn() throws Exception {
    Set<Thread> before = transportThreads();
    AeronUdpTransport running = root();
    AeronUdpTransport stopped = root();
    try {
      Set<Thread> both = awaitThreadsOtherThan(before, 10);
      // 2 transports x (1 poll + 2 message + 2 sender threads)
      assertEquals(10, both.size(), "threads of two running transports: " + both);

      // releasing a running transport changes nothing
      ParameterServerRelease.release(running);
      ParameterServerRelease.release(null);
      Thread.sleep(200); // give a wrongly interrupted thread time to end
      assertEquals(
          10, awaitThreadsOtherThan(before, 10).size(), "a running transport was left alone");

      stopped.shutdown();
      // dl4j's own shutdown leaves every loop thread alive (the leak this class exists for)
      Thread.sleep(200);
      assertEquals(10, awaitThreadsOtherThan(before, 10).size(), "dl4j M2 leak reproduced");

      ParameterServerRelease.release(stopped);
      Set<Thread> left = awaitThreadsOtherThan(before, 5);
      assertEquals(5, left.size(), "only the running transport's threads remain: " + left);
      ParameterServerRelease.release(stopped); // a second release is harmless
      assertEquals(5, awaitThreadsOtherThan(before, 5).size(), "second release changed nothing");
    } finally {
      running.shutdown();
      ParameterServerRelease.release(running);
      stopped.shutdown();
    }
    assertEquals(0, awaitThreadsOtherThan(before, 0).size(), "all released");
  }
}
