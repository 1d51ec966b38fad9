/** A user's program: trains a sparse DL4J MLP and sparsifies a SameDiff MLP, as README.md shows. */
package example;
