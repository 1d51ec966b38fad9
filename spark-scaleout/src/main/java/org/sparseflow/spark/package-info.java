/**
 * Mixed Sparsity Training on Apache Spark (dl4j-spark parameter averaging and gradient sharing) and
 * ParallelWrapper: one topology decision per interval on the driver, masks broadcast with the
 * parameters, worker audits that reach the driver, checkpoint and resume.
 */
package org.sparseflow.spark;
