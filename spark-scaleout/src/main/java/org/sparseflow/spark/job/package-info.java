/**
 * A self-contained Spark application for the job jar ({@code spark-scaleout-<version>-job.jar}):
 * MST on a small sparse MLP with teacher-labelled data, run with spark-submit on a real cluster to
 * check that the scale-out works there (masks, audits, loss against the single machine, kill and
 * resume). The multi-JVM integration test and {@code scripts/local-spark-cluster.sh} use it.
 */
package org.sparseflow.spark.job;
