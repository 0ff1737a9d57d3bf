package main

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// Crossplane drops a composed resource from the composite's observed state in
// the reconcile that deletes it. While a dependent removed from the
// composition is still being deleted, the finalizer it holds on what it
// references would then name no Object of the composition, and look stale;
// and the Usage that protects what it references would no longer be emitted,
// so Crossplane would delete it and replay the deletion it held back while
// the dependent still exists.
//
// So the function labels every dependent Object with its composite's UID
// (Crossplane strips its own crossplane.io/composite label from a resource it
// deletes for leaving the composition, not this one), and when a reference
// finalizer, or one of its own Usages, names an Object that observed state
// lacks, it asks Crossplane for the Objects of that label (the response's
// requirements; Crossplane calls it again in the same reconcile with them as
// required resources) and reads those observed state lacks as observed. A
// dependent being deleted is then one: its finalizer stays declared while the
// target carries it, its Usage stays, and no finalizer of it is stale.
// Ordinary reconciles, where every such finalizer and Usage names an observed
// Object, ask for nothing.

// DependentLabel marks the Objects that depend on others with the UID of
// their composite.
const DependentLabel = "dependencies.fn.crossplane.io/composite-uid"

// DependentGroupLabel marks a resource that Objects of the composition
// depend on with their API group, when it is not the one of the composite's
// scope. The function asks for the Objects of the groups the composition
// composes and always of the composite's own, never of a group whose CRD may
// not be installed: provider-kubernetes v0.x serves only the cluster-scoped
// group, and Crossplane fails a reconcile that asks for a kind the cluster
// doesn't serve. So when a cluster-scoped composite's last namespaced Object
// leaves the composition, this label, on what it depends on, is what says
// to ask for its group while it is deleted. The label stays while an Object
// of the group depends on the resource, which the function sees from the
// Objects it asks for: it never changes while one is deleted.
const DependentGroupLabel = "dependencies.fn.crossplane.io/dependent-group"

// ProtectionLabel, set to "Usages", marks each Object whose edges to other
// composed resources the Composition step protects with Usages instead of
// reference finalizers (protection: Usages), so that an Operation's sweep
// doesn't put back the finalizers it left out.
const ProtectionLabel = "dependencies.fn.crossplane.io/protection"

// requiredPrefix starts the name of each requirement.
const requiredPrefix = "dependencies.fn.crossplane.io/"

// A lookout collects what the function asks Crossplane for, from the
// request's own observed and desired resources, read one by one.
type lookout struct {
	// uids are the UIDs of the observed resources, and named those the
	// reference finalizers on them name.
	uids  map[string]bool
	named []string
	// objectVersions holds an apiVersion of each Object API group the
	// composition composes, the first in name order: one the cluster serves,
	// and the same on every call. dependentGroups are the Object groups the
	// observed resources' DependentGroupLabel names.
	objectVersions  map[string]string
	dependentGroups map[string]bool
	// seen are the identities of the observed resources, and wanted those
	// of the resources that the function's own Usages are used by and of
	// the dependencies of the references it wrote.
	seen   map[objectref.Ref]bool
	wanted []objectref.Target
}

func newLookout(observed int) lookout {
	return lookout{uids: make(map[string]bool, observed), objectVersions: map[string]string{}, dependentGroups: map[string]bool{}, seen: make(map[objectref.Ref]bool, observed)}
}

// labels looks at the labels of a composed resource observed in the
// request: Objects of the group its DependentGroupLabel names depend on it,
// so the cluster serves the group. Only an Object group is asked for.
func (l *lookout) labels(labels *structpb.Struct) {
	if g := text(labels, DependentGroupLabel); objectref.IsObject(g, objectref.Kind) {
		l.dependentGroups[g] = true
	}
}

// resource looks at a composed resource, observed in the request or not.
func (l *lookout) resource(r *graph.Resource, observed bool) {
	if _, ok := l.objectVersions[r.Identity.Group]; r.IsObject && !ok {
		l.objectVersions[r.Identity.Group] = r.APIVersion
	}
	if !observed || r.Observed == nil {
		return
	}
	l.uids[r.Observed.UID] = true
	l.seen[r.Identity] = true
	for _, f := range r.Observed.Finalizers {
		if uid, ok := objectref.UIDOf(f); ok {
			l.named = append(l.named, uid)
		}
	}
}

