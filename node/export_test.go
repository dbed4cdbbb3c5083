package node

// The function library, for the tests of package node_test.
func LibraryName() string   { return functionLib().name }
func LibrarySource() string { return functionLib().source }
func LibraryFunctions() int { return len(libScripts) }
func ProbeFunction() string { functionLib(); return probeScript.fn }
