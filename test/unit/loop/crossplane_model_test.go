package loop

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// This file is the world TestReconcileLoop runs the function in: an in-process
// model of the Crossplane composite reconciler, of the API server it applies to,
// and of the controllers that act between two reconciles (provider-kubernetes,
// Crossplane's Usage controller and webhook, Kubernetes' garbage collector). The
// facts are those of the project's notes on provider-kubernetes v1.x and of
// Crossplane core's composite and Usage controllers
// (internal/controller/apiextensions/composite/composition_functions.go,
// internal/controller/protection/usage/reconciler.go,
// internal/webhook/protection/usage/handler.go, internal/xfn/required_resources.go):
//
//   - A reconcile sends the function the composite, the composed resources its
//     resourceRefs name that exist, and the earlier steps' desired state; it
//     calls the function again, with what it asked for, until it asks for
//     nothing new. A fatal result applies nothing.
//   - Crossplane keeps an existing resource's name and namespace, gives a
//     namespaced composite's resources its namespace and generates the names
//     desired state lacks. It garbage-collects what is no longer desired first,
//     removing the crossplane.io/composite label, and a deletion a Usage
//     refuses fails the reconcile before anything is applied; then it records
//     the resourceRefs (a deleted resource is no longer observed) and applies
//     each desired resource with server-side apply: metadata.finalizers is a
//     set whose entries each have owners, an entry the composite stops
//     declaring goes only when nobody else owns it, a label it stops applying
//     goes, and the API server rejects an apply that adds a finalizer to a
//     deleting object. Every composed resource names the composite as its
//     controller in its ownerReferences.
//   - provider-kubernetes reconciles an Object once every object it
//     references exists: it adds its own finalizer and, once and at random,
//     each reference finalizer (provider-kubernetes #371). An Object being
//     deleted waits until no finalizer but its own is left, deletes its remote
//     object (which takes a step or not), removes its reference finalizer from
//     every object its spec.references name, whoever owns it, then its own.
//   - The Usage controller adds its finalizer, labels the used object in use
//     and makes the user an owner of the Usage; a composed Usage being deleted
//     waits for its user to go, unless Crossplane garbage-collected it, then
//     replays a deletion its webhook refused. The webhook refuses to delete an
//     object in use while a Usage of it exists.
//   - The garbage collector deletes what none of its owners is left of, again
//     while a webhook refuses; the composite's teardown is that, with no
//     function run.
//   - A resource is ready its readiness delay (1 or 2 reconciles) after its
//     creation, an Object that long after the provider reconciled it, a Usage
//     that long after its controller did.
//
// Observed state is only ever what this world holds. The model uses none of the
// function's code: what it knows of a resource it reads from the manifests, as
// the API server and the controllers do. Controllers act between reconciles,
// never between a reconcile's observation and its apply.

// Names the controllers use.
const (
	xpCompositeLabel      = "crossplane.io/composite"
	xpResourceNameAnno    = "crossplane.io/composition-resource-name"
	xpInUseLabel          = "crossplane.io/in-use"
	xpDeletionAttemptAnno = "usage.crossplane.io/deletion-attempt-with-policy"
	xpUsageFinalizer      = "usage.apiextensions.crossplane.io"
	xpObjectFinalizer     = "finalizer.managedresource.crossplane.io"
	xpRefFinalizerPrefix  = "kubernetes.crossplane.io/referred-by-object-"
	// xpOtherFinalizer is an earlier pipeline step's own finalizer, which
	// some other controller removes once Crossplane no longer applies the
	// resource.
	xpOtherFinalizer = "example.org/keep"
)

// An xpKey is how the API server and the controllers find an object: API
// group (any version), kind, namespace and name.
type xpKey struct{ group, kind, namespace, name string }

func (k xpKey) String() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace != "" {
		return kind + " " + k.namespace + "/" + k.name
	}
	return kind + " " + k.name
}

// xpNamespaced holds the kinds of the model's API server that are namespaced;
// every other kind it serves is cluster-scoped.
var xpNamespaced = map[[2]string]bool{
	{"kubernetes.m.crossplane.io", "Object"}: true,
	{"", "ConfigMap"}:                        true,
	{"", "Secret"}:                           true,
	{"apps", "Deployment"}:                   true,
	{"protection.crossplane.io", "Usage"}:    true,
	// What the inference rules read (reconcile_loop_infer_gen_test.go):
	// provider-kubernetes' and the Upbound AWS provider's namespaced
	// ProviderConfigs and managed resources; their ClusterProviderConfigs
	// and the other groups' are cluster-scoped.
	{"kubernetes.m.crossplane.io", "ProviderConfig"}: true,
	{"aws.m.upbound.io", "ProviderConfig"}:           true,
	{"ec2.aws.m.upbound.io", "VPC"}:                  true,
	{"ec2.aws.m.upbound.io", "Subnet"}:               true,
	{"ec2.aws.m.upbound.io", "Route"}:                true,
	{"eks.aws.m.upbound.io", "Cluster"}:              true,
	{"rds.aws.m.upbound.io", "Instance"}:             true,
	// and those named after the composite (loopSharedNames).
	{"ec2.aws.m.upbound.io", "InternetGateway"}:           true,
	{"ec2.aws.m.upbound.io", "RouteTable"}:                true,
	{"ec2.aws.m.upbound.io", "MainRouteTableAssociation"}: true,
	{"eks.aws.m.upbound.io", "ClusterAuth"}:               true,
	{"eks.aws.m.upbound.io", "NodeGroup"}:                 true,
	{"iam.aws.m.upbound.io", "Role"}:                      true,
}

