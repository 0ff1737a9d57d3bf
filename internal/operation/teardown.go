package operation

// The teardown nudges: what lets provider-kubernetes tear a referenced object
// and its dependents down without waiting out its backoff.
//
// A dependent being deleted removes its reference finalizer from what it
// references with a Get and a full Update, and requeues on a conflict under
// a backoff that doubles from 1 s to 60 s; dependents deleted together
// conflict with each other, and their retries drift minutes apart. The
// referenced Object, being deleted too, waits while any other finalizer is
// on it, also under that backoff, and a finalizer's removal doesn't wake it.
// A change of an Object's labels or annotations does wake it at once
// (crossplane-runtime's DesiredStateChanged filter). So, level-triggered:
//
//   - a deleting target that dependents hold carries the label
//     protocol.TeardownTargetLabel, once, so that it is known for a target when none holds it any more;
//   - the first deleting dependent, by UID, whose reference finalizer is
//     still on a deleting target, and that no dependent of its own holds,
//     carries the annotation protocol.TeardownHolderKey(target),
//     whose value changes each time the target's reference finalizers do:
//     each release wakes the next holder, alone, so that its Update meets
//     no other;
//   - a deleting target left with no reference finalizer carries
//     protocol.TeardownReleasedKey, which wakes it to delete what it manages;
//   - a released target whose managed resource is gone carries
//     protocol.TeardownGoneKey, which wakes it to see that and go. It deleted that resource and
//     requeued under the same backoff, by then up to a minute, and nothing
//     of its own changes when the resource goes: an Operation of a
//     WatchOperation on the resource's kind runs then, and lists the
//     targets by their label to find it.
//
// Each key belongs to one rule and one target, so that an object that is a
// dependent of two targets, or a dependent and a target, never has one
// annotation flip between values: every value is applied once. A dependent
// no one holds is never written to: a write while the provider reconciles
// it would make its own Update conflict and leave it waiting. An object
// that is a holder and a target at once gets its nudges over two
// Operations (see dueNow).
//
// Nothing is nudged while the target lives: its dependents' finalizers must
// stay, and a write to it would only make them conflict more.

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// nudges are the teardown nudges this Operation applies: of every object
// read being deleted, each with its dependents among the Objects read, and
// of the released targets whose resource is gone.
func nudges(s sweep) []nudge {
	objects := map[string]teardownObject{}
	var dependents []teardownObject
	for _, name := range slices.Sorted(maps.Keys(s.read)) {
		o := s.read[name]
		t := teardownObjectOf(name, o)
		objects[name] = t
		if o.IsObject() {
			dependents = append(dependents, t)
		}
	}
	var out []nudge
	for _, name := range slices.Sorted(maps.Keys(objects)) {
		out = append(out, nudgesOf(objects[name], dependents)...)
	}
	for _, name := range s.gone {
		out = append(out, goneNudge(objects[name]))
	}
	return dueNow(out)
}

// teardownObjectOf is what the teardown rules need of an object read.
func teardownObjectOf(name string, o request.Object) teardownObject {
	return teardownObject{
		Name: name, UID: o.UID(), Deleting: o.Deleting(),
		Finalizers: o.Finalizers(), Labels: o.Labels(), Annotations: o.Annotations(),
	}
}

// A teardownObject is what the teardown rules need of a live object.
type teardownObject struct {
	// Name names the object for the caller.
	Name        string
	UID         string
	Deleting    bool
	Finalizers  []string
	Labels      map[string]string
	Annotations map[string]string
}

// A nudge is an annotation, or a label, one object must carry.
type nudge struct {
	Object     string
	Key, Value string
	Label      bool
	// Exact nudges go only to the version of the object read. Each
	// Operation applies as a field manager of its own, and two often read
	// the same version (a Namespace's deletion makes two): the second's
	// apply of the same value changes only managedFields, which wakes
	// nothing, and makes the provider's next Update of the object
	// conflict. On a target that costs the last wait in full, so a
	// target's nudges are exact: refused, the Operation
	// runs again and finds the value there. A holder's are not: its
	// version changes with each of its own reconciles, and the refused
	// nudges were lost with their Operations, and the releases drifted
	// apart again (docs/teardown.md), while a holder whose own Update
	// conflicts has let go of the target already.
	Exact bool
}

