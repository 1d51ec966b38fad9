/**
 * Notebook execution for the examples: {@link org.sparseflow.it.notebooks.NotebookExecution} runs
 * the code cells of an .ipynb in JShell and collects each cell's output; {@link
 * org.sparseflow.it.notebooks.NotebookRunner} writes those outputs and source hashes into the
 * notebooks; {@link org.sparseflow.it.notebooks.NotebookFiles} reads and hashes them.
 */
package org.sparseflow.it.notebooks;
