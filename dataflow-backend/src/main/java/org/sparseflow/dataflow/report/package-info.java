/** Reports of a simulation: text tables, JSON, charts and Chrome traces, all labelled SIMULATED. */
package org.sparseflow.dataflow.report;
