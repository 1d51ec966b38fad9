package org.sparseflow.mst.core;

import java.util.Arrays;
import java.util.Objects;

/**
 * Fraction ζ(t) of active connections dropped (and regrown) at a topology update.
 *
 * <ul>
 *   <li>CONSTANT: ζ until {@code end}, then 0.
 *   <li>COSINE: ζ/2·(1 + cos(π t / T_end)), 0 after T_end (RigL, Evci et al. 2020; MST code, ζ =
 *       0.3).
 *   <li>COSINE_RESTART: the cosine restarts at every phase boundary of the sparsity schedule and
 *       decays to 0 at the end of that phase (the authors' {@code stepwise_anealing}).
 * </ul>
 *
 * {@code end} is a fraction of the run (default 1.0: updates during the whole run, as in the MST
 * code).
 */
public final class DropFraction {

  /** Decay shape of the drop fraction. */
  public enum Kind {
    CONSTANT,
    COSINE,
    COSINE_RESTART
  }

  private Kind kind = Kind.COSINE;
  private double zeta = 0.3;
  private double end = 1.0;

  public DropFraction() {}

  public DropFraction(Kind kind, double zeta, double end) {
    this.kind = kind;
    this.zeta = zeta;
    this.end = end;
    validate();
  }

  public DropFraction validate() {
    if (kind == null) {
      throw Args.bad("dropFraction.kind", null, Arrays.toString(Kind.values()));
    }
    Args.unit("dropFraction.zeta", zeta);
    if (!(end > 0 && end <= 1)) {
      throw Args.bad("dropFraction.end", end, "a fraction of the run in (0, 1]");
    }
    return this;
  }

  /** ζ at a step; the schedule gives the run length and (for restarts) the phase boundaries. */
  public double at(long step, SparsitySchedule schedule) {
    long total = schedule.getTotalSteps();
    long tEnd = Math.max(1, Math.round(end * total));
    if (step >= tEnd) {
      return 0.0;
    }
    switch (kind) {
      case CONSTANT:
        return zeta;
      case COSINE:
        return zeta / 2 * (1 + Math.cos(Math.PI * step / tEnd));
      case COSINE_RESTART:
        {
          long[] b = schedule.boundarySteps();
          long[] cuts = {0, b[0], b[1], b[2], b[3], tEnd};
          long start = 0;
          long stop = tEnd;
          for (int i = 0; i < cuts.length - 1; i++) {
            if (cuts[i] <= step && step < cuts[i + 1]) {
              start = cuts[i];
              stop = cuts[i + 1];
            }
          }
          return zeta / 2 * (1 + Math.cos(Math.PI * (step - start) / Math.max(1, stop - start)));
        }
      default:
        throw new IllegalStateException(String.valueOf(kind));
    }
  }

  public Kind getKind() {
    return kind;
  }

  public void setKind(Kind kind) {
    this.kind = kind;
  }

  public double getZeta() {
    return zeta;
  }

  public void setZeta(double zeta) {
    this.zeta = zeta;
  }

  public double getEnd() {
    return end;
  }

  public void setEnd(double end) {
    this.end = end;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DropFraction
        && ((DropFraction) o).kind == kind
        && ((DropFraction) o).zeta == zeta
        && ((DropFraction) o).end == end;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, zeta, end);
  }
}
