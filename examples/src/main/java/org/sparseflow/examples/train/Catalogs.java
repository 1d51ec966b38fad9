package org.sparseflow.examples.train;

import java.util.LinkedHashMap;
import java.util.Map;

/** What ships in the jar: sparsity presets (from mst-scheduler) and hardware files (from dataflow-backend). */
public final class Catalogs {

    private Catalogs() {
    }

    /** Preset name -> one-line description. */
    public static Map<String, String> sparsityPresets() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("dense", "no sparsity (the baseline)");
        return m;
    }

    /** Hardware file name -> description. */
    public static Map<String, String> hardwareFiles() {
        return new LinkedHashMap<>();
    }
}
