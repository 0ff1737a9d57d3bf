package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/repair"
	"github.com/crossplane-contrib/function-dependencies/internal/teardown"
)

// A Crossplane Operation runs the function outside any composite: the
// request has no observed state, and the function reads the cluster through
// required resources instead. A WatchOperation injects the Object whose
// change made the Operation; otherwise the function sweeps every Object of
// both API groups. Either way it then asks for the objects they reference
// (see targetSelector), and once it has them all declares, as partial
// objects, the reference finalizers that live targets lack.
//
// Crossplane applies each partial object with server-side apply under a
// field owner of its own for every Operation, and deletes nothing: so the
// function declares only what is missing, which keeps each target's
// managedFields from growing with every Operation, and can remove nothing.

// WatchedResource is the requirement under which a WatchOperation injects
// the object it watches.
const WatchedResource = "ops.crossplane.io/watched-resource"

// objectVersions are the apiVersions the function lists Objects by: those
// provider-kubernetes v1 stores.
var objectVersions = map[string]string{
	objectref.ClusterGroup:    objectref.ClusterGroup + "/v1alpha2",
	objectref.NamespacedGroup: objectref.NamespacedGroup + "/v1alpha1",
}

// maxListed bounds each list in the output: Crossplane stores the output in
// the Operation's status, which must fit in one etcd object. The counts are
// always complete.
const maxListed = 100

// A sweep is what an Operation reads of its required resources.
type sweep struct {
	// watched is true in a WatchOperation.
	watched bool
	// resources are the Objects handled and the objects they reference, in
	// name order.
	resources []graph.Resource
	// requirements are what the function asks Crossplane for, and complete
	// is true once Crossplane has answered every one of them.
	requirements map[string]*fnv1.ResourceSelector
	complete     bool
	// problems are the references that could not be read.
	problems []string
	// read are the objects read, by the resources' names: the resources
	// and, for a watched target being deleted, the Objects that may hold
	// it (see holdersOf), or the targets of teardowns (see readTargets).
	read map[string]*structpb.Struct
	// gone are the released targets whose managed resource is gone.
	gone []string
}

// runOperation answers an Operation's request.
func (f *Function) runOperation(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, in *v1beta1.Input) {
	s := readSweep(req.GetRequiredResources(), in.ObjectSelector)
	rsp.Requirements = &fnv1.Requirements{Resources: s.requirements}
	if !s.complete {
		// Crossplane calls again with what was asked for; only the last
		// answer counts.
		return
	}
	g := graph.New(s.resources, graph.Options{BreakCycles: true})
	// The Composition step protects the edges of an Object it labelled
	// with Usages instead: their finalizers are not the sweep's to restore.
	fin := finalizer.Declare(g, func(i int) finalizer.Yield {
		labels := value(value(s.read[g.Edges[i].Dependent], "metadata").GetStructValue(), "labels").GetStructValue()
		if text(labels, ProtectionLabel) == string(v1beta1.ProtectionUsages) {
			return finalizer.Yielded
		}
		return finalizer.Keep
	})
	if s.watched || in.ObjectSelector != nil {
		// A finalizer on a target may name an Object this Operation didn't
		// read: staleness needs every Object.
		fin.Stale = nil
	}
	out := repair.Of(g, fin)
	enforce := in.Mode == v1beta1.ModeEnforce
	nudged := nudges(s)
	if enforce {
		desired := map[string]*fnv1.Resource{}
		for _, r := range out.Repaired {
			desired[r.Target] = &fnv1.Resource{Resource: partial(g.Resource(r.Target), r.Finalizers)}
		}
		// A nudged object is being deleted: none is repaired too. Its
		// nudges are all exact or none (teardown.Now).
		labels, annotations := map[string]map[string]string{}, map[string]map[string]string{}
		exact := map[string]bool{}
		for _, n := range nudged {
			exact[n.Object] = n.Exact
			into := annotations
			if n.Label {
				into = labels
			}
			if into[n.Object] == nil {
				into[n.Object] = map[string]string{}
			}
			into[n.Object][n.Key] = n.Value
		}
		for _, n := range nudged {
			desired[n.Object] = &fnv1.Resource{Resource: nudging(s.read[n.Object], labels[n.Object], annotations[n.Object], exact[n.Object])}
		}
		rsp.Desired = &fnv1.State{Resources: desired}
	}
	var woken []string // Report mode applies no nudge either.
	for _, n := range nudged {
		if enforce && !slices.Contains(woken, n.Object) {
			woken = append(woken, n.Object)
		}
	}
	slices.Sort(woken)
	if err := response.SetOutput(rsp, outputOf(out, enforce, len(g.Cycles), woken)); err != nil {
		response.Fatal(rsp, err)
		return
	}
	for _, w := range warningsOf(s, out, g.Cycles) {
		rsp.Results = append(rsp.Results, &fnv1.Result{Severity: fnv1.Severity_SEVERITY_WARNING, Reason: &w.reason, Message: w.message})
	}
	f.log.Debug("Swept Objects", "watched", s.watched, "dependents", out.Dependents, "references", out.References,
		"protected", out.Protected, "repaired", len(out.Repaired), "skipped", len(out.Skipped), "stale", len(out.Stale))
}

