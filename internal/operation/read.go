package operation

import (
	"maps"
	"slices"
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// A sweep is what an Operation reads of its required resources.
type sweep struct {
	// watched is true in a WatchOperation.
	watched bool
	// resources are the Objects handled and the objects they reference, in
	// name order.
	resources []composed.Resource
	// requirements are what the function asks Crossplane for, and complete
	// is true once Crossplane has answered every one of them.
	requirements map[string]*fnv1.ResourceSelector
	complete     bool
	// problems are the references that could not be read.
	problems []string
	// read are the objects read, by the resources' names: the resources
	// and, for a watched target being deleted, the Objects that may hold
	// it (see holdersOf), or the targets of teardowns (see readTargets).
	read map[string]request.Object
	// gone are the released targets whose managed resource is gone.
	gone []string
}

// readSweep reads the required resources: the Objects to handle, and the
// objects they reference that Crossplane has fetched so far.
func readSweep(required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) sweep {
	s := sweep{requirements: map[string]*fnv1.ResourceSelector{}, complete: true, read: map[string]request.Object{}}
	r := resourceReader{s: &s, byIdentity: map[object.Ref]bool{}}
	objects := readHandled(&s, required, selector)
	for _, o := range objects {
		r.add(o)
	}
	if s.watched {
		// A sweep lists every Object already.
		readHolders(&s, objects, required, selector)
	}
	// Only the Objects read so far are handled: a target that is an Object
	// adds no edge of its own.
	r.requireTargets(r.readReferences(), required)
	slices.SortFunc(s.resources, func(a, b composed.Resource) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// readHandled reads the Objects to handle: the watched one of a
// WatchOperation, or those a sweep lists.
func readHandled(s *sweep, required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) []request.Object {
	watched, ok := required[protocol.WatchedResource]
	if !ok {
		labels := map[string]string{}
		if selector != nil && selector.MatchLabels != nil {
			labels = selector.MatchLabels
		}
		return listObjects(s, required, protocol.SweptObjects, labels)
	}
	s.watched = true
	var objects []request.Object
	for _, item := range watched.GetItems() {
		// Of a watched resource of another kind, one an Object
		// manages, only its going counts (below).
		if o := request.ObjectOf(item.GetResource()); o.IsObject() {
			objects = append(objects, o)
		}
	}
	if len(watched.GetItems()) == 0 {
		// The watched resource is gone: Crossplane makes an Operation
		// of its deletion too, and finds nothing.
		readTargets(s, required, selector)
	}
	return objects
}

// readHolders reads the Objects that may hold each watched Object (see
// holdersOf), by their names, where they are not read already.
func readHolders(s *sweep, objects []request.Object, required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) {
	for _, o := range objects {
		labels, held := holdersOf(o, selector)
		if !held {
			continue
		}
		for _, d := range listObjects(s, required, protocol.HoldersOf, labels) {
			name := describe(d.Identity())
			if _, seen := s.read[name]; !seen {
				s.read[name] = d
			}
		}
	}
}

// A resourceReader adds the objects read to a sweep's resources, once each
// identity.
type resourceReader struct {
	s          *sweep
	byIdentity map[object.Ref]bool
	sources    []request.Object // Each resource's.
}

func (r *resourceReader) add(o request.Object) {
	if id := o.Identity(); !r.byIdentity[id] {
		r.byIdentity[id] = true
		r.s.resources = append(r.s.resources, live(id, o))
		r.sources = append(r.sources, o)
		r.s.read[describe(id)] = o
	}
}

// readReferences reads the references of the resources read so far, notes
// those that can't be read, and returns their targets.
func (r *resourceReader) readReferences() []object.Target {
	var targets []object.Target
	for i := range r.s.resources {
		res := &r.s.resources[i]
		refs, errs := r.sources[i].References(res.Identity.Group)
		res.References = refs
		for _, err := range errs {
			r.s.problems = append(r.s.problems, res.Name+": "+err.Error())
		}
		targets = append(targets, refs...)
	}
	return targets
}

// requireTargets asks for the targets not read yet, and adds those
// Crossplane has fetched.
func (r *resourceReader) requireTargets(targets []object.Target, required map[string]*fnv1.Resources) {
	unread := r.unreadByKind(targets)
	for _, t := range targets {
		if r.byIdentity[t.ID()] {
			continue // An Object already read, or a target already fetched.
		}
		name, sel := targetSelector(t, r.s.watched, len(unread[kindIn(t)]))
		if _, asked := r.s.requirements[name]; asked {
			continue
		}
		r.s.requirements[name] = sel
		got, ok := required[name]
		r.s.complete = r.s.complete && ok
		for _, item := range got.GetItems() {
			r.add(request.ObjectOf(item.GetResource()))
		}
	}
}

// unreadByKind are the names of the targets not read yet, by kind in each
// namespace (kindIn).
func (r *resourceReader) unreadByKind(targets []object.Target) map[string]map[string]bool {
	unread := map[string]map[string]bool{}
	for _, t := range targets {
		if !r.byIdentity[t.ID()] {
			k := kindIn(t)
			if unread[k] == nil {
				unread[k] = map[string]bool{}
			}
			unread[k][t.Name] = true
		}
	}
	return unread
}

// readTargets reads the targets of teardowns (teardown.go), listed
// by their label within the input's objectSelector, and, by name, the
// resource each released one manages, and notes those whose resource is
// gone.
func readTargets(s *sweep, required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) {
	labels := map[string]string{protocol.TeardownTargetLabel: "true"}
	if selector != nil {
		maps.Copy(labels, selector.MatchLabels)
	}
	for _, o := range listObjects(s, required, protocol.TeardownTargets, labels) {
		object := describe(o.Identity())
		s.read[object] = o
		manifest, ok := manifestOf(o)
		if !ok || !released(teardownObjectOf(object, o)) {
			continue
		}
		name := protocol.ManifestOf(object)
		s.requirements[name] = &fnv1.ResourceSelector{
			ApiVersion: manifest.APIVersion, Kind: manifest.Kind, Namespace: ptrOrNil(manifest.Namespace),
			Match: &fnv1.ResourceSelector_MatchName{MatchName: manifest.Name},
		}
		got, ok := required[name]
		s.complete = s.complete && ok
		if ok && len(got.GetItems()) == 0 {
			s.gone = append(s.gone, object)
		}
	}
	slices.Sort(s.gone)
}

// listObjects asks for the Objects of both groups that carry the labels,
// under the requirements the name function names by group, and returns
// those Crossplane has fetched.
func listObjects(s *sweep, required map[string]*fnv1.Resources, requirement func(group string) string, labels map[string]string) []request.Object {
	var out []request.Object
	for _, group := range protocol.ObjectGroups() {
		name := requirement(group)
		apiVersion, _ := protocol.ObjectVersion(group)
		s.requirements[name] = &fnv1.ResourceSelector{
			ApiVersion: apiVersion, Kind: object.Kind,
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}},
		}
		got, ok := required[name]
		s.complete = s.complete && ok
		for _, item := range got.GetItems() {
			out = append(out, request.ObjectOf(item.GetResource()))
		}
	}
	return out
}

// manifestOf is the resource an Object manages, in the cluster the
// function's Operation reads: an Object whose ProviderConfig points at
// another cluster has its resource there, which reads as gone here; the
// nudge that then wakes it early costs one reconcile.
func manifestOf(o request.Object) (object.Ref, bool) {
	t, ok := o.Manifest()
	if group, _ := o.Group(); t.Namespace == "" && group == object.NamespacedGroup {
		// A namespaced Object's resource is in its namespace.
		t.Namespace = o.Namespace()
	}
	return t, ok
}

// holdersOf are the labels of the Objects that may hold a watched Object
// being deleted that carries reference finalizers, which name their
// dependents by UID only: the Objects of its composite, when a composite
// composed it, else those of the input's objectSelector. held is false for
// any other Object.
func holdersOf(o request.Object, selector *v1beta1.ObjectSelector) (labels map[string]string, held bool) {
	if !o.Deleting() || !slices.ContainsFunc(o.Finalizers(), func(f string) bool {
		_, ok := object.UIDOf(f)
		return ok
	}) {
		return nil, false
	}
	labels = map[string]string{}
	if xr := o.Label(protocol.CompositeLabel); xr != "" {
		labels[protocol.CompositeLabel] = xr
	} else if selector != nil && selector.MatchLabels != nil {
		labels = selector.MatchLabels
	}
	return labels, true
}

// maxByName is how many targets of one kind in one namespace a sweep asks
// for by name, each a Get for core to make and a selector in the
// response; past it, a sweep lists the kind in the namespace instead, one
// List, which also brings what nothing references. Secrets are always
// asked for by name (see targetSelector).
const maxByName = 100

// kindIn names a target's kind in its namespace, as a sweep lists it.
func kindIn(t object.Target) string {
	return protocol.TargetsOfKind(t.APIVersion, t.Kind, t.Namespace)
}

// targetSelector is the requirement that fetches a target, one of n not
// read yet of its kind in its namespace. A WatchOperation asks for each of
// its few targets by name, and so does a sweep for an Object (read at the
// version provider-kubernetes stores), for a Secret, and for a target of a
// kind that has at most maxByName in its namespace. A sweep lists the
// targets' kind in their namespace, once for all of them, only past that:
// asked for by name, 10,000 ConfigMaps make the sweep's last response larger
// than the 4 MiB core accepts, with a Get each for core to make. A
// list brings every object of the kind in the namespace, or in the cluster
// when the reference names none: never Secrets, which carry every
// provider's credentials, and which core reads past its cache, so that a
// Get of each is all Crossplane needs to be granted. A sweep has read every
// Object it may list already: one it still needs lies outside its
// objectSelector, or doesn't exist.
func targetSelector(t object.Target, watched bool, n int) (string, *fnv1.ResourceSelector) {
	v, isObject := protocol.ObjectVersion(t.Group)
	isObject = isObject && t.Kind == object.Kind
	if isObject {
		// Read and applied at the version provider-kubernetes stores. A
		// reference without an apiVersion means v1alpha1, which the API
		// server converts through the provider's webhook on every read and
		// apply: on the real control plane that made a watch's repairs
		// several times slower, with applies timed out by the API server on
		// the way (docs/evidence/operation-mode.md).
		t.APIVersion = v
	}
	secret := t.Group == "" && t.Kind == "Secret"
	if watched || isObject || secret || n <= maxByName {
		return protocol.Target(describe(t.ID())), &fnv1.ResourceSelector{
			ApiVersion: t.APIVersion, Kind: t.Kind, Namespace: ptrOrNil(t.Namespace),
			Match: &fnv1.ResourceSelector_MatchName{MatchName: t.Name},
		}
	}
	return kindIn(t), &fnv1.ResourceSelector{
		ApiVersion: t.APIVersion, Kind: t.Kind, Namespace: ptrOrNil(t.Namespace),
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{}}},
	}
}

// live is an object as the cluster has it. It desires the finalizers it
// carries, so that only those it lacks are declared.
func live(id object.Ref, o request.Object) composed.Resource {
	finalizers := o.Finalizers()
	return composed.Resource{
		Name:       describe(id),
		Identity:   id,
		APIVersion: o.APIVersion(),
		IsObject:   object.IsObject(id.Group, id.Kind),
		Observed: &composed.Observed{
			UID:        o.UID(),
			Finalizers: finalizers,
			Deleting:   o.Deleting(),
		},
		Desired: &composed.Desired{Finalizers: finalizers},
	}
}

// describe names an object the way kubectl does, which is unique: kind.group,
// then namespace/name.
func describe(id object.Ref) string { return id.String() }

// ptrOrNil is nil for a cluster-scoped object's empty namespace.
func ptrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