func xpIsObject(group, kind string) bool {
	return kind == "Object" && (group == "kubernetes.crossplane.io" || group == "kubernetes.m.crossplane.io")
}

func xpIsUsage(group, kind string) bool {
	return (group == "protection.crossplane.io" && (kind == "Usage" || kind == "ClusterUsage")) ||
		(group == "apiextensions.crossplane.io" && kind == "Usage")
}

func xpGroup(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// Who owns a finalizer. metadata.finalizers is a set under server-side
// apply: each entry has its own owners, and an entry Crossplane stops
// declaring goes only when nobody else owns it.
type xpOwners uint8

const (
	xpByCrossplane xpOwners = 1 << iota // the composite's field manager
	xpByProvider                        // provider-kubernetes, by a full update
	xpByUsages                          // Crossplane's Usage controller
	xpByOperations                      // Crossplane Operations, each a field manager of its own
)

// An xpObject is one object in the API server.
type xpObject struct {
	key        xpKey
	apiVersion string
	uid        string
	// body is what Crossplane applied last, without metadata and status:
	// no other manager writes spec in this model.
	body   map[string]any
	labels map[string]string
	// appliedLabels are the labels Crossplane's apply set last: under
	// server-side apply, one it stops applying goes.
	appliedLabels map[string]bool
	annotations   map[string]string
	finalizers    []string
	owners        map[string]xpOwners
	deleting      bool
	// ownerUIDs are its ownerReferences: the composite's, and a Usage's user's;
	// controllerUID, for an external object, another composite's that
	// composes it.
	ownerUIDs     []string
	controllerUID string
	// composedAs is its composition resource name; external objects have none.
	composedAs string
	// byFunction is true for a resource only the function's output had, never
	// an earlier step's: its Usages.
	byFunction bool
	// readyAt is the first reconcile that observes its Ready condition True;
	// 0 while none is due.
	readyAt int

	// provider-kubernetes' state of an Object: whether it reconciled it once
	// successfully (it adds finalizers only then, provider-kubernetes #371),
	// and the deletion of its remote object.
	resolved       bool
	remoteDeleting bool
	remoteGoneStep int

	// Crossplane's Usage controller's state of a Usage: whether it saw it,
	// and what it resolved each selector of spec.of and spec.by to, by
	// field. It writes that into the Usage's resourceRef, which Crossplane's
	// apply, owning no such field, leaves alone.
	usageSeen bool
	selected  map[string]xpKey
}

func (o *xpObject) has(f string) bool { return slices.Contains(o.finalizers, f) }

// xpComposite is the composite resource: its identity and
// spec.crossplane.resourceRefs, by composition resource name.
type xpComposite struct {
	apiVersion, kind, name, namespace, uid string
	refs                                   map[string]xpKey
	deleted                                bool
}

// An xpModel is the API server with its controllers, for one composite.
type xpModel struct {
	rng     *rand.Rand
	xr      xpComposite
	objects map[xpKey]*xpObject
	byUID   map[string]*xpObject
	nextUID int
	// delay is the number of reconciles a resource of a composition resource
	// name takes to become ready after its creation: 1 or 2.
	delay func(name string) int
	// atProvider is what a managed resource's provider observes of what it
	// manages, by composition resource name (an id, an ARN): in
	// status.atProvider from its first observation after it created it,
	// before it is ready; nil for none.
	atProvider func(name string) map[string]any

	// tick orders every deletion event; a tick is unique.
	tick int
	// deletionStart and deletionEnd are, by UID, when an object began to be
	// deleted for real (an Object's remote object, or the object itself
	// otherwise) and when that ended.
	deletionStart, deletionEnd map[string]int
	// attempted holds the UIDs of objects someone tried to delete: they must
	// be gone at the end.
	attempted map[string]xpKey
	// replays are deletions Crossplane's Usage controller replays.
	replays []xpKey
	// changed is set by every change to the world.
	changed bool
	// notes are what happened, for the trace.
	notes []string
	// violate reports a property the function broke, seen from the API
	// server: an apply it rejects.
	violate func(property, detail string)
	// finalizerSeen records every (UID, finalizer) the world ever held, and
	// whether it was removed since: one added again after that flaps.
	finalizerSeen map[string]int
	// usageBlocked is set while a Usage refuses Crossplane's garbage
	// collection, which fails the whole reconcile.
	usageBlocked bool
	// refused and replayed count the deletions Usages refused and the
	// Usage controller replayed.
	refused, replayed int
	// remoteDeletion is how many more steps an Object's remote object takes
	// to go once its deletion began: 0 or 1, at random.
	remoteDeletion func() int
}

func newXPModel(rng *rand.Rand, xr xpComposite, delay func(string) int, violate func(string, string)) *xpModel {
	xr.refs = map[string]xpKey{}
	return &xpModel{
		rng: rng, xr: xr, objects: map[xpKey]*xpObject{}, byUID: map[string]*xpObject{}, delay: delay,
		deletionStart: map[string]int{}, deletionEnd: map[string]int{}, attempted: map[string]xpKey{},
		violate: violate, finalizerSeen: map[string]int{},
		remoteDeletion: func() int { return rng.IntN(2) },
	}
}

func (m *xpModel) note(format string, args ...any) {
	m.notes = append(m.notes, fmt.Sprintf(format, args...))
}

func (m *xpModel) takeNotes() string {
	s := strings.Join(m.notes, "; ")
	m.notes = m.notes[:0]
	return s
}

func (m *xpModel) newUID() string {
	m.nextUID++
	// Random hex, as UIDs are, so that nothing can depend on their order.
	return fmt.Sprintf("%08x-%04x-%04d", m.rng.Uint32(), m.rng.Uint32()&0xffff, m.nextUID)
}

// addExternal creates an object the composite doesn't compose.
func (m *xpModel) addExternal(apiVersion, kind, namespace, name string) {
	k := xpKey{xpGroup(apiVersion), kind, namespace, name}
	o := &xpObject{key: k, apiVersion: apiVersion, uid: m.newUID(), body: map[string]any{}, labels: map[string]string{},
		annotations: map[string]string{}, owners: map[string]xpOwners{}}
	m.objects[k] = o
	m.byUID[o.uid] = o
}

// addFinalizer adds a finalizer for an owner, as an update or an apply does.
func (m *xpModel) addFinalizer(o *xpObject, f string, by xpOwners) {
	if !o.has(f) {
		o.finalizers = append(o.finalizers, f)
		id := o.uid + " " + f
		if m.finalizerSeen[id] == 2 {
			m.violate(loopNoFlaps, fmt.Sprintf("%s %s regained finalizer %s after losing it", o.key, o.composedAs, f))
		}
		m.finalizerSeen[id] = 1
		m.changed = true
	}
	if o.owners[f]&by == 0 {
		o.owners[f] |= by
		m.changed = true
	}
}

// removeFinalizer removes a finalizer whoever owns it, as a full update
// does, and deletes the object when it was the last one holding it.
func (m *xpModel) removeFinalizer(o *xpObject, f string) {
	i := slices.Index(o.finalizers, f)
	if i < 0 {
		return
	}
	o.finalizers = slices.Delete(o.finalizers, i, i+1)
	delete(o.owners, f)
	m.finalizerSeen[o.uid+" "+f] = 2
	m.changed = true
	m.goIfFree(o)
}

// goIfFree removes a deleting object that no finalizer holds.
func (m *xpModel) goIfFree(o *xpObject) {
	if !o.deleting || len(o.finalizers) > 0 {
		return
	}
	m.tick++
	if _, ok := m.deletionStart[o.uid]; !ok {
		m.deletionStart[o.uid] = m.tick
	}
	if _, ok := m.deletionEnd[o.uid]; !ok {
		m.deletionEnd[o.uid] = m.tick
	}
	delete(m.objects, o.key)
	delete(m.byUID, o.uid)
	m.changed = true
	m.note("%s gone", m.describe(o))
}

func (m *xpModel) describe(o *xpObject) string {
	if o.composedAs != "" {
		return o.composedAs
	}
	return o.key.String()
}

// usageRefs reads a Usage's spec.of and spec.by as the keys of the objects
// they name. A reference's namespace defaults to the Usage's own; by has no
// namespace field.
func usageRefs(o *xpObject) (of, by xpKey, hasBy, replay bool) {
	of, by, hasBy, replay = xpUsageRefs(o.body, o.key.namespace)
	if k, ok := o.selected["of"]; ok && of.name == "" {
		of = k
	}
	if k, ok := o.selected["by"]; ok && by.name == "" {
		by = k
	}
	return of, by, hasBy, replay
}

// selectFor is Crossplane's Usage controller resolving the resourceSelector
// of a Usage's spec.of or spec.by (field) that has no resourceRef name: the
// first object of its kind, in the Usage's namespace (spec.of's selector may
// say another) or for a cluster-scoped Usage in any, whose labels hold the
// selector's matchLabels, and with matchControllerRef whose controller is
// the Usage's. It reports whether the field needs none or is resolved.
func (m *xpModel) selectFor(u *xpObject, field string) bool {
	spec, _ := u.body["spec"].(map[string]any)
	end, _ := spec[field].(map[string]any)
	rr, _ := end["resourceRef"].(map[string]any)
	sel, hasSelector := end["resourceSelector"].(map[string]any)
	if name, _ := rr["name"].(string); name != "" || !hasSelector {
		return true
	}
	if _, ok := u.selected[field]; ok {
		return true
	}
	apiVersion, _ := end["apiVersion"].(string)
	kind, _ := end["kind"].(string)
	ns, anywhere := u.key.namespace, u.key.namespace == ""
	if n, _ := sel["namespace"].(string); n != "" && field == "of" && !anywhere {
		ns = n
	}
	labels, _ := sel["matchLabels"].(map[string]any)
	sameController, _ := sel["matchControllerRef"].(bool)
	for _, o := range m.sorted() {
		if o.key.group != xpGroup(apiVersion) || o.key.kind != kind || (!anywhere && o.key.namespace != ns) {
			continue
		}
		if sameController && (len(o.ownerUIDs) == 0 || len(u.ownerUIDs) == 0 || o.ownerUIDs[0] != u.ownerUIDs[0]) {
			continue
		}
		holds := true
		for k, v := range labels {
			if got, ok := o.labels[k]; !ok || got != v {
				holds = false
			}
		}
		if holds {
			if u.selected == nil {
				u.selected = map[string]xpKey{}
			}
			u.selected[field] = o.key
			m.changed = true
			return true
		}
	}
	return false
}

// xpUsageRefs reads spec.of and spec.by of a Usage's body, in namespace ns.
func xpUsageRefs(body map[string]any, ns string) (of, by xpKey, hasBy, replay bool) {
	spec, _ := body["spec"].(map[string]any)
	ref := func(field string, namespaced bool) (xpKey, bool) {
		r, ok := spec[field].(map[string]any)
		if !ok {
			return xpKey{}, false
		}
		rr, _ := r["resourceRef"].(map[string]any)
		apiVersion, _ := r["apiVersion"].(string)
		kind, _ := r["kind"].(string)
		name, _ := rr["name"].(string)
		refNS := ns
		if n, ok := rr["namespace"].(string); ok && n != "" && namespaced {
			refNS = n
		}
		return xpKey{xpGroup(apiVersion), kind, refNS, name}, true
	}
	of, _ = ref("of", true)
	by, hasBy = ref("by", false)
	replay, _ = spec["replayDeletion"].(bool)
	return of, by, hasBy, replay
}

// usagesOf returns the Usages, deleting or not, of the object.
func (m *xpModel) usagesOf(o *xpObject) []*xpObject {
	var out []*xpObject
	for _, u := range m.sorted() {
		if !xpIsUsage(u.key.group, u.key.kind) {
			continue
		}
		if of, _, _, _ := usageRefs(u); of == o.key {
			out = append(out, u)
		}
	}
	return out
}

// delete asks the API server to delete the object. Crossplane's Usage
// webhook refuses it while a Usage of the object exists, once the Usage
// controller has labelled it as in use, and records the attempt for the
// Usage's replayDeletion. It reports whether the deletion was accepted.
func (m *xpModel) delete(o *xpObject, who string) bool {
	if o.labels[xpInUseLabel] == "true" && len(m.usagesOf(o)) > 0 {
		if o.annotations[xpDeletionAttemptAnno] == "" {
			o.annotations[xpDeletionAttemptAnno] = "Background"
			m.changed = true
		}
		if _, tried := m.attempted[o.uid]; !tried {
			m.note("%s may not delete %s: in use", who, m.describe(o))
		}
		m.attempted[o.uid] = o.key
		m.refused++
		return false
	}
	m.attempted[o.uid] = o.key
	if o.deleting {
		return true
	}
	o.deleting = true
	m.changed = true
	m.note("%s deletes %s", who, m.describe(o))
	m.goIfFree(o)
	return true
}

func (m *xpModel) sorted() []*xpObject {
	keys := slices.SortedFunc(maps.Keys(m.objects), func(a, b xpKey) int { return strings.Compare(a.String(), b.String()) })
	out := make([]*xpObject, len(keys))
	for i, k := range keys {
		out[i] = m.objects[k]
	}
	return out
}

// A xpResult is what one reconcile of the composite did.
type xpResult struct {
	// req and rsp are the function's last call: Crossplane calls it again
	// while it asks for resources it wasn't given.
	req *fnv1.RunFunctionRequest
	rsp *fnv1.RunFunctionResponse
	// calls counts the calls; requirements, the calls that asked for
	// resources.
	calls, requirements int
	fatal               bool
	// blocked is set when a Usage refused to let Crossplane delete a
	// resource the function no longer desires: the reconcile fails before it
	// applies anything.
	blocked string
	// created are the composition resource names of the objects the apply
	// created.
	created []string
	err     error
}

// observedJSON is the object as the API server returns it, at reconcile n.
func (m *xpModel) observedJSON(o *xpObject, n int) map[string]any {
	out := make(map[string]any, len(o.body)+4)
	maps.Copy(out, o.body)
	if len(o.selected) > 0 {
		// The Usage controller wrote what it selected into resourceRef.
		spec := maps.Clone(out["spec"].(map[string]any))
		for field, k := range o.selected {
			end := maps.Clone(spec[field].(map[string]any))
			ref := map[string]any{"name": k.name}
			if k.namespace != o.key.namespace {
				ref["namespace"] = k.namespace
			}
			end["resourceRef"] = ref
			spec[field] = end
		}
		out["spec"] = spec
	}
	out["apiVersion"] = o.apiVersion
	out["kind"] = o.key.kind
	md := map[string]any{"name": o.key.name, "uid": o.uid}
	if o.key.namespace != "" {
		md["namespace"] = o.key.namespace
	}
	strs := func(m map[string]string) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	if len(o.labels) > 0 {
		md["labels"] = strs(o.labels)
	}
	// Crossplane makes the composite the controller of what it composes;
	// the Usage controller makes a Usage's user one more owner.
	var owners []any
	for _, uid := range o.ownerUIDs {
		if uid == m.xr.uid {
			owners = append(owners, map[string]any{"apiVersion": m.xr.apiVersion, "kind": m.xr.kind, "name": m.xr.name, "uid": uid, "controller": true, "blockOwnerDeletion": true})
		} else if owner := m.byUID[uid]; owner != nil && uid == o.controllerUID {
			owners = append(owners, map[string]any{"apiVersion": owner.apiVersion, "kind": owner.key.kind, "name": owner.key.name, "uid": uid, "controller": true, "blockOwnerDeletion": true})
		} else if owner != nil {
			owners = append(owners, map[string]any{"apiVersion": owner.apiVersion, "kind": owner.key.kind, "name": owner.key.name, "uid": uid})
		}
	}
	if len(owners) > 0 {
		md["ownerReferences"] = owners
	}
	if len(o.annotations) > 0 {
		md["annotations"] = strs(o.annotations)
	}
	if len(o.finalizers) > 0 {
		fs := make([]any, len(o.finalizers))
		for i, f := range o.finalizers {
			fs[i] = f
		}
		md["finalizers"] = fs
	}
	if o.deleting {
		md["deletionTimestamp"] = "2026-12-01T00:00:00Z"
	}
	out["metadata"] = md
	status := map[string]any{}
	if o.readyAt > 0 && o.readyAt <= n {
		status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "reason": "Available"}}
	}
	if m.atProvider != nil && o.composedAs != "" {
		if at := m.atProvider(o.composedAs); at != nil {
			status["atProvider"] = at
		}
	}
	if len(status) > 0 {
		out["status"] = status
	}
	return out
}

func xpStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

// request is the request Crossplane sends the function at reconcile n: the
// composite, the composed resources its resourceRefs name that exist, and the
// earlier steps' desired state.
func (m *xpModel) request(n int, earlier map[string]*fnv1.Resource, input *structpb.Struct) *fnv1.RunFunctionRequest {
	xrMeta := map[string]any{"name": m.xr.name, "uid": m.xr.uid, "labels": map[string]any{xpCompositeLabel: m.xr.name}}
	if m.xr.namespace != "" {
		xrMeta["namespace"] = m.xr.namespace
	}
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{
			Composite: &fnv1.Resource{Resource: xpStruct(map[string]any{"apiVersion": m.xr.apiVersion, "kind": m.xr.kind, "metadata": xrMeta})},
			Resources: map[string]*fnv1.Resource{},
		},
		Desired: &fnv1.State{Resources: earlier},
		Input:   input,
	}
	for name, k := range m.xr.refs {
		if o := m.objects[k]; o != nil {
			req.Observed.Resources[name] = &fnv1.Resource{Resource: xpStruct(m.observedJSON(o, n))}
		}
	}
	return req
}

// fetch answers a requirement as core's ExistingRequiredResourcesFetcher
// does: by name, a get of the object of that name in the selector's
// namespace (none for a cluster-scoped one), nothing when it doesn't exist;
// else a list in the selector's namespace, or in all of them when it has
// none, of the objects with the labels. An object being deleted is there
// until it is gone.
func (m *xpModel) fetch(sel *fnv1.ResourceSelector, n int) *fnv1.Resources {
	out := &fnv1.Resources{}
	group := xpGroup(sel.GetApiVersion())
	for _, o := range m.sorted() {
		if o.key.group != group || o.key.kind != sel.GetKind() {
			continue
		}
		switch match := sel.GetMatch().(type) {
		case *fnv1.ResourceSelector_MatchName:
			if o.key.name != match.MatchName || o.key.namespace != sel.GetNamespace() {
				continue
			}
		default:
			if sel.GetNamespace() != "" && o.key.namespace != sel.GetNamespace() {
				continue
			}
			if l, ok := match.(*fnv1.ResourceSelector_MatchLabels); ok && !xpLabelsMatch(o.labels, l.MatchLabels.GetLabels()) {
				continue
			}
		}
		out.Items = append(out.Items, &fnv1.Resource{Resource: xpStruct(m.observedJSON(o, n))})
	}
	return out
}

func xpLabelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// reconcile runs one reconcile of the composite: the function, then, unless
// it failed, Crossplane's garbage collection of what is no longer desired and
// the server-side apply of what is. Only the function's step runs: the earlier
// steps' output is the earlier state, regenerated each reconcile.
func (m *xpModel) reconcile(f *Function, n int, earlier func() map[string]*fnv1.Resource, input *structpb.Struct) xpResult {
	var res xpResult
	base := m.request(n, earlier(), input)
	// Crossplane calls a function again, with what it asked for, until it
	// asks for what it asked for the call before (core's
	// FetchingFunctionRunner: at most six calls, MaxRequirementsIterations
	// 5 counted from 0; after the first, also when what it asks for is what
	// the request held already), and hands each call the context the one
	// before returned.
	var previous *fnv1.Requirements
	for i := 0; ; i++ {
		if i == 6 {
			m.violate(loopApplies, "the function's requirements didn't stabilize in 6 calls: Crossplane fails the reconcile")
			res.blocked = "requirements that didn't stabilize"
			return res
		}
		rsp, err := f.RunFunction(context.Background(), base)
		res.calls++
		res.req, res.rsp, res.err = base, rsp, err
		if err != nil {
			return res
		}
		if slices.ContainsFunc(rsp.GetResults(), func(r *fnv1.Result) bool { return r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL }) {
			break
		}
		r := rsp.GetRequirements()
		if proto.Equal(r, previous) {
			break
		}
		res.requirements++
		previous = r
		next := proto.Clone(base).(*fnv1.RunFunctionRequest)
		next.RequiredResources = map[string]*fnv1.Resources{}
		for name, sel := range r.GetResources() {
			next.RequiredResources[name] = m.fetch(sel, n)
		}
		next.ExtraResources = map[string]*fnv1.Resources{} //nolint:staticcheck // Crossplane still answers the deprecated field.
		for name, sel := range r.GetExtraResources() {     //nolint:staticcheck // Crossplane still answers the deprecated field.
			next.ExtraResources[name] = m.fetch(sel, n) //nolint:staticcheck // Crossplane still answers the deprecated field.
		}
		if i == 0 && len(next.RequiredResources) == 0 && len(next.ExtraResources) == 0 { //nolint:staticcheck // Crossplane still answers the deprecated field.
			break // The first request held none, and the function asked for none.
		}
		next.Context = rsp.GetContext()
		base = next
	}
	for _, r := range res.rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			res.fatal = true
			return res // Crossplane applies nothing after a fatal result.
		}
	}
	m.apply(n, res.rsp, base, &res)
	return res
}

