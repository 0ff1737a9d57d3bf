package composition

import (
	"maps"
	"slices"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// A lookout collects what the function asks Crossplane for, from the
// request's own observed and desired resources, read one by one: among them,
// the Objects Crossplane is deleting (deleting.go).
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
	seen   map[object.Ref]bool
	wanted []object.Ref
}

func newLookout(observed int) lookout {
	return lookout{uids: make(map[string]bool, observed), objectVersions: map[string]string{}, dependentGroups: map[string]bool{}, seen: make(map[object.Ref]bool, observed)}
}

// labels looks at the labels of a composed resource observed in the
// request: Objects of the group its DependentGroupLabel names depend on it,
// so the cluster serves the group. Only an Object group is asked for.
func (l *lookout) labels(o request.Object) {
	if g := o.Label(protocol.DependentGroupLabel); object.IsObject(g, object.Kind) {
		l.dependentGroups[g] = true
	}
}

// resource looks at a composed resource, observed in the request or not.
func (l *lookout) resource(r *composed.Resource, observed bool) {
	if _, ok := l.objectVersions[r.Identity.Group]; r.IsObject && !ok {
		l.objectVersions[r.Identity.Group] = r.APIVersion
	}
	if !observed || r.Observed == nil {
		return
	}
	l.uids[r.Observed.UID] = true
	l.seen[r.Identity] = true
	for _, f := range r.Observed.Finalizers {
		if uid, ok := object.UIDOf(f); ok {
			l.named = append(l.named, uid)
		}
	}
}

// usage looks at one of the function's own observed Usages: while it
// exists, so must what it is used by, and a dependent Crossplane is deleting
// keeps its Usage until it is gone.
func (l *lookout) usage(u request.Object) {
	if by, ok := protection.UsedBy(u); ok {
		l.wanted = append(l.wanted, by)
	}
}

// written looks at the references an observed Object carries that its
// desired state lacks: those the function wrote for a dependency the input
// declares. The provider releases its finalizer only on what the Object
// references when it is deleted (provider-kubernetes #28), so while the
// dependency exists the reference must stay, even once the composition has
// removed the dependency.
func (l *lookout) written(observed, desired []object.Target) {
	for _, t := range observed {
		if !slices.ContainsFunc(desired, func(d object.Target) bool { return d.ID() == t.ID() }) {
			l.wanted = append(l.wanted, t.Ref)
		}
	}
}

// outside looks at the ProviderConfigs the composed resources use that the
// composite doesn't compose: whose each is, only the cluster can say.
func (l *lookout) outside(configs []object.Ref) {
	l.wanted = append(l.wanted, configs...)
}

// requirements returns what the function asks Crossplane for: the
// composite's Objects by DependentLabel, one selector per Object API group
// the composition composes or a DependentGroupLabel names, and the
// composite's own (the Object of it the composition composed may have been
// the last), when a reference finalizer names an Object that observed state
// lacks; and by name each resource that one of its own Usages is used by, or
// that a reference it wrote depends on, when observed state lacks it, and
// each ProviderConfig outside the composite its resources use. Else nil.
func (l *lookout) requirements(xr request.Object) *fnv1.Requirements {
	selectors := map[string]*fnv1.ResourceSelector{}
	uid, namespace := xr.UID(), xr.Namespace()
	if uid != "" && slices.ContainsFunc(l.named, func(u string) bool { return !l.uids[u] }) {
		versions := maps.Clone(l.objectVersions)
		for g := range l.dependentGroups {
			if versions[g] == "" {
				versions[g], _ = protocol.ObjectVersion(g)
			}
		}
		if g := protocol.OwnObjectGroup(namespace != ""); versions[g] == "" {
			versions[g], _ = protocol.ObjectVersion(g)
		}
		for group, apiVersion := range versions {
			sel := &fnv1.ResourceSelector{
				ApiVersion: apiVersion,
				Kind:       object.Kind,
				Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{protocol.DependentLabel: uid}}},
			}
			if group == object.NamespacedGroup && namespace != "" {
				// A namespaced composite composes in its own namespace; a
				// cluster-scoped one may compose in any, and lists them all.
				sel.Namespace = &namespace
			}
			selectors[protocol.CompositeObjects(group)] = sel
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
		selectors[protocol.Named(t.APIVersion, t.Kind, t.Namespace, t.Name)] = sel
	}
	if len(selectors) == 0 {
		return nil
	}
	return &fnv1.Requirements{Resources: selectors}
}
