// mvn dependency:tree of a consumer with nd4j-cuda-11.6 shows no nd4j-native (nor OpenBLAS).
def tree = new File(basedir, 'tree.txt').text
assert tree.contains('org.nd4j:nd4j-cuda-11.6:jar:1.0.0-M2.1') : "no CUDA backend in:\n" + tree
assert tree.contains('org.sparseflow:dl4j-sparse-layers:jar:0.1.0') : tree
assert !tree.contains('org.nd4j:nd4j-native:') : "nd4j-native resolved:\n" + tree
assert !tree.contains('org.bytedeco:openblas') : "OpenBLAS resolved:\n" + tree
return true