// usage looks at one of the function's own observed Usages: while it
// exists, so must what it is used by, and a dependent Crossplane is deleting
// keeps its Usage until it is gone.
func (l *lookout) usage(u *structpb.Struct) {
	by := value(u, "spec", "by").GetStructValue()
	apiVersion := text(by, "apiVersion")
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return
	}
	l.wanted = append(l.wanted, objectref.Target{Ref: objectref.Ref{
		APIVersion: apiVersion, Group: gv.Group, Kind: text(by, "kind"),
		Namespace: text(u, "metadata", "namespace"), Name: text(by, "resourceRef", "name"),
	}})
}

// written looks at the references an observed Object carries that its
// desired state lacks: those the function wrote for a dependency the input
// declares. The provider releases its finalizer only on what the Object
// references when it is deleted (provider-kubernetes #28), so while the
// dependency exists the reference must stay, even once the composition has
// removed the dependency.
func (l *lookout) written(observed, desired []objectref.Target) {
	for _, t := range observed {
		if !slices.ContainsFunc(desired, func(d objectref.Target) bool { return d.ID() == t.ID() }) {
			l.wanted = append(l.wanted, t)
		}
	}
}

// servedObjectVersions holds, for each Object API group, an apiVersion every
// provider-kubernetes release that serves the group serves: asked for when
// the composition composes no Object of the group any more.
var servedObjectVersions = map[string]string{
	objectref.NamespacedGroup: objectref.NamespacedGroup + "/v1alpha1",
	objectref.ClusterGroup:    objectref.ClusterGroup + "/v1alpha2",
}

// ownObjectGroup is the Object group of the composite's scope, always asked
// for: the Object of it the composition composed may have been the last. A
// namespaced composite composes only namespaced Objects; a cluster-scoped
// one, usually cluster-scoped ones, whose group every provider-kubernetes
// release serves.
func ownObjectGroup(namespaced bool) string {
	if namespaced {
		return objectref.NamespacedGroup
	}
	return objectref.ClusterGroup
}

// requirements returns what the function asks Crossplane for: the
// composite's Objects by the label the function gives them, one selector per
// Object API group the composition composes or a DependentGroupLabel names,
// and the composite's own, when a reference finalizer names an Object that observed
// state lacks; and by name each resource that one of its own Usages is used
// by, or that a reference it wrote depends on, when observed state lacks it.
// Else nil.
func (l *lookout) requirements(xr *structpb.Struct) *fnv1.Requirements {
	selectors := map[string]*fnv1.ResourceSelector{}
	uid, namespace := text(xr, "metadata", "uid"), text(xr, "metadata", "namespace")
	if uid != "" && slices.ContainsFunc(l.named, func(u string) bool { return !l.uids[u] }) {
		versions := maps.Clone(l.objectVersions)
		for g := range l.dependentGroups {
			if versions[g] == "" {
				versions[g] = servedObjectVersions[g]
			}
		}
		if g := ownObjectGroup(namespace != ""); versions[g] == "" {
			versions[g] = servedObjectVersions[g]
		}
		for group, apiVersion := range versions {
			sel := &fnv1.ResourceSelector{
				ApiVersion: apiVersion,
				Kind:       objectref.Kind,
				Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{DependentLabel: uid}}},
			}
			if group == objectref.NamespacedGroup && namespace != "" {
				// A namespaced composite composes in its own namespace; a
				// cluster-scoped one may compose in any, and lists them all.
				sel.Namespace = &namespace
			}
			selectors[requiredPrefix+"objects-"+group] = sel
		}
	}
	for _, t := range l.wanted {
		if l.seen[t.ID()] || t.Name == "" {
			continue
		}
		sel := &fnv1.ResourceSelector{ApiVersion: t.APIVersion, Kind: t.Kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: t.Name}}
		if t.Namespace != "" {
			sel.Namespace = &t.Namespace
		}
		selectors[requiredPrefix+strings.Join([]string{t.APIVersion, t.Kind, t.Namespace, t.Name}, "/")] = sel
	}
	if len(selectors) == 0 {
		return nil
	}
	return &fnv1.Requirements{Resources: selectors}
}