// nudgesOf returns what a target and its dependents must carry, for those
// whose labels or annotations differ: nothing while the target lives.
func nudgesOf(target teardownObject, dependents []teardownObject) []nudge {
	if !target.Deleting {
		return nil
	}
	var holding []string
	for _, f := range target.Finalizers {
		if uid, ok := object.UIDOf(f); ok {
			holding = append(holding, uid)
		}
	}
	var out []nudge
	if len(holding) == 0 {
		if target.Labels[protocol.TeardownTargetLabel] != "" && target.Annotations[protocol.TeardownReleasedKey] == "" && slices.Contains(target.Finalizers, object.ObjectFinalizer) {
			out = append(out, nudge{Object: target.Name, Key: protocol.TeardownReleasedKey, Value: "true", Exact: true})
		}
		return out
	}
	if target.Labels[protocol.TeardownTargetLabel] == "" {
		out = append(out, nudge{Object: target.Name, Key: protocol.TeardownTargetLabel, Value: "true", Label: true, Exact: true})
	}
	slices.Sort(holding)
	sum := sha256.Sum256([]byte(strings.Join(holding, ",")))
	key, value := protocol.TeardownHolderKey(target.UID), hex.EncodeToString(sum[:])[:10]
	// One at a time: every holder woken at once makes all but one of
	// their Updates conflict (docs/teardown.md), and
	// each conflict deepens that holder's backoff. The first deleting
	// holder by UID is woken; its release wakes the next. A holder that
	// dependents hold in turn is passed over: the provider delays its
	// deletion, and so its release, while another finalizer is on it, and
	// a write to it would make their Updates of it conflict.
	for _, uid := range holding {
		i := slices.IndexFunc(dependents, func(d teardownObject) bool { return d.UID == uid && d.Deleting && !held(d) })
		if i < 0 {
			continue
		}
		if d := dependents[i]; d.Annotations[key] != value {
			out = append(out, nudge{Object: d.Name, Key: key, Value: value})
		}
		break
	}
	slices.SortFunc(out, func(a, b nudge) int { return strings.Compare(a.Object, b.Object) })
	return out
}

// held reports whether dependents hold an object: whether it carries a
// reference finalizer.
func held(o teardownObject) bool {
	return slices.ContainsFunc(o.Finalizers, func(f string) bool { _, ok := object.UIDOf(f); return ok })
}

// released reports whether an Object is a target nudgesOf released that
// waits for its managed resource to go.
func released(o teardownObject) bool {
	return o.Deleting && o.Labels[protocol.TeardownTargetLabel] != "" && o.Annotations[protocol.TeardownReleasedKey] != "" && o.Annotations[protocol.TeardownGoneKey] == "" &&
		slices.Contains(o.Finalizers, object.ObjectFinalizer) && !held(o)
}

// goneNudge is the nudge of a released target whose managed resource is gone.
func goneNudge(o teardownObject) nudge {
	return nudge{Object: o.Name, Key: protocol.TeardownGoneKey, Value: "true", Exact: true}
}

// dueNow returns the nudges one Operation applies, of those due. It applies
// one partial object per object, under one field manager, and so pinned to
// the version read or not: an object that is a holder and a target at once
// would have its holder nudge pinned, or its target nudges not. So its
// holder nudges go now, unpinned, and its target nudges wait: the holder
// nudge's write changes the object, which makes the next Operation (a
// WatchOperation's of its kind, or the next sweep), and that one finds them
// still due, alone, and applies them exact. Either wakes the object; by
// then no dependent holds it (see nudgesOf), so no Update of theirs meets the
// unpinned write.
func dueNow(nudges []nudge) []nudge {
	holder := map[string]bool{}
	for _, n := range nudges {
		holder[n.Object] = holder[n.Object] || !n.Exact
	}
	return slices.DeleteFunc(slices.Clone(nudges), func(n nudge) bool { return n.Exact && holder[n.Object] })
}
