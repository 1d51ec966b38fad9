/**
 * The bundled corpus and its data pipeline for the reference GPTs: character tokenizer,
 * train/validation split, seeded batch sampling and batch tensors.
 */
package org.sparseflow.examples.data;
