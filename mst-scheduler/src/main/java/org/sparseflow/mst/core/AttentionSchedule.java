package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Hybrid Sparse Attention (MST): which attention pattern each layer uses in each phase. Rules are tried in
 * order; the first whose phases and layers match gives the pattern, else {@link #getDefaultPattern()}.
 * Patterns use the samediff-ops {@code AttentionPattern} syntax ("dense", "local:16+strided:16", ...).
 * <p>Layer selectors: {@code "all"}, a list {@code "0,2,3"}, or {@code "every:N"} (layers 0, N, 2N, ...),
 * optionally {@code "every:N/K"} (layers with index % N == K). Examples:
 * <ul>
 *   <li>the authors' code: one rule {phases: [ULTRA], layers: all, pattern: local+strided}, dense otherwise;</li>
 *   <li>dense every 4th layer: {phases:[ULTRA], layers:"every:4", pattern:dense} before the sparse rule.</li>
 * </ul>
 */
public final class AttentionSchedule {

    /** One rule. */
    public static final class Rule {
        private List<Phase> phases = new ArrayList<>();
        private String layers = "all";
        private String pattern = "dense";

        public Rule() {
        }

        public Rule(List<Phase> phases, String layers, String pattern) {
            this.phases = new ArrayList<>(phases);
            this.layers = layers;
            this.pattern = pattern;
        }

        public List<Phase> getPhases() { return phases; }
        public void setPhases(List<Phase> v) { phases = v; }
        public String getLayers() { return layers; }
        public void setLayers(String v) { layers = v; }
        public String getPattern() { return pattern; }
        public void setPattern(String v) { pattern = v; }

        boolean matches(int layer, Phase phase) {
            Set<Phase> ps = phases == null || phases.isEmpty() ? EnumSet.allOf(Phase.class) : EnumSet.copyOf(phases);
            return ps.contains(phase) && layerMatches(layers, layer);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Rule && Objects.equals(((Rule) o).phases, phases)
                    && Objects.equals(((Rule) o).layers, layers) && Objects.equals(((Rule) o).pattern, pattern);
        }

        @Override
        public int hashCode() {
            return Objects.hash(phases, layers, pattern);
        }
    }

    private String defaultPattern = "dense";
    private int blockSize = 16;
    private List<Rule> rules = new ArrayList<>();

    public AttentionSchedule() {
    }

    /** Dense attention everywhere. */
    public static AttentionSchedule dense() {
        return new AttentionSchedule();
    }

    /** The authors' HSA: one sparse pattern for all layers during ultra-sparsification, dense otherwise. */
    public static AttentionSchedule sparseInUltra(String pattern) {
        AttentionSchedule a = new AttentionSchedule();
        a.rules.add(new Rule(List.of(Phase.ULTRA), "all", pattern));
        return a.validate();
    }

    public AttentionSchedule validate() {
        if (blockSize < 1) {
            throw Args.bad("attention.blockSize", blockSize, "an integer >= 1");
        }
        AttentionDensity.check("attention.defaultPattern", defaultPattern);
        for (int i = 0; i < rules.size(); i++) {
            Rule r = rules.get(i);
            AttentionDensity.check("attention.rules[" + i + "].pattern", r.pattern);
            layerMatches(r.layers, 0); // throws on bad syntax
        }
        return this;
    }

    public String patternFor(int layer, Phase phase) {
        for (Rule r : rules) {
            if (r.matches(layer, phase)) {
                return r.pattern;
            }
        }
        return defaultPattern;
    }

    static boolean layerMatches(String sel, int layer) {
        String allowed = "\"all\", a list like \"0,2\", or \"every:N\" / \"every:N/K\"";
        if (sel == null) {
            throw Args.bad("attention rule layers", null, allowed);
        }
        String s = sel.trim().toLowerCase(java.util.Locale.ROOT);
        try {
            if (s.equals("all")) {
                return true;
            }
            if (s.startsWith("every:")) {
                String[] p = s.substring(6).split("/");
                int n = Integer.parseInt(p[0].trim());
                int k = p.length > 1 ? Integer.parseInt(p[1].trim()) : 0;
                if (n < 1 || k < 0 || k >= n) {
                    throw Args.bad("attention rule layers", sel, allowed + " with N >= 1 and 0 <= K < N");
                }
                return layer % n == k;
            }
            for (String t : s.split(",")) {
                if (Integer.parseInt(t.trim()) == layer) {
                    return true;
                }
            }
            return false;
        } catch (NumberFormatException e) {
            throw Args.bad("attention rule layers", sel, allowed);
        }
    }

    public String getDefaultPattern() { return defaultPattern; }
    public void setDefaultPattern(String v) { defaultPattern = v; }
    public int getBlockSize() { return blockSize; }
    public void setBlockSize(int v) { blockSize = v; }
    public List<Rule> getRules() { return rules; }
    public void setRules(List<Rule> v) { rules = v; }

    @Override
    public boolean equals(Object o) {
        return o instanceof AttentionSchedule && Objects.equals(((AttentionSchedule) o).defaultPattern, defaultPattern)
                && ((AttentionSchedule) o).blockSize == blockSize && Objects.equals(((AttentionSchedule) o).rules, rules);
    }

    @Override
    public int hashCode() {
        return Objects.hash(defaultPattern, blockSize, rules);
    }
}
