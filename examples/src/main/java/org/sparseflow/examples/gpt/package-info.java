/**
 * Reference GPTs (character-level decoders): their sizes ({@link
 * org.sparseflow.examples.gpt.GptConfig}, one definition of gpt-tiny/mini/small), a SameDiff
 * builder and a DL4J ComputationGraph builder.
 */
package org.sparseflow.examples.gpt;
