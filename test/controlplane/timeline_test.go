//go:build controlplane

package controlplane

import (
	"bufio"
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
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
	// What the teardown cost: the provider's reconciles of the XR's
	// Objects, the Operations Crossplane ran, the nudges they applied, and
	// the API server's writes and 409 Conflicts, from the XR's deletion
	// until nothing was left.
	Reconciles int `json:"reconciles"`
	// Begin is when the deletion began, to line the timeline up with the
	// components' logs; NudgeLog is when each nudge was first seen, and on
	// which Object.
	Begin    time.Time   `json:"begin"`
	NudgeLog []nudgeSeen `json:"nudgeLog,omitempty"`
	// OperationSpans are, for each Operation the deletion made, when the
	// watch first saw it and when it saw it finished (-1 for never): how
	// long a nudge waits for the Operation that applies it.
	OperationSpans [][2]float64 `json:"operationSpans,omitempty"`
	// The Usages' lifecycle, with protection: Usages: when every Usage was
	// Ready, in seconds after the XR's creation (-1 without Usages); when
	// each went, in order; and the deletions Crossplane's webhook refused
	// and its Usage controller replayed.
	UsagesReady  float64   `json:"usagesReady"`
	UsagesGone   []float64 `json:"usagesGone,omitempty"`
	Refusals     int       `json:"refusals"`
	Replays      int       `json:"replays"`
	Operations   int       `json:"operations"`
	Nudges       int       `json:"nudges"`
	APIWrites    int       `json:"apiWrites"`
	APIConflicts int       `json:"apiConflicts"`
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
		Finalizers:     []point{{0, refFinalizers(c.shared.GetFinalizers())}},
		SharedDeleting: -1, SharedGone: -1, NamespaceTerminating: -1,
	}
	dependents := map[string]bool{}
	for _, o := range c.dependents {
		dependents[o.GetName()] = true
	}
	spans := map[string]int{}
	for _, ch := range changes {
		if ch.kind == "Operation" {
			i, ok := spans[ch.name]
			if !ok && ch.deleted {
				continue // One from before, which the history limit deletes.
			}
			if !ok {
				i = len(tl.OperationSpans)
				spans[ch.name] = i
				tl.OperationSpans = append(tl.OperationSpans, [2]float64{since(ch.at), -1})
			}
			if ch.finished && tl.OperationSpans[i][1] < 0 {
				tl.OperationSpans[i][1] = since(ch.at)
			}
			continue
		}
		t := since(ch.at)
		tl.Gone = max(tl.Gone, t)
		switch {
		case ch.kind == "Object" && ch.name == c.shared.GetName():
			if n := refFinalizers(ch.finalizers); !ch.deleted && n != tl.Finalizers[len(tl.Finalizers)-1].N {
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
		case ch.kind == "Usage" && ch.deleted:
			tl.UsagesGone = append(tl.UsagesGone, t)
		case ch.kind == "Namespace" && ch.name == ns && ch.deleting && tl.NamespaceTerminating < 0:
			tl.NamespaceTerminating = t
		}
	}
	return tl
}

// nudgeAnnotation is in the keys of the labels and annotations
// internal/teardown nudges with, so that the timeline can count the nudges
// it watched.
const nudgeAnnotation = "teardown"

// A nudgeSeen is a nudge the watches saw first at T seconds, on an Object.
type nudgeSeen struct {
	T      float64 `json:"t"`
	Object string  `json:"object"`
	Key    string  `json:"key"`
}

// nudges returns the nudges in the changes, each new value of a teardown
// label or annotation on an Object, in the order first seen.
func nudges(changes []change, begin time.Time) []nudgeSeen {
	seen := map[string]bool{}
	var out []nudgeSeen
	for _, ch := range changes {
		if ch.kind != "Object" {
			continue
		}
		for _, m := range []map[string]string{ch.labels, ch.annotations} {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				id := ch.name + "\x00" + k + "\x00" + m[k]
				if strings.Contains(k, nudgeAnnotation) && strings.Contains(k, "dependencies.fn.crossplane.io") && !seen[id] {
					seen[id] = true
					out = append(out, nudgeSeen{T: ch.at.Sub(begin).Seconds(), Object: ch.name, Key: k})
				}
			}
		}
	}
	return out
}

// created counts the objects of a kind that the changes show were created
// after the list that began their watch, which had those in listed.
func created(changes []change, kind string, listed []unstructured.Unstructured) int {
	seen := map[string]bool{}
	for _, u := range listed {
		seen[u.GetName()] = true
	}
	n := 0
	for _, ch := range changes {
		if ch.kind == kind && !seen[ch.name] {
			seen[ch.name] = true
			n++
		}
	}
	return n
}

// requests are the API server's request counts so far
// (apiserver_request_total from its /metrics): the writes, and of all
// requests those answered 409 Conflict.
type requests struct{ writes, conflicts int }

func (r requests) since(before requests) requests {
	return requests{r.writes - before.writes, r.conflicts - before.conflicts}
}

// requestsSoFar reads the API server's request counters. Writes are every
// verb but the reads; the test's own polling only reads.
func (s *stack) requestsSoFar(ctx context.Context) requests {
	s.t.Helper()
	hc, err := rest.HTTPClientFor(s.config)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.config.Host+"/metrics", nil)
	if err != nil {
		s.t.Fatal("ERROR:", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.t.Fatal("ERROR: cannot read the API server's metrics:", err)
	}
	defer resp.Body.Close()
	var r requests
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		n, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil {
			s.t.Fatalf("ERROR: cannot parse the API server's metric line %q", sc.Text())
		}
		switch {
		case strings.Contains(labels, `verb="GET"`), strings.Contains(labels, `verb="LIST"`), strings.Contains(labels, `verb="WATCH"`):
		default:
			r.writes += int(n)
		}
		if strings.Contains(labels, `code="409"`) {
			r.conflicts += int(n)
		}
	}
	if err := sc.Err(); err != nil {
		s.t.Fatal("ERROR: cannot read the API server's metrics:", err)
	}
	return r
}
