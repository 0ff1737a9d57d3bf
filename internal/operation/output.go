package operation

import (
	"fmt"

	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
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

// warningsOf are what needs a person's attention: references that can't be
// read, cycles and stale finalizers. Each is one result, whatever the number
// of resources it is about, so that a sweep of thousands makes a handful of
// events.
func warningsOf(s sweep, o outcome, cycles [][]string) []report.Result {
	var ws []report.Result
	warn := func(reason, msg string) {
		ws = append(ws, report.Result{Severity: report.Warning, Reason: reason, Message: msg})
	}
	if len(s.problems) > 0 {
		warn(report.ReasonInvalidReference, fmt.Sprintf("cannot read the references of %s: %s", message.Count(len(s.problems), "Object"), message.List(s.problems)))
	}
	if len(cycles) > 0 {
		warn(report.ReasonCycle, fmt.Sprintf("%s, left without finalizers: %s", message.Count(len(cycles), "reference cycle"), report.CyclePaths(cycles)))
	}
	if len(o.Stale) > 0 {
		warn(report.ReasonStaleFinalizer, fmt.Sprintf("%s naming no live Object that references its target: %s", message.Count(len(o.Stale), "reference finalizer"),
			message.ListOf(o.Stale, func(f protection.Stale) string { return f.Resource + " carries " + f.Finalizer })))
	}
	return ws
}
