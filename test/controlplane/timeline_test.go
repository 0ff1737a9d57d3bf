//go:build controlplane

package controlplane

import (
	"strings"
	"time"
)

// A timeline is one XR's teardown as the API server's watches showed it,
// in seconds after the deletion: what docs/teardown records and
// `make teardown-plot` draws.
type timeline struct {
	Arm        string  `json:"arm"`
	Stack      string  `json:"stack"`
	Dependents int     `json:"dependents"`
	Conflicts  int     `json:"conflicts"`
	Gone       float64 `json:"gone"`
	// Finalizers are the reference finalizers on the shared Object at
	// each of its changes, starting with the count before the deletion.
	Finalizers []point `json:"finalizers"`
	// DependentsGone are when each dependent Object was gone, in order.
	DependentsGone []float64 `json:"dependentsGone"`
	// SharedDeleting and SharedGone are when the shared Object's deletion
	// began and ended, and NamespaceTerminating when its Namespace began
	// terminating; -1 for never.
	SharedDeleting       float64 `json:"sharedDeleting"`
	SharedGone           float64 `json:"sharedGone"`
	NamespaceTerminating float64 `json:"namespaceTerminating"`
}

// A point is a count at a time.
type point struct {
	T float64 `json:"t"`
	N int     `json:"n"`
}

// timelineOf makes the timeline of a deletion that began at begin from the
// watches' changes of the composed Objects and the shared Namespace ns.
func timelineOf(changes []change, begin time.Time, c composed, ns string, conflicts int) timeline {
	since := func(at time.Time) float64 { return at.Sub(begin).Seconds() }
	tl := timeline{
		Dependents: len(c.dependents), Conflicts: conflicts,
		Finalizers:     []point{{0, referenceFinalizers(c.shared.GetFinalizers())}},
		SharedDeleting: -1, SharedGone: -1, NamespaceTerminating: -1,
	}
	dependents := map[string]bool{}
	for _, o := range c.dependents {
		dependents[o.GetName()] = true
	}
	for _, ch := range changes {
		t := since(ch.at)
		tl.Gone = max(tl.Gone, t)
		switch {
		case ch.kind == "Object" && ch.name == c.shared.GetName():
			if n := referenceFinalizers(ch.finalizers); !ch.deleted && n != tl.Finalizers[len(tl.Finalizers)-1].N {
				tl.Finalizers = append(tl.Finalizers, point{t, n})
			}
			if ch.deleting && tl.SharedDeleting < 0 {
				tl.SharedDeleting = t
			}
			if ch.deleted {
				tl.SharedGone = t
			}
		case ch.kind == "Object" && ch.deleted && dependents[ch.name]:
			tl.DependentsGone = append(tl.DependentsGone, t)
		case ch.kind == "Namespace" && ch.name == ns && ch.deleting && tl.NamespaceTerminating < 0:
			tl.NamespaceTerminating = t
		}
	}
	return tl
}

// referenceFinalizers counts provider-kubernetes' reference finalizers.
func referenceFinalizers(fs []string) int {
	n := 0
	for _, f := range fs {
		if strings.HasPrefix(f, refFinalizerPrefix) {
			n++
		}
	}
	return n
}
