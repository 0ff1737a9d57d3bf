package graph

// A State says whether what protects an edge from its target being deleted
// first does: the finalizer and Usage rules each decide it for the edges
// they protect.
type State uint8

// The states of an edge.
const (
	// Exposed: nothing protects the edge.
	Exposed State = iota
	// Protected: the protection is declared, and observed in place.
	Protected
	// Declared: the protection is declared now, but not observed yet.
	Declared
	// Pending: the protection can't be declared yet: an end doesn't exist,
	// or provider-kubernetes doesn't manage the dependent yet.
	Pending
	// Releasing: the dependent is going away, and its protection with it.
	Releasing
	// TargetRemoved: the composition no longer desires the target while a
	// live dependent still references it, so it may be deleted first.
	TargetRemoved
	// TargetDeleting: the target is being deleted without its protection,
	// which can no longer be added.
	TargetDeleting
	// Cyclic: the edge is broken (it lies on a cycle the input breaks).
	Cyclic
)
