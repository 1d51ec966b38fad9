/**
 * Entry point of {@code sparseflow-benchmarks.jar}: picks a suite by name; every suite prints
 * machine-readable {@code RESULT} lines.
 */
package org.sparseflow.bench;
