package main

import (
	"maps"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// Crossplane drops a composed resource from the composite's observed state in
// the reconcile that deletes it. While a dependent removed from the
// composition is still being deleted, the finalizer it holds on what it
// references would then name no Object of the composition, and look stale.
//
// So when a reference finalizer names an Object that observed state lacks,
// the function asks Crossplane for the composite's Objects (the response's
// requirements; Crossplane calls it again in the same reconcile with them as
// required resources), and reads those observed state lacks as observed: a
// dependent being deleted is then one, not a stale finalizer. Ordinary
// reconciles, where every such finalizer names an observed Object, ask for
// nothing.

// requiredObjectsPrefix starts the name of each requirement, one per Object
// API group; the group follows.
const requiredObjectsPrefix = "dependencies.fn.crossplane.io/objects-"

// compositeLabel is the label Crossplane puts on every composed resource,
// naming its composite.
const compositeLabel = "crossplane.io/composite"

// requirements returns the composite's Objects, one selector per Object API
// group the composition composes, when a reference finalizer on an observed
// resource names an Object that observed state lacks; else nil. It reads
// nothing the required resources gave, so that it asks the same in the call
// that answers it: Crossplane calls the function again until its
// requirements stop changing.
func requirements(xr *structpb.Struct, c composition) *fnv1.Requirements {
	if !c.missingObject || len(c.objectVersions) == 0 {
		return nil
	}
	selectors := map[string]*fnv1.ResourceSelector{}
	for group, apiVersion := range c.objectVersions {
		sel := &fnv1.ResourceSelector{
			ApiVersion: apiVersion,
			Kind:       objectref.Kind,
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{
				Labels: map[string]string{compositeLabel: text(xr, "metadata", "name")},
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
