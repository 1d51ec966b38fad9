/**
 * The recording ND4J backend: an op executioner and training listeners that record the ops a model
 * actually executes.
 */
package org.sparseflow.dataflow.backend;
