/**
 * The MST suites: gpt-mini trained dense and with MST variants (validation-loss gap, FLOP
 * reduction, wall-clock speed-up), and the training-step time of the ComputationGraph GPT.
 */
package org.sparseflow.bench.mst;
