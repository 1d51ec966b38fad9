/**
 * MST on Apache Spark (parameter averaging and gradient sharing) and on ParallelWrapper: topology
 * decisions on the driver, masks identical on every worker, and the audits that check it.
 */
package org.sparseflow.spark;
