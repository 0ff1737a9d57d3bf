package loop

// The function's protocol: names in its requests and answers that
// test/oracle doesn't hold (its labels and finalizers are there). Package
// main, which defines them, can't be imported; these are its values, written
// once.
const (
	// graphContextKey is where in the context the function writes the
	// dependency graph when its input asks for it.
	graphContextKey = "dependencies.fn.crossplane.io/graph"
	// watchedResource is the required resource under which Crossplane passes
	// a WatchOperation the resource whose change started it.
	watchedResource = "ops.crossplane.io/watched-resource"
)
