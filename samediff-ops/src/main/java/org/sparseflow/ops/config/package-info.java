/**
 * Strict reading of the project's configuration documents (sparsity, MST, hardware and model
 * files): one reader, with ND4J's shaded Jackson, that rejects duplicate keys, extra documents,
 * YAML anchors/aliases, non-UTF-8 input and oversized files, and turns binding errors into one line
 * naming the file, the field, the value and what is allowed; and {@code JsonText}, Jackson's text
 * output without its checked exception. It lives in the lowest module so that every module reading
 * such files can use it.
 */
package org.sparseflow.ops.config;