// readSweep reads the required resources: the Objects to handle, and the
// objects they reference that Crossplane has fetched so far.
func readSweep(required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) sweep {
	s := sweep{requirements: map[string]*fnv1.ResourceSelector{}, complete: true, read: map[string]*structpb.Struct{}}
	var objects []*structpb.Struct
	if watched, ok := required[WatchedResource]; ok {
		s.watched = true
		for _, item := range watched.GetItems() {
			// Of a watched resource of another kind, one an Object
			// manages, only its going counts (below).
			if o := item.GetResource(); isObject(o) {
				objects = append(objects, o)
			}
		}
		if len(watched.GetItems()) == 0 {
			// The watched resource is gone: Crossplane makes an Operation
			// of its deletion too, and finds nothing.
			readTargets(&s, required, selector)
		}
	} else {
		labels := map[string]string{}
		if selector != nil && selector.MatchLabels != nil {
			labels = selector.MatchLabels
		}
		objects = listObjects(&s, required, requiredPrefix+"objects/", labels)
	}

	byIdentity := map[objectref.Ref]bool{}
	var sources []*structpb.Struct // Each resource's.
	add := func(o *structpb.Struct) {
		if id := identityOf(o); !byIdentity[id] {
			byIdentity[id] = true
			s.resources = append(s.resources, live(id, o))
			sources = append(sources, o)
			s.read[describe(id)] = o
		}
	}
	for _, o := range objects {
		add(o)
	}
	if s.watched {
		// A sweep lists every Object already.
		for _, o := range objects {
			labels, held := holdersOf(o, selector)
			if !held {
				continue
			}
			for _, d := range listObjects(&s, required, requiredPrefix+"teardown/", labels) {
				if _, seen := s.read[describe(identityOf(d))]; !seen {
					s.read[describe(identityOf(d))] = d
				}
			}
		}
	}
	// Only the Objects read so far are handled: a target that is an Object
	// adds no edge of its own.
	var targets []objectref.Target
	for i := range s.resources {
		r := &s.resources[i]
		refs, errs := objectref.Parse(r.Identity.Group, value(sources[i], "spec", "references"))
		r.References = refs
		for _, err := range errs {
			s.problems = append(s.problems, r.Name+": "+err.Error())
		}
		targets = append(targets, refs...)
	}
	// How many targets not read yet each kind has in each namespace.
	unread := map[string]map[string]bool{}
	for _, t := range targets {
		if !byIdentity[t.ID()] {
			k := kindIn(t)
			if unread[k] == nil {
				unread[k] = map[string]bool{}
			}
			unread[k][t.Name] = true
		}
	}
	for _, t := range targets {
		if byIdentity[t.ID()] {
			continue // An Object already read, or a target already fetched.
		}
		name, sel := targetSelector(t, s.watched, len(unread[kindIn(t)]))
		if _, asked := s.requirements[name]; asked {
			continue
		}
		s.requirements[name] = sel
		got, ok := required[name]
		s.complete = s.complete && ok
		for _, item := range got.GetItems() {
			add(item.GetResource())
		}
	}
	slices.SortFunc(s.resources, func(a, b graph.Resource) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// readTargets reads the targets of teardowns (internal/teardown), listed
// by their label within the input's objectSelector, and, by name, the
// resource each released one manages, and notes those whose resource is
// gone.
func readTargets(s *sweep, required map[string]*fnv1.Resources, selector *v1beta1.ObjectSelector) {
	labels := map[string]string{teardown.TargetLabel: "true"}
	if selector != nil {
		maps.Copy(labels, selector.MatchLabels)
	}
	for _, o := range listObjects(s, required, requiredPrefix+"teardown-targets/", labels) {
		object := describe(identityOf(o))
		s.read[object] = o
		manifest, ok := manifestOf(o)
		if !ok || !teardown.Released(teardownObject(object, o)) {
			continue
		}
		name := requiredPrefix + "manifest/" + object
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
// under the requirements named prefix and the group, and returns those
// Crossplane has fetched.
func listObjects(s *sweep, required map[string]*fnv1.Resources, prefix string, labels map[string]string) []*structpb.Struct {
	var out []*structpb.Struct
	for _, group := range slices.Sorted(maps.Keys(objectVersions)) {
		name := prefix + group
		s.requirements[name] = &fnv1.ResourceSelector{
			ApiVersion: objectVersions[group], Kind: objectref.Kind,
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: labels}},
		}
		got, ok := required[name]
		s.complete = s.complete && ok
		for _, item := range got.GetItems() {
			out = append(out, item.GetResource())
		}
	}
	return out
}

// manifestOf is the resource an Object manages, in the cluster the
// function's Operation reads: an Object whose ProviderConfig points at
// another cluster has its resource there, which reads as gone here; the
// nudge that then wakes it early costs one reconcile.
func manifestOf(o *structpb.Struct) (objectref.Target, bool) {
	m := value(o, "spec", "forProvider", "manifest").GetStructValue()
	gv, err := schema.ParseGroupVersion(text(m, "apiVersion"))
	t := objectref.Target{Ref: objectref.Ref{
		APIVersion: text(m, "apiVersion"), Group: gv.Group, Kind: text(m, "kind"),
		Namespace: text(m, "metadata", "namespace"), Name: text(m, "metadata", "name"),
	}}
	if t.Namespace == "" && identityOf(o).Group == objectref.NamespacedGroup {
		// A namespaced Object's resource is in its namespace.
		t.Namespace = text(o, "metadata", "namespace")
	}
	return t, err == nil && t.Kind != "" && t.Name != ""
}

// isObject reports whether an object of the cluster is a
// provider-kubernetes Object.
func isObject(o *structpb.Struct) bool {
	id := identityOf(o)
	return objectref.IsObject(id.Group, id.Kind)
}

// holdersOf are the labels of the Objects that may hold a watched Object
// being deleted that carries reference finalizers, which name their
// dependents by UID only: the Objects of its composite, when a composite
// composed it, else those of the input's objectSelector. held is false for
// any other Object.
func holdersOf(o *structpb.Struct, selector *v1beta1.ObjectSelector) (labels map[string]string, held bool) {
	m := value(o, "metadata").GetStructValue()
	if text(m, "deletionTimestamp") == "" || !slices.ContainsFunc(texts(value(m, "finalizers")), func(f string) bool {
		_, ok := objectref.UIDOf(f)
		return ok
	}) {
		return nil, false
	}
	labels = map[string]string{}
	if xr := text(m, "labels", "crossplane.io/composite"); xr != "" {
		labels["crossplane.io/composite"] = xr
	} else if selector != nil && selector.MatchLabels != nil {
		labels = selector.MatchLabels
	}
	return labels, true
}

// nudges are the teardown nudges this Operation applies: of every object
// read being deleted, each with its dependents among the Objects read, and
// of the released targets whose resource is gone.
func nudges(s sweep) []teardown.Nudge {
	objects := map[string]teardown.Object{}
	var dependents []teardown.Object
	for _, name := range slices.Sorted(maps.Keys(s.read)) {
		o := s.read[name]
		t := teardownObject(name, o)
		objects[name] = t
		if isObject(o) {
			dependents = append(dependents, t)
		}
	}
	var out []teardown.Nudge
	for _, name := range slices.Sorted(maps.Keys(objects)) {
		out = append(out, teardown.Nudges(objects[name], dependents)...)
	}
	for _, name := range s.gone {
		out = append(out, teardown.Gone(objects[name]))
	}
	return teardown.Now(out)
}

// teardownObject is what internal/teardown needs of an object read.
func teardownObject(name string, o *structpb.Struct) teardown.Object {
	m := value(o, "metadata").GetStructValue()
	return teardown.Object{
		Name: name, UID: text(m, "uid"), Deleting: text(m, "deletionTimestamp") != "",
		Finalizers: texts(value(m, "finalizers")), Labels: stringMap(value(m, "labels")), Annotations: stringMap(value(m, "annotations")),
	}
}

// stringMap is a map of strings, such as an object's labels.
func stringMap(v *structpb.Value) map[string]string {
	out := map[string]string{}
	for k, v := range v.GetStructValue().GetFields() {
		out[k] = v.GetStringValue()
	}
	return out
}

// nudging is the partial object that sets labels and annotations on an
// object read: its identity, its UID, as partial says why, those, and, for
// exact nudges (internal/teardown says why), the resourceVersion read, so
// that the API server applies them only to that version.
func nudging(o *structpb.Struct, labels, annotations map[string]string, exact bool) *structpb.Struct {
	id := identityOf(o)
	metadata := map[string]*structpb.Value{
		"name": structpb.NewStringValue(id.Name),
		"uid":  structpb.NewStringValue(text(o, "metadata", "uid")),
	}
	if rv := text(o, "metadata", "resourceVersion"); rv != "" && exact {
		metadata["resourceVersion"] = structpb.NewStringValue(rv)
	}
	for field, m := range map[string]map[string]string{"labels": labels, "annotations": annotations} {
		if len(m) == 0 {
			continue
		}
		fields := map[string]*structpb.Value{}
		for k, v := range m {
			fields[k] = structpb.NewStringValue(v)
		}
		metadata[field] = structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	if id.Namespace != "" {
		metadata["namespace"] = structpb.NewStringValue(id.Namespace)
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"apiVersion": structpb.NewStringValue(text(o, "apiVersion")),
		"kind":       structpb.NewStringValue(id.Kind),
		"metadata":   structpb.NewStructValue(&structpb.Struct{Fields: metadata}),
	}}
}

// maxByName is how many targets of one kind in one namespace a sweep asks
// for by name, each a Get for core to make and a selector in the
// response; past it, a sweep lists the kind in the namespace instead, one
// List, which also brings what nothing references. Secrets are always
// asked for by name (see targetSelector).
const maxByName = 100

// kindIn names a target's kind in its namespace, as a sweep lists it.
func kindIn(t objectref.Target) string { return t.APIVersion + "/" + t.Kind + "/" + t.Namespace }

// targetSelector is the requirement that fetches a target, one of n not
// read yet of its kind in its namespace. A WatchOperation asks for each of
// its few targets by name, and so does a sweep for an Object (read at the
// version provider-kubernetes stores), for a Secret, and for a target of a
// kind that has at most maxByName in its namespace. A sweep lists the
// targets' kind in their namespace, once for all of them, only past that:
// asking for 10,000 ConfigMaps by name made the sweep's last response 4.9
// MiB, past the 4 MiB core accepts, with a Get each for core to make. A
// list brings every object of the kind in the namespace, or in the cluster
// when the reference names none: never Secrets, which carry every
// provider's credentials, and which core reads past its cache, so that a
// Get of each is all Crossplane needs to be granted. A sweep has read every
// Object it may list already: one it still needs lies outside its
// objectSelector, or doesn't exist.
func targetSelector(t objectref.Target, watched bool, n int) (string, *fnv1.ResourceSelector) {
	v, object := objectVersions[t.Group]
	object = object && t.Kind == objectref.Kind
	if object {
		// Read and applied at the version provider-kubernetes stores. A
		// reference without an apiVersion means v1alpha1, which the API
		// server converts through the provider's webhook on every read and
		// apply: on the real control plane, twenty new Objects referencing
		// one Object under a WatchOperation had their last finalizer 38-44 s
		// after creation, with 53-79 applies timed out by the API server on
		// the way; at v1alpha2, 14.6 s and none.
		t.APIVersion = v
	}
	secret := t.Group == "" && t.Kind == "Secret"
	if watched || object || secret || n <= maxByName {
		return requiredPrefix + "target/" + describe(t.ID()), &fnv1.ResourceSelector{
			ApiVersion: t.APIVersion, Kind: t.Kind, Namespace: ptrOrNil(t.Namespace),
			Match: &fnv1.ResourceSelector_MatchName{MatchName: t.Name},
		}
	}
	return requiredPrefix + "targets/" + kindIn(t), &fnv1.ResourceSelector{
		ApiVersion: t.APIVersion, Kind: t.Kind, Namespace: ptrOrNil(t.Namespace),
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{}}},
	}
}

