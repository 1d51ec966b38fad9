package org.sparseflow.examples.train;

import java.io.PrintWriter;
import java.util.List;

/** Bridges compare to the dataflow simulator (org.sparseflow.dataflow). All numbers it prints are SIMULATED. */
public final class Simulations {

    private Simulations() {
    }

    /** Simulates one training step of each run's model on the dataflow chip and the GPU baseline. */
    public static List<String> compare(List<Comparison.Row> rows, PrintWriter out) {
        out.println("simulation: the dataflow simulator is not available in this build; skipped");
        return List.of();
    }
}
