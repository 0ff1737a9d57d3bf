//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// An objectEvent is one event about an object, as one of the two events
// APIs serves it.
type objectEvent struct {
	// api is "v1" or "events.k8s.io/v1".
	api             string
	namespace, name string
	typ, reason     string
	message         string
	// count is how often the event was raised: the API server aggregates
	// repeats of one event into one object and counts them.
	count int64
}

func (e objectEvent) key() string { return e.api + " " + e.namespace + "/" + e.name }

func (e objectEvent) String() string {
	return fmt.Sprintf("%s Event %s/%s %s %s (x%d): %s", e.api, e.namespace, e.name, e.typ, e.reason, e.count, e.message)
}

// eventsOf returns the events about the object with this UID from both
// events APIs: core/v1 Events by involvedObject, events.k8s.io/v1 by
// regarding. They are two views of the same objects; reading both shows
// what a client of either sees. Filtered here, not by a field selector, so
// that nothing depends on which fields each API can select on.
func (s *stack) eventsOf(ctx context.Context, uid types.UID) ([]objectEvent, error) {
	var out []objectEvent
	core, err := s.client.Resource(gvrEvent).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot list core/v1 Events: %w", err)
	}
	for _, e := range core.Items {
		if u, _, _ := unstructured.NestedString(e.Object, "involvedObject", "uid"); u != string(uid) {
			continue
		}
		out = append(out, objectEvent{
			api: "v1", namespace: e.GetNamespace(), name: e.GetName(),
			typ: str(e, "type"), reason: str(e, "reason"), message: str(e, "message"),
			count: max(num(e, "count"), num(e, "series", "count"), 1),
		})
	}
	v1, err := s.client.Resource(gvrEventV1).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot list events.k8s.io/v1 Events: %w", err)
	}
	for _, e := range v1.Items {
		if u, _, _ := unstructured.NestedString(e.Object, "regarding", "uid"); u != string(uid) {
			continue
		}
		out = append(out, objectEvent{
			api: "events.k8s.io/v1", namespace: e.GetNamespace(), name: e.GetName(),
			typ: str(e, "type"), reason: str(e, "reason"), message: str(e, "note"),
			count: max(num(e, "deprecatedCount"), num(e, "series", "count"), 1),
		})
	}
	slices.SortFunc(out, func(a, b objectEvent) int { return strings.Compare(a.key(), b.key()) })
	return out, nil
}

// raised returns the events of after that were raised since before: new
// ones, and repeats of old ones (their count grew), with the count of the
// raises since.
func raised(before, after []objectEvent) []objectEvent {
	seen := map[string]int64{}
	for _, e := range before {
		seen[e.key()] = e.count
	}
	var out []objectEvent
	for _, e := range after {
		if e.count > seen[e.key()] {
			e.count -= seen[e.key()]
			out = append(out, e)
		}
	}
	return out
}

func str(u unstructured.Unstructured, fields ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, fields...)
	return v
}

func num(u unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, fields...)
	return v
}