// live is an object as the cluster has it. It desires the finalizers it
// carries, so that only those it lacks are declared.
func live(id objectref.Ref, o *structpb.Struct) graph.Resource {
	m := value(o, "metadata").GetStructValue()
	finalizers := texts(value(m, "finalizers"))
	return graph.Resource{
		Name:       describe(id),
		Identity:   id,
		APIVersion: text(o, "apiVersion"),
		IsObject:   objectref.IsObject(id.Group, id.Kind),
		Observed: &graph.Observed{
			UID:        text(m, "uid"),
			Finalizers: finalizers,
			Deleting:   text(m, "deletionTimestamp") != "",
		},
		Desired: &graph.Desired{Finalizers: finalizers},
	}
}

// partial is what the function applies to a target: its identity, its UID
// and the finalizers it lacks. With the UID, the API server refuses the
// apply if the target was deleted since it was read, rather than creating
// it again with nothing but the finalizers; and refuses it if the target was
// replaced by another of the same name.
func partial(r *graph.Resource, finalizers []string) *structpb.Struct {
	metadata := map[string]*structpb.Value{
		"name":       structpb.NewStringValue(r.Identity.Name),
		"uid":        structpb.NewStringValue(r.UID()),
		"finalizers": stringList(finalizers),
	}
	if r.Identity.Namespace != "" {
		metadata["namespace"] = structpb.NewStringValue(r.Identity.Namespace)
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"apiVersion": structpb.NewStringValue(r.APIVersion),
		"kind":       structpb.NewStringValue(r.Identity.Kind),
		"metadata":   structpb.NewStructValue(&structpb.Struct{Fields: metadata}),
	}}
}

