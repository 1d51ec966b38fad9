package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.ops.CustomOp;

/** In-place edits of a SameDiff graph shared by the rewriters: find, remove and relink ops. */
final class GraphEdits {
  private GraphEdits() {}

  static SameDiffOp producer(SameDiff sd, String var) {
    Variable v = sd.getVariables().get(var);
    return v == null || v.getOutputOfOp() == null ? null : sd.getOps().get(v.getOutputOfOp());
  }

  /**
   * Removes {@code op} and its output variables from the graph; returns the consumers of its first
   * output (their input lists still name that output, so a new variable of the same name reconnects
   * them).
   */
  static List<String> removeOp(SameDiff sd, SameDiffOp op) {
    String out = op.getOutputsOfOp().get(0);
    List<String> consumers = sd.getVariables().get(out).getInputsForOp();
    consumers = consumers == null ? new ArrayList<>() : new ArrayList<>(consumers);
    for (String in : op.getInputsToOp()) {
      Variable v = sd.getVariables().get(in);
      if (v != null && v.getInputsForOp() != null) {
        v.getInputsForOp().remove(op.getName());
      }
    }
    for (String o : op.getOutputsOfOp()) {
      sd.getVariables().remove(o);
    }
    sd.getOps().remove(op.getName());
    return consumers;
  }

  static void relink(SameDiff sd, String out, List<String> consumers) {
    Variable v = sd.getVariables().get(out);
    if (v == null) {
      throw new IllegalStateException("rewritten output '" + out + "' is missing from the graph");
    }
    List<String> l =
        v.getInputsForOp() == null ? new ArrayList<>() : new ArrayList<>(v.getInputsForOp());
    for (String c : consumers) {
      if (!l.contains(c)) {
        l.add(c);
      }
    }
    v.setInputsForOp(l);
  }

  static String shape(long[] s) {
    return Arrays.toString(s);
  }

  /**
   * SameDiff gives a new op the first free op name ("matmul_13"), which may equal the name of a
   * variable that another op outputs (an output name we kept so consumers stay linked). The graph
   * runs, but SameDiff's FlatBuffers loader then binds that variable to the wrong op and the model
   * loses outputs after save/load. Such ops get a fresh name.
   */
  static void renameOpsNamedLikeForeignVariables(SameDiff sd) {
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      String name = op.getName();
      if (!sd.getVariables().containsKey(name) || op.getOutputsOfOp().contains(name)) {
        continue;
      }
      rename(sd, op);
    }
  }

  /**
   * Gives the op named {@code name}, if any, a fresh name, so that a variable can take that name
   * ({@code SameDiff.updateVariableNameAndReference} refuses names that an op holds; a rewrite that
   * removes an op and builds new ones can get the removed op's name back from SameDiff).
   */
  static void freeOpName(SameDiff sd, String name) {
    SameDiffOp op = sd.getOps().get(name);
    if (op != null) {
      rename(sd, op);
    }
  }

  private static void rename(SameDiff sd, SameDiffOp op) {
    String name = op.getName();
    String fresh = name + "_op";
    for (int i = 1; sd.getOps().containsKey(fresh) || sd.getVariables().containsKey(fresh); i++) {
      fresh = name + "_op" + i;
    }
    sd.getOps().remove(name);
    op.setName(fresh);
    op.getOp().setOwnName(fresh);
    sd.getOps().put(fresh, op);
    for (String in : op.getInputsToOp()) {
      List<String> users = sd.getVariables().get(in).getInputsForOp();
      if (users != null) {
        users.replaceAll(u -> u.equals(name) ? op.getName() : u);
      }
    }
    for (String out : op.getOutputsOfOp()) {
      sd.getVariables().get(out).setOutputOfOp(fresh);
    }
  }

  /** Whether a matmul op has no transposes and alpha 1 (beta 0). */
  static boolean plainMatmul(SameDiffOp op) {
    DifferentialFunction f = op.getOp();
    if (!(f instanceof CustomOp c)) {
      return false;
    }
    long[] ia = c.iArgs();
    if (ia != null) {
      for (long v : ia) {
        if (v != 0) {
          return false;
        }
      }
    }
    double[] ta = c.tArgs();
    return ta == null || ta.length == 0 || (ta[0] == 1.0 && (ta.length < 2 || ta[1] == 0.0));
  }

  /** Makes {@code op} read {@code to} where it read {@code from}, keeping both variables' links. */
  static void replaceInput(SameDiff sd, SameDiffOp op, String from, String to) {
    op.getInputsToOp().replaceAll(n -> n.equals(from) ? to : n);
    List<String> fromUsers = sd.getVariables().get(from).getInputsForOp();
    if (fromUsers != null) {
      fromUsers.remove(op.getName());
    }
    Variable t = sd.getVariables().get(to);
    List<String> l =
        t.getInputsForOp() == null ? new ArrayList<>() : new ArrayList<>(t.getInputsForOp());
    if (!l.contains(op.getName())) {
      l.add(op.getName());
    }
    t.setInputsForOp(l);
  }

  /** The single op consuming {@code var}, or null when none or several. */
  static SameDiffOp soleConsumer(SameDiff sd, String var) {
    Variable v = sd.getVariables().get(var);
    List<String> users = v == null ? null : v.getInputsForOp();
    return users == null || users.size() != 1 ? null : sd.getOps().get(users.get(0));
  }
}
