package org.sparseflow.ops.samediff;

import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * What the packed matmul's forward and backward ops share: the kept-block layout, carried in the
 * iArgs (so a saved graph keeps it) and cached as a {@link PackedLayout}, and its replacement at
 * MST's topology steps.
 */
public abstract class BasePackedMatmulOp extends BaseJavaKernelOp {

  private transient PackedLayout layout;

  protected BasePackedMatmulOp() {}

  protected BasePackedMatmulOp(SameDiff sd, SDVariable[] args, PackedLayout layout) {
    super(sd, args);
    addIArgument(PackedMatmulKernels.iArgs(layout));
    this.layout = layout;
  }

  /** The kept-block layout of the weight (from the iArgs). */
  public PackedLayout layout() {
    if (layout == null) {
      layout = PackedMatmulKernels.layout(iArgs(), opName());
    }
    return layout;
  }

  /**
   * Replaces the kept-block layout (and so the iArgs); the caller relayouts the packed values to
   * match, as MST does at its topology steps. The shape (block size, rows, cols) must not change.
   */
  public void setLayout(PackedLayout next) {
    PackedMatmulKernels.checkSameShape(layout(), next, opName());
    iArguments.clear();
    addIArgument(PackedMatmulKernels.iArgs(next));
    layout = next;
  }
}
