//go:build controlplane

package controlplane

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// A change is one event of a watch.
type change struct {
	at          time.Time
	rv          int64
	kind, name  string
	deleted     bool
	deleting    bool
	finalizers  []string
	labels      map[string]string
	annotations map[string]string
	// finished is, for an Operation, whether its Succeeded condition says
	// it has finished, either way.
	finished bool
}

// A recorder collects the changes of several watches, in the order they
// arrive.
type recorder struct {
	mu      sync.Mutex
	changes []change
	err     error
}

func (r *recorder) add(c change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// result returns the changes and the first error of any watch.
func (r *recorder) result() ([]change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]change(nil), r.changes...), r.err
}

// watch lists the objects, returns them, and records every later change of
// them until ctx ends. The API server may end any watch (its timeout, a busy
// machine): the watch is opened again from the last resourceVersion it saw
// (client-go's RetryWatcher), which leaves no gap. One that can't go on (its
// resourceVersion compacted away) is an error of the recorder: a gap would
// make the recorded order a lie.
func (s *stack) watch(ctx context.Context, rec *recorder, kind string, ri dynamic.ResourceInterface, opts metav1.ListOptions) []unstructured.Unstructured {
	s.t.Helper()
	list, err := ri.List(ctx, opts)
	if err != nil {
		s.t.Fatalf("ERROR: cannot list %ss: %v", kind, err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = opts.LabelSelector, opts.FieldSelector
			return ri.Watch(ctx, o)
		},
	})
	if err != nil {
		s.t.Fatalf("ERROR: cannot watch %ss: %v", kind, err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						rec.fail(fmt.Errorf("the watch of %ss ended early", kind))
					}
					return
				}
				u, isObj := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Error || !isObj {
					rec.fail(fmt.Errorf("the watch of %ss failed: %v", kind, ev.Object))
					return
				}
				rv, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
				if err != nil {
					rec.fail(fmt.Errorf("%s %s: resourceVersion %q is not a number", kind, u.GetName(), u.GetResourceVersion()))
					return
				}
				rec.add(change{
					at: time.Now(), rv: rv, kind: kind, name: u.GetName(),
					deleted:     ev.Type == watch.Deleted,
					deleting:    u.GetDeletionTimestamp() != nil,
					finalizers:  u.GetFinalizers(),
					labels:      u.GetLabels(),
					annotations: u.GetAnnotations(),
					finished:    conditionTrue(u, "Succeeded") || fmt.Sprint(condition(u, "Succeeded")["status"]) == "False",
				})
			}
		}
	}()
	return list.Items
}
