package main

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
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

// requiredObjectsPrefix starts the name of each requirement, one per Object
// API group; the group follows.
const requiredObjectsPrefix = "dependencies.fn.crossplane.io/objects-"

// requirements returns the composite's Objects, one selector per Object API
// group the composition composes, when a reference finalizer on an observed
// resource names an Object that observed state lacks; else nil. It reads
// nothing the required resources gave, so that it asks the same in the call
// that answers it: Crossplane calls the function again until its
// requirements stop changing.
func requirements(xr *structpb.Struct, c composition) *fnv1.Requirements {
	uid := text(xr, "metadata", "uid")
	if !c.missingObject || len(c.objectVersions) == 0 || uid == "" {
		return nil
	}
	selectors := map[string]*fnv1.ResourceSelector{}
	for group, apiVersion := range c.objectVersions {
		sel := &fnv1.ResourceSelector{
			ApiVersion: apiVersion,
			Kind:       objectref.Kind,
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{
				Labels: map[string]string{DependentLabel: uid},
			}},
		}
		if group == objectref.NamespacedGroup {
			// A namespaced composite composes in its own namespace; a
			// cluster-scoped one may compose in any, and lists them all.
			if ns := text(xr, "metadata", "namespace"); ns != "" {
				sel.Namespace = &ns
			}
		}
		selectors[requiredObjectsPrefix+group] = sel
	}
	return &fnv1.Requirements{Resources: selectors}
}

// withGoingObjects returns the request's observed composed resources, with
// the required Objects of the composite that observed state lacks added
// under their composition resource names: those Crossplane is deleting.
func withGoingObjects(req *fnv1.RunFunctionRequest) map[string]*fnv1.Resource {
	observed := req.GetObserved().GetResources()
	var going map[string]*fnv1.Resource
	for key, required := range req.GetRequiredResources() {
		if !strings.HasPrefix(key, requiredObjectsPrefix) {
			continue
		}
		for _, item := range required.GetItems() {
			name := text(value(item.GetResource(), "metadata", "annotations").GetStructValue(), compositionResourceName)
			if _, ok := observed[name]; ok || name == "" {
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

// labelDependents labels every desired Object that depends on another, held
// back or not, with the composite's UID.
func labelDependents(desired *fnv1.State, plan protection.Plan, xrUID string) error {
	if xrUID == "" {
		return nil
	}
	dependents := map[string]bool{}
	for _, e := range plan.Edges {
		dependents[e.Dependent] = true
	}
	for _, e := range plan.External {
		dependents[e.Dependent] = true
	}
	for _, name := range slices.Sorted(maps.Keys(dependents)) {
		r := desired.GetResources()[name]
		gv, err := schema.ParseGroupVersion(text(r.GetResource(), "apiVersion"))
		if r == nil || err != nil || !objectref.IsObject(gv.Group, text(r.GetResource(), "kind")) ||
			text(value(r.GetResource(), "metadata", "labels").GetStructValue(), DependentLabel) == xrUID {
			continue
		}
		if err := setField(r, "metadata", "labels", DependentLabel, structpb.NewStringValue(xrUID)); err != nil {
			return errors.Wrapf(err, "cannot label composed resource %q", name)
		}
	}
	return nil
}
