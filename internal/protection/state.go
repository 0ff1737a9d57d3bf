package protection

import (
	"slices"
	"strconv"
)

// A State says whether what protects an edge from its target being deleted
// first does: the finalizer and Usage rules each decide it for the edges
// they protect. What a state means is this file's table alone: every other
// package asks its methods.
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

	// numStates counts the states: the table has one entry for each, and a
	// state added above without one has an empty entry the tests find.
	numStates
)

// A Standing is what a state means for the edge, as the graph view prints
// it.
type Standing uint8

// The standings of an edge.
const (
	// StandingProtected: the protection is in place.
	StandingProtected Standing = iota
	// StandingPending: the protection is on its way.
	StandingPending
	// StandingMissing: nothing keeps the target from being deleted first.
	StandingMissing
	// StandingStale: the dependent is going away; its protection is being
	// released.
	StandingStale
)

var standings = [...]string{
	StandingProtected: "protected",
	StandingPending:   "pending",
	StandingMissing:   "missing",
	StandingStale:     "stale",
}

// String is the standing as the graph view prints it: protected, pending,
// missing or stale.
func (s Standing) String() string {
	if int(s) < len(standings) {
		return standings[s]
	}
	return "Standing(" + strconv.Itoa(int(s)) + ")"
}

// A stateInfo is what a state means.
type stateInfo struct {
	// name is the state's name.
	name string
	// enforced is the edge's standing when the function writes the
	// protections it declares, reported when it only reports them (Report
	// mode), where a declared protection protects nothing.
	enforced, reported Standing
	// live is true when the dependent is live and the edge should be
	// protected: its protection is declared.
	live bool
	// lacking is true when the protection is declared but not in place:
	// the function adds it (or, in Report mode, would).
	lacking bool
	// why is the reason an Operation leaves the edge's protection as it is,
	// "" when it repairs it or it holds.
	why string
	// rank orders the states in which the report lists edges: the most
	// pressing first.
	rank uint8
}

// states is the table of what each state means, by state.
var states = [numStates]stateInfo{
	Exposed:        {name: "Exposed", enforced: StandingMissing, reported: StandingMissing, rank: 2},
	Protected:      {name: "Protected", enforced: StandingProtected, reported: StandingProtected, live: true, rank: 7},
	Declared:       {name: "Declared", enforced: StandingPending, reported: StandingMissing, live: true, lacking: true, rank: 4},
	Pending:        {name: "Pending", enforced: StandingPending, reported: StandingPending, why: "DependentNotManaged", rank: 5},
	Releasing:      {name: "Releasing", enforced: StandingStale, reported: StandingStale, why: "DependentDeleting", rank: 6},
	TargetRemoved:  {name: "TargetRemoved", enforced: StandingMissing, reported: StandingMissing, rank: 0},
	TargetDeleting: {name: "TargetDeleting", enforced: StandingMissing, reported: StandingMissing, why: "TargetDeleting", rank: 1},
	Cyclic:         {name: "Cyclic", enforced: StandingMissing, reported: StandingMissing, why: "Cycle", rank: 3},
}

// String is the state's name, or State(n) for a number that is no state.
func (s State) String() string {
	if s < numStates {
		return states[s].name
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Standing is what the state means for the edge: enforce is true when the
// function writes the protections it declares, false when it only reports
// them. It panics for a number that is no state.
func (s State) Standing(enforce bool) Standing {
	if enforce {
		return states[s].enforced
	}
	return states[s].reported
}

// Holds is true when the edge's protection is in place.
func (s State) Holds() bool {
	return states[s].enforced == StandingProtected
}

// Live is true when the dependent is live and the edge should be protected:
// its protection is declared, in place or not.
func (s State) Live() bool { return states[s].live }

// Lacking is true when the edge's protection is declared but not in place:
// the function adds it, or in Report mode would.
func (s State) Lacking() bool { return states[s].lacking }

// Why is the reason an Operation leaves the edge's protection as it is:
// TargetDeleting (the API server accepts no new finalizer on the target),
// DependentDeleting (the provider is releasing the dependent's finalizers),
// DependentNotManaged (provider-kubernetes doesn't manage the dependent
// yet, so it would not release a finalizer declared for it) or Cycle (the
// edge lies on a cycle, whose finalizers would keep every object on it for
// ever); "" when the Operation repairs it, or it holds.
func (s State) Why() string { return states[s].why }

// StatesOf returns the states of the standing, the most pressing first:
// the order in which the report lists edges.
func StatesOf(standing Standing, enforce bool) []State {
	var out []State
	for s := range numStates {
		if s.Standing(enforce) == standing {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b State) int { return int(states[a].rank) - int(states[b].rank) })
	return out
}
