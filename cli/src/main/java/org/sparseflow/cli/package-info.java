/**
 * The {@code sparseflow} command line: picocli commands that validate their options and delegate to
 * the trainer and simulator libraries, and map failures to exit codes.
 */
package org.sparseflow.cli;