// An xpDesired is a desired composed resource once Crossplane has given it
// its name, namespace and metadata.
type xpDesired struct {
	name       string
	key        xpKey
	apiVersion string
	body       map[string]any
	finalizers []string
	labels     map[string]string
	byFunction bool
}

// apply garbage-collects and applies the function's desired state, as
// Crossplane's FunctionComposer does.
func (m *xpModel) apply(n int, rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, res *xpResult) {
	names := slices.Sorted(maps.Keys(rsp.GetDesired().GetResources()))
	desired := make([]xpDesired, 0, len(names))
	for _, name := range names {
		body := rsp.GetDesired().GetResources()[name].GetResource().AsMap()
		apiVersion, _ := body["apiVersion"].(string)
		kind, _ := body["kind"].(string)
		md, _ := body["metadata"].(map[string]any)
		d := xpDesired{name: name, apiVersion: apiVersion, body: map[string]any{}, labels: map[string]string{}}
		d.byFunction = req.GetDesired().GetResources()[name] == nil
		for k, v := range body {
			if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
				d.body[k] = v
			}
		}
		objName, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		for _, f := range asList(md["finalizers"]) {
			if s, ok := f.(string); ok {
				d.finalizers = append(d.finalizers, s)
			}
		}
		if l, ok := md["labels"].(map[string]any); ok {
			for k, v := range l {
				d.labels[k], _ = v.(string)
			}
		}
		// An existing composed resource keeps its name and namespace.
		if k, ok := m.xr.refs[name]; ok && m.objects[k] != nil {
			objName, ns = k.name, k.namespace
		}
		group := xpGroup(apiVersion)
		namespaced := xpNamespaced[[2]string{group, kind}]
		if m.xr.namespace != "" {
			if !namespaced {
				m.violate(loopApplies, fmt.Sprintf("desired %s is a cluster-scoped %s in a namespaced composite: Crossplane fails the reconcile", name, kind))
				res.blocked = "a cluster-scoped resource in a namespaced composite"
				return
			}
			ns = m.xr.namespace
		}
		if !namespaced {
			ns = ""
		}
		if objName == "" {
			// Crossplane generates the name from generateName, the
			// composite's crossplane.io/composite label and a dash.
			const letters = "bcdfghjklmnpqrstvwxz2456789"
			suffix := make([]byte, 5)
			for i := range suffix {
				suffix[i] = letters[m.rng.IntN(len(letters))]
			}
			objName = m.xr.name + "-" + string(suffix)
		}
		d.key = xpKey{group, kind, ns, objName}
		desired = append(desired, d)
	}

	// Garbage collection comes first, and a deletion that fails (a Usage
	// refusing it) fails the reconcile before anything is applied or the
	// resource references are updated.
	inDesired := map[string]bool{}
	for _, d := range desired {
		inDesired[d.name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(m.xr.refs)) {
		o := m.objects[m.xr.refs[name]]
		if inDesired[name] || o == nil {
			continue
		}
		// Crossplane removes the labels that say the composite owns it.
		if o.labels[xpCompositeLabel] != "" {
			delete(o.labels, xpCompositeLabel)
			m.changed = true
		}
		if !m.delete(o, "Crossplane") {
			res.blocked = "a Usage refuses to let Crossplane delete " + name
			m.usageBlocked = true
			return
		}
	}
	m.usageBlocked = false
	m.xr.refs = map[string]xpKey{}
	for _, d := range desired {
		m.xr.refs[d.name] = d.key
	}

	for _, d := range desired {
		m.applyOne(n, d, req, res)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// applyOne applies one desired resource with server-side apply.
func (m *xpModel) applyOne(n int, d xpDesired, req *fnv1.RunFunctionRequest, res *xpResult) {
	o := m.objects[d.key]
	seen := map[string]bool{}
	for _, f := range d.finalizers {
		if seen[f] {
			m.violate(loopFinalizers, fmt.Sprintf("desired %s lists finalizer %s twice: server-side apply rejects a set with duplicates", d.name, f))
			return
		}
		seen[f] = true
	}
	if o == nil {
		o = &xpObject{key: d.key, apiVersion: d.apiVersion, uid: m.newUID(), body: d.body,
			labels: map[string]string{}, annotations: map[string]string{}, owners: map[string]xpOwners{},
			ownerUIDs: []string{m.xr.uid}, composedAs: d.name, byFunction: d.byFunction}
		m.objects[d.key] = o
		m.byUID[o.uid] = o
		for _, f := range d.finalizers {
			m.addFinalizer(o, f, xpByCrossplane)
		}
		switch {
		case xpIsObject(d.key.group, d.key.kind), xpIsUsage(d.key.group, d.key.kind):
			// Their controllers say when they are ready.
		default:
			o.readyAt = n + m.delay(d.name)
		}
		res.created = append(res.created, d.name)
		m.changed = true
		m.note("created %s", d.name)
	} else {
		var added []string
		for _, f := range d.finalizers {
			if !o.has(f) {
				added = append(added, f)
			}
		}
		if o.deleting && len(added) > 0 {
			// "metadata.finalizers: Forbidden: no new finalizers can be added
			// if the object is being deleted": Crossplane warns and moves on.
			var earlier []string
			if e := req.GetDesired().GetResources()[d.name]; e != nil {
				md, _ := e.GetResource().AsMap()["metadata"].(map[string]any)
				for _, f := range asList(md["finalizers"]) {
					earlier = append(earlier, fmt.Sprint(f))
				}
			}
			for _, f := range added {
				if !slices.Contains(earlier, f) {
					m.violate(loopNoNewOnDeleting, fmt.Sprintf("desired %s adds finalizer %s to %s, which is being deleted: the API server rejects the apply", d.name, f, o.key))
				}
			}
			m.note("apply of %s rejected", d.name)
			return
		}
		if !mapsEqualAny(o.body, d.body) {
			o.body = d.body
			m.changed = true
		}
		o.composedAs = d.name
		for _, f := range slices.Clone(o.finalizers) {
			if o.owners[f]&xpByCrossplane != 0 && !seen[f] {
				o.owners[f] &^= xpByCrossplane
				m.changed = true
				if o.owners[f] == 0 {
					m.removeFinalizer(o, f)
					m.note("apply drops %s from %s", xpShortFinalizer(f), d.name)
				}
			}
		}
		if m.objects[d.key] == nil {
			return
		}
		for _, f := range d.finalizers {
			m.addFinalizer(o, f, xpByCrossplane)
		}
	}
	// Crossplane renders its own metadata onto every composed resource.
	for k := range o.appliedLabels {
		if _, ok := d.labels[k]; !ok {
			delete(o.labels, k)
			m.changed = true
		}
	}
	o.appliedLabels = map[string]bool{}
	for k, v := range d.labels {
		o.appliedLabels[k] = true
		if o.labels[k] != v {
			o.labels[k] = v
			m.changed = true
		}
	}
	if o.labels[xpCompositeLabel] != m.xr.name {
		o.labels[xpCompositeLabel] = m.xr.name
		m.changed = true
	}
	// Two composition resource names of one object (a composition's
	// mistake) take turns at this annotation, which nothing here reads: it
	// doesn't count as a change.
	o.annotations[xpResourceNameAnno] = d.name
}

func mapsEqualAny(a, b map[string]any) bool {
	sa, err1 := structpb.NewStruct(a)
	sb, err2 := structpb.NewStruct(b)
	return err1 == nil && err2 == nil && proto.Equal(sa, sb)
}

func xpShortFinalizer(f string) string {
	if uid, ok := strings.CutPrefix(f, xpRefFinalizerPrefix); ok {
		return "ref(" + uid + ")"
	}
	return f
}

// xpReferences returns the objects an Object's spec.references name, as
// provider-kubernetes resolves them: patchesFrom when set, else dependsOn,
// with the CRD's defaults and no namespace default.
func xpReferences(o *xpObject) []xpKey {
	spec, _ := o.body["spec"].(map[string]any)
	var out []xpKey
	for _, r := range asList(spec["references"]) {
		rm, _ := r.(map[string]any)
		t, ok := rm["patchesFrom"].(map[string]any)
		if !ok {
			if t, ok = rm["dependsOn"].(map[string]any); !ok {
				continue
			}
		}
		apiVersion, _ := t["apiVersion"].(string)
		if apiVersion == "" {
			apiVersion = o.key.group + "/v1alpha1"
		}
		kind, _ := t["kind"].(string)
		if kind == "" {
			kind = "Object"
		}
		ns, _ := t["namespace"].(string)
		name, _ := t["name"].(string)
		k := xpKey{xpGroup(apiVersion), kind, ns, name}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// settle runs the controllers once, after the apply of reconcile step and
// before the next reconcile: provider-kubernetes, Crossplane's Usage
// controller, the controller of an earlier step's own finalizer, and
// Kubernetes' garbage collector.
func (m *xpModel) settle(step int) {
	replays := m.replays
	m.replays = nil
	for _, k := range replays {
		if o := m.objects[k]; o != nil {
			m.replayed++
			m.delete(o, "the Usage controller's replay")
		}
	}
	for _, o := range m.sorted() {
		if m.objects[o.key] == o && xpIsObject(o.key.group, o.key.kind) {
			m.provider(o, step)
		}
	}
	for _, o := range m.sorted() {
		if m.objects[o.key] == o && xpIsUsage(o.key.group, o.key.kind) {
			m.usageController(o, step)
		}
	}
	refs := map[xpKey]bool{}
	if !m.xr.deleted {
		for _, k := range m.xr.refs {
			refs[k] = true
		}
	}
	for _, o := range m.sorted() {
		if m.objects[o.key] == o && o.deleting && o.has(xpOtherFinalizer) && !refs[o.key] {
			m.removeFinalizer(o, xpOtherFinalizer)
		}
	}
	m.garbageCollect()
}

// provider is provider-kubernetes v1.x reconciling one Object.
func (m *xpModel) provider(o *xpObject, step int) {
	if !o.deleting {
		if o.resolved {
			return
		}
		// Nothing happens until every referenced object exists (the
		// provider only checks existence); then it adds its own finalizer,
		// and only then, once, the reference finalizers, of which the race
		// of provider-kubernetes #371 loses some for good. The API server
		// refuses new finalizers on a deleting object.
		targets := xpReferences(o)
		for _, k := range targets {
			if m.objects[k] == nil {
				return
			}
		}
		o.resolved = true
		m.addFinalizer(o, xpObjectFinalizer, xpByProvider)
		won := 0
		for _, k := range targets {
			t := m.objects[k]
			f := xpRefFinalizerPrefix + o.uid
			if m.rng.IntN(2) == 0 || t.deleting {
				continue
			}
			if !t.has(f) { // FinalizerExists: no update, so no ownership either.
				m.addFinalizer(t, f, xpByProvider)
			}
			won++
		}
		if o.readyAt == 0 && o.composedAs != "" {
			o.readyAt = step + m.delay(o.composedAs)
		}
		m.note("provider resolved %s (%d of %d reference finalizers)", m.describe(o), won, len(targets))
		return
	}
	if !o.has(xpObjectFinalizer) {
		return // It goes once its other finalizers do.
	}
	if !o.remoteDeleting {
		// crossplane-runtime v2: "Delay external deletion until all
		// finalizers have been removed".
		if len(o.finalizers) > 1 {
			return
		}
		m.tick++
		m.deletionStart[o.uid] = m.tick
		o.remoteDeleting = true
		o.remoteGoneStep = step + m.remoteDeletion()
		m.changed = true
		m.note("provider deletes the remote object of %s", m.describe(o))
	}
	if step < o.remoteGoneStep {
		return
	}
	// Once the remote object is gone, RemoveFinalizer removes the Object's
	// reference finalizer from every object its current spec.references
	// name, whoever owns it, then its own finalizer.
	m.tick++
	m.deletionEnd[o.uid] = m.tick
	for _, k := range xpReferences(o) {
		if t := m.objects[k]; t != nil {
			m.removeFinalizer(t, xpRefFinalizerPrefix+o.uid)
		}
	}
	m.removeFinalizer(o, xpObjectFinalizer)
}

// usageController is Crossplane's Usage controller reconciling one Usage.
func (m *xpModel) usageController(u *xpObject, step int) {
	ofKey, byKey, hasBy, replay := usageRefs(u)
	of, by := m.objects[ofKey], m.objects[byKey]
	if !u.deleting {
		// A selector that selects nothing fails the reconcile: it is tried
		// again the next time.
		if !m.selectFor(u, "of") || !m.selectFor(u, "by") {
			return
		}
		ofKey, byKey, hasBy, _ = usageRefs(u)
		of, by = m.objects[ofKey], m.objects[byKey]
		if !u.usageSeen {
			u.usageSeen = true
			m.addFinalizer(u, xpUsageFinalizer, xpByUsages)
			u.readyAt = step + m.delay(u.composedAs)
		}
		if of != nil && of.labels[xpInUseLabel] != "true" {
			of.labels[xpInUseLabel] = "true"
			m.changed = true
		}
		if hasBy && by != nil && !slices.Contains(u.ownerUIDs, by.uid) {
			u.ownerUIDs = append(u.ownerUIDs, by.uid)
			m.changed = true
		}
		return
	}
	// A composed Usage being deleted waits for its user to go first; one
	// whose composite label Crossplane removed to garbage-collect it doesn't.
	if hasBy && u.labels[xpCompositeLabel] != "" && by != nil {
		return
	}
	if of != nil {
		if len(m.usagesOf(of)) < 2 && of.labels[xpInUseLabel] != "" {
			delete(of.labels, xpInUseLabel)
			m.changed = true
		}
		if replay && of.annotations[xpDeletionAttemptAnno] != "" {
			m.replays = append(m.replays, of.key)
		}
	}
	m.removeFinalizer(u, xpUsageFinalizer)
}

// garbageCollect is Kubernetes' garbage collector: it deletes every object
// none of whose owners exists any more, and tries again while a webhook
// refuses.
func (m *xpModel) garbageCollect() {
	for _, o := range m.sorted() {
		if m.objects[o.key] != o || o.deleting || len(o.ownerUIDs) == 0 {
			continue
		}
		solid := false
		for _, uid := range o.ownerUIDs {
			if uid == m.xr.uid {
				solid = solid || !m.xr.deleted
			} else if m.byUID[uid] != nil {
				solid = true
			}
		}
		if !solid {
			m.delete(o, "the garbage collector")
		}
	}
}

// teardown deletes the composite and runs the controllers until nothing
// changes: Crossplane runs no function while a composite is being deleted,
// and the garbage collector deletes every composed resource. It returns the
// number of steps that changed something.
func (m *xpModel) teardown(step int) int {
	m.xr.deleted = true
	m.note("the composite is deleted")
	steps := 0
	for quiet := 0; quiet < 3 && steps < 300; steps++ {
		m.changed = false
		step++
		m.settle(step)
		if m.changed || len(m.replays) > 0 {
			quiet = 0
		} else {
			quiet++
		}
	}
	return steps
}