// withGoingObjects returns the request's observed composed resources, with
// the required resources that observed state lacks added under their
// composition resource names: those Crossplane is deleting.
//
// Only a resource the composite controls is one of them. What is fetched by
// name (what a Usage is used by, the dependency of a written reference) may
// now be another composite's, under a composition resource name this one
// uses too. The controller reference says whose it is: Crossplane sets it on
// every resource it composes and keeps it while deleting one, and it is what
// Crossplane itself checks before it deletes one; the function's label is on
// dependent Objects only, and Crossplane's crossplane.io/composite label is
// stripped from what it deletes and names the composite by name, not UID.
func withGoingObjects(req *fnv1.RunFunctionRequest) map[string]*fnv1.Resource {
	observed := req.GetObserved().GetResources()
	xrUID := text(req.GetObserved().GetComposite().GetResource(), "metadata", "uid")
	var going map[string]*fnv1.Resource
	for key, required := range req.GetRequiredResources() {
		if !strings.HasPrefix(key, requiredPrefix) {
			continue
		}
		for _, item := range required.GetItems() {
			name := text(value(item.GetResource(), "metadata", "annotations").GetStructValue(), compositionResourceName)
			if _, ok := observed[name]; ok || name == "" || xrUID == "" || controllerUID(item.GetResource()) != xrUID {
				continue
			}
			if going == nil {
				going = maps.Clone(observed)
				if going == nil {
					going = map[string]*fnv1.Resource{}
				}
			}
			going[name] = item
		}
	}
	if going == nil {
		return observed
	}
	return going
}

// controllerUID returns the UID of the resource's controller, or "".
func controllerUID(s *structpb.Struct) string {
	for _, ref := range value(s, "metadata", "ownerReferences").GetListValue().GetValues() {
		if r := ref.GetStructValue(); value(r, "controller").GetBoolValue() {
			return text(r, "uid")
		}
	}
	return ""
}

// labelDependents labels every desired Object that depends on another, held
// back or not, with the composite's UID, and every desired resource an
// Object of another group than the composite's own depends on with
// DependentGroupLabel. A resource it can't label is an error of its own: the
// others are labelled all the same. With usages, every Object with an edge to
// another composed resource gets ProtectionLabel too.
func labelDependents(desired *fnv1.State, g *graph.Graph, xrUID string, xrNamespaced, usages bool) []error {
	if xrUID == "" {
		return nil
	}
	labels := map[string]map[string]string{}
	label := func(name, key, value string) {
		if labels[name] == nil {
			labels[name] = map[string]string{}
		}
		labels[name][key] = value
	}
	for _, e := range g.Edges {
		label(e.Dependent, DependentLabel, xrUID)
		d := g.Resource(e.Dependent)
		if d.IsObject && d.Identity.Group != ownObjectGroup(xrNamespaced) {
			label(e.Target, DependentGroupLabel, d.Identity.Group)
		}
		if d.IsObject && usages {
			label(e.Dependent, ProtectionLabel, string(v1beta1.ProtectionUsages))
		}
	}
	for _, e := range g.External {
		label(e.Dependent, DependentLabel, xrUID)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		r := desired.GetResources()[name]
		if r == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(text(r.GetResource(), "apiVersion"))
		object := err == nil && objectref.IsObject(gv.Group, text(r.GetResource(), "kind"))
		for _, key := range slices.Sorted(maps.Keys(labels[name])) {
			v := labels[name][key]
			if (key == DependentLabel && !object) || text(value(r.GetResource(), "metadata", "labels").GetStructValue(), key) == v {
				continue
			}
			if err := setField(r, "metadata", "labels", key, structpb.NewStringValue(v)); err != nil {
				errs = append(errs, errors.Wrapf(err, "cannot label composed resource %q", name))
				break
			}
		}
	}
	return errs
}
