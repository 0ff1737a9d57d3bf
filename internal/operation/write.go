package operation

// Writing: the partial objects an Operation applies, which Crossplane
// applies each with server-side apply.

import (
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// desired are the partial objects the Operation applies: the finalizers each
// target lacks, and the nudges. A nudged object is being deleted: none is
// repaired too. Its nudges are all exact or none (dueNow).
func desired(g *composed.Graph, s sweep, out outcome, nudged []nudge) map[string]*fnv1.Resource {
	desired := map[string]*fnv1.Resource{}
	for _, r := range out.Repaired {
		desired[r.Target] = &fnv1.Resource{Resource: partial(g.Resource(r.Target), r.Finalizers)}
	}
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
	return desired
}

// partial is the partial object an Operation applies to declare finalizers
// on a target: its identity, its UID and the finalizers it lacks. With the
// UID, the API server refuses the apply if the target was deleted since it
// was read, rather than creating it again with nothing but the finalizers;
// and refuses it if the target was replaced by another of the same name.
func partial(r *composed.Resource, finalizers []string) *structpb.Struct {
	values := make([]*structpb.Value, len(finalizers))
	for i, f := range finalizers {
		values[i] = structpb.NewStringValue(f)
	}
	metadata := map[string]*structpb.Value{
		"name":       structpb.NewStringValue(r.Identity.Name),
		"uid":        structpb.NewStringValue(r.UID()),
		"finalizers": structpb.NewListValue(&structpb.ListValue{Values: values}),
	}
	return partialObject(r.APIVersion, r.Identity.Kind, r.Identity.Namespace, metadata)
}

// nudging is the partial object that sets labels and annotations on an
// object read: its identity, its UID, as partial says why, those, and, when
// exact, the resourceVersion read, so that the API server applies them only
// to that version.
func nudging(o request.Object, labels, annotations map[string]string, exact bool) *structpb.Struct {
	metadata := map[string]*structpb.Value{
		"name": structpb.NewStringValue(o.Name()),
		"uid":  structpb.NewStringValue(o.UID()),
	}
	if rv := o.ResourceVersion(); rv != "" && exact {
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
	return partialObject(o.APIVersion(), o.Kind(), o.Namespace(), metadata)
}

func partialObject(apiVersion, kind, namespace string, metadata map[string]*structpb.Value) *structpb.Struct {
	if namespace != "" {
		metadata["namespace"] = structpb.NewStringValue(namespace)
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"apiVersion": structpb.NewStringValue(apiVersion),
		"kind":       structpb.NewStringValue(kind),
		"metadata":   structpb.NewStructValue(&structpb.Struct{Fields: metadata}),
	}}
}