// An operationOutput is what an Operation stores in its status.
type operationOutput struct {
	// Dependents counts the Objects that reference anything, References
	// their references, Protected those protected already.
	Dependents int `json:"dependents"`
	References int `json:"references"`
	Protected  int `json:"protected"`
	// Repaired are the finalizers declared, by target; in Report mode,
	// Missing lists them instead, and nothing is declared.
	Repaired []repair.Repair `json:"repaired,omitempty"`
	Missing  []repair.Repair `json:"missing,omitempty"`
	Skipped  []repair.Skip   `json:"skipped,omitempty"`
	Stale    []staleEntry    `json:"stale,omitempty"`
	Cycles   int             `json:"cycles,omitempty"`
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

func outputOf(o repair.Outcome, enforce bool, cycles int, nudged []string) operationOutput {
	out := operationOutput{Dependents: o.Dependents, References: o.References, Protected: o.Protected, Cycles: cycles, Omitted: map[string]int{}}
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

// keep returns the first maxListed items, and counts those it leaves out.
func keep[T any](omitted map[string]int, list string, items []T) []T {
	if len(items) <= maxListed {
		return items
	}
	omitted[list] = len(items) - maxListed
	return items[:maxListed]
}

type opWarning struct{ reason, message string }

// warningsOf are what needs a person's attention: references that can't be
// read, cycles and stale finalizers.
// Each is one result, whatever the number of resources it is about, so that
// a sweep of thousands makes a handful of events.
func warningsOf(s sweep, o repair.Outcome, cycles [][]string) []opWarning {
	var ws []opWarning
	if len(s.problems) > 0 {
		ws = append(ws, opWarning{"InvalidReferences", fmt.Sprintf("cannot read the references of %s: %s", count(len(s.problems), "Object"), first(s.problems))})
	}
	if len(cycles) > 0 {
		paths := make([]string, len(cycles))
		for i, c := range cycles {
			paths[i] = strings.Join(c, " → ")
		}
		ws = append(ws, opWarning{"ReferenceCycle", fmt.Sprintf("%s, left without finalizers: %s", count(len(cycles), "reference cycle"), first(paths))})
	}
	if len(o.Stale) > 0 {
		stale := make([]string, len(o.Stale))
		for i, f := range o.Stale {
			stale[i] = f.Resource + " carries " + f.Finalizer
		}
		ws = append(ws, opWarning{"StaleFinalizers", fmt.Sprintf("%s naming no live Object that references its target: %s", count(len(stale), "reference finalizer"), first(stale))})
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

// identityOf is the identity of an object of the cluster.
func identityOf(o *structpb.Struct) objectref.Ref {
	gv, _ := schema.ParseGroupVersion(text(o, "apiVersion"))
	return objectref.Ref{Group: gv.Group, Kind: text(o, "kind"), Namespace: text(o, "metadata", "namespace"), Name: text(o, "metadata", "name")}
}

// describe names an object the way kubectl does, which is unique: kind.group,
// then namespace/name.
func describe(id objectref.Ref) string {
	return id.String()
}

func stringList(items []string) *structpb.Value {
	values := make([]*structpb.Value, len(items))
	for i, s := range items {
		values[i] = structpb.NewStringValue(s)
	}
	return structpb.NewListValue(&structpb.ListValue{Values: values})
}

// ptrOrNil is nil for a cluster-scoped object's empty namespace.
func ptrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
