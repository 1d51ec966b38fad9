/**
 * Optimizer settings shared by every training run, dense or sparse: learning-rate warm-up and decay
 * ({@link org.sparseflow.train.optim.WarmupDecaySchedule}), per-parameter gradient clipping ({@link
 * org.sparseflow.train.optim.ClipL2PerParam}), and {@link org.sparseflow.train.optim.Optimizers},
 * which turns a run's options into an ND4J updater for SameDiff and DL4J models alike. A dense
 * baseline and an MST run use the same code, so a comparison gives both the same schedule options.
 */
package org.sparseflow.train.optim;
