// Post-build check of the consumer run: both parts passed, and no WARN line came from SparseFlow.
def log = new File(basedir, 'build.log').text
assert log.contains('CONSUMER dl4j OK') : 'sparse DL4J MLP did not train'
assert log.contains('CONSUMER samediff OK') : 'SameDiff sd.nn.linear MLP was not sparsified'
assert log.contains('CONSUMER OK')
def warns = log.readLines().findAll { it.contains(' WARN ') }
def ours = warns.findAll { it.contains('org.sparseflow') }
assert ours.isEmpty() : "WARN lines from SparseFlow:\n" + ours.join('\n')
// The only WARNs allowed are ND4J's own three that stock SameDiff prints on its first fit with a softmax
// cross-entropy loss, with or without SparseFlow (checked with a plain SameDiff program on M2.1).
def nd4jOwn = ['Duplicate TF op mapping found for op Pow', 'Duplicate TF op mapping found for op FloorMod',
               'No fields found for property name labelsSmoothing']
def others = warns.findAll { w -> !nd4jOwn.any { w.contains(it) } }
assert others.isEmpty() : "unexpected WARN lines:\n" + others.join('\n')
assert log.contains('SparseFlow: ND4J runs the native CPU backend') : 'backend replacement not announced at INFO'
return true
