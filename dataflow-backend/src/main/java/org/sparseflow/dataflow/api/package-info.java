/**
 * Entry points of the dataflow simulation: capture a model, simulate it on a dataflow chip and a
 * GPU baseline, and compare (all results SIMULATED).
 */
package org.sparseflow.dataflow.api;
