package operation

import (
	"fmt"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// An output is what an Operation stores in its status.
type output struct {
	// Dependents counts the Objects that reference anything, References
	// their references, Protected those protected already.
	Dependents int `json:"dependents"`
	References int `json:"references"`
	Protected  int `json:"protected"`
	// Repaired are the finalizers declared, by target; in Report mode,
	// Missing lists them instead, and nothing is declared.
	Repaired []repair     `json:"repaired,omitempty"`
	Missing  []repair     `json:"missing,omitempty"`
	Skipped  []skip       `json:"skipped,omitempty"`
	Stale    []staleEntry `json:"stale,omitempty"`
	Cycles   int          `json:"cycles,omitempty"`
	// Nudged are the objects being deleted that the teardown nudges wake.
	Nudged []string `json:"nudged,omitempty"`
	// Omitted counts, for each list that is longer than the output keeps,
	// the entries left out.
	Omitted map[string]int `json:"omitted,omitempty"`
}

type staleEntry struct {
	Target    string `json:"target"`
	Finalizer string `json:"finalizer"`
}

func outputOf(o outcome, enforce bool, cycles int, nudged []string) output {
	out := output{Dependents: o.Dependents, References: o.References, Protected: o.Protected, Cycles: cycles, Omitted: map[string]int{}}
	repaired := "repaired"
	if !enforce {
		repaired = "missing"
	}
	fixed := keep(out.Omitted, repaired, o.Repaired)
	if enforce {
		out.Repaired = fixed
	} else {
		out.Missing = fixed
	}
	out.Skipped = keep(out.Omitted, "skipped", o.Skipped)
	for _, s := range keep(out.Omitted, "stale", o.Stale) {
		out.Stale = append(out.Stale, staleEntry{Target: s.Resource, Finalizer: s.Finalizer})
	}
	out.Nudged = keep(out.Omitted, "nudged", nudged)
	if len(out.Omitted) == 0 {
		out.Omitted = nil
	}
	return out
}

// keep returns the first protocol.MaxListedInOutput items, and counts those
// it leaves out.
func keep[T any](omitted map[string]int, list string, items []T) []T {
	if len(items) <= protocol.MaxListedInOutput {
		return items
	}
	omitted[list] = len(items) - protocol.MaxListedInOutput
	return items[:protocol.MaxListedInOutput]
}

type warning struct{ reason, message string }

// warningsOf are what needs a person's attention: references that can't be
// read, cycles and stale finalizers. Each is one result, whatever the number
// of resources it is about, so that a sweep of thousands makes a handful of
// events.
func warningsOf(s sweep, o outcome, cycles [][]string) []warning {
	var ws []warning
	if len(s.problems) > 0 {
		ws = append(ws, warning{"InvalidReferences", fmt.Sprintf("cannot read the references of %s: %s", count(len(s.problems), "Object"), first(s.problems))})
	}
	if len(cycles) > 0 {
		paths := make([]string, len(cycles))
		for i, c := range cycles {
			paths[i] = composed.Path(c)
		}
		ws = append(ws, warning{"ReferenceCycle", fmt.Sprintf("%s, left without finalizers: %s", count(len(cycles), "reference cycle"), first(paths))})
	}
	if len(o.Stale) > 0 {
		stale := make([]string, len(o.Stale))
		for i, f := range o.Stale {
			stale[i] = f.Resource + " carries " + f.Finalizer
		}
		ws = append(ws, warning{"StaleFinalizers", fmt.Sprintf("%s naming no live Object that references its target: %s", count(len(stale), "reference finalizer"), first(stale))})
	}
	return ws
}

// count is "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// first lists the first few items, and says how many more there are.
func first(items []string) string {
	const n = 5
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}
