package org.sparseflow.layers.samediff;

/**
 * A recognised attention, replaced or not: the names of its Q, K and V inputs ([B, H, T, D]) and of
 * its output, from which {@link HeadAwareMasks} traces the projections and the head layout.
 */
record AttentionSite(String q, String k, String v, String out) {}
