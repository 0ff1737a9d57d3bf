package oracle

// What the reconcile-loop tier (test/unit/loop's reconcile_loop_test.go)
// needs of the oracle beyond one call's Plan: the input it follows over many
// calls, and each Usage as the answer's desired state must hold it.

// WithDefaults is the input with every field the README's defaults give an
// empty one: what the function works with, for a tier that follows one input
// over many calls and reports what it covered.
func (in Input) WithDefaults() Input { return in.withDefaults() }

// Emitted is the Usage as the function's answer must hold it in desired
// state, but for metadata.name, which is the function's to choose (the loop
// tier checks that each edge keeps a name of its own): the Manifest, with the
// label UsageLabel "true", by which the function knows its own Usages once
// they are observed; and its readiness, ready: True, since a Usage protects
// once it exists.
func (u Usage) Emitted() (resource map[string]any, ready bool) {
	m := u.Manifest()
	m["metadata"].(map[string]any)["labels"] = map[string]any{UsageLabel: "true"}
	return m, true
}
