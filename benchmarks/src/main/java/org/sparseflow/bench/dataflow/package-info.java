/**
 * The dataflow suite: calibration of the dataflow simulator (SIMULATED step times of sparse and
 * dense GPTs, sensitivity to its assumptions, simulator speed) and a recorded gpt-mini training
 * step simulated end to end; simulated and measured figures are labelled as such.
 */
package org.sparseflow.bench.dataflow;
