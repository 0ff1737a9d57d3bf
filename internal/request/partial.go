package request

import (
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
)

// Partial is the partial object an Operation applies to declare finalizers
// on a target: its identity, its UID and the finalizers it lacks. With the
// UID, the API server refuses the apply if the target was deleted since it
// was read, rather than creating it again with nothing but the finalizers;
// and refuses it if the target was replaced by another of the same name.
func Partial(r *graph.Resource, finalizers []string) *structpb.Struct {
	metadata := map[string]*structpb.Value{
		"name":       structpb.NewStringValue(r.Identity.Name),
		"uid":        structpb.NewStringValue(r.UID()),
		"finalizers": stringList(finalizers),
	}
	return object(r.APIVersion, r.Identity.Kind, r.Identity.Namespace, metadata)
}

// Nudging is the partial object that sets labels and annotations on an
// object read: its identity, its UID, as Partial says why, those, and, when
// exact, the resourceVersion read, so that the API server applies them only
// to that version.
func Nudging(o Object, labels, annotations map[string]string, exact bool) *structpb.Struct {
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
	return object(o.APIVersion(), o.Kind(), o.Namespace(), metadata)
}

func object(apiVersion, kind, namespace string, metadata map[string]*structpb.Value) *structpb.Struct {
	if namespace != "" {
		metadata["namespace"] = structpb.NewStringValue(namespace)
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"apiVersion": structpb.NewStringValue(apiVersion),
		"kind":       structpb.NewStringValue(kind),
		"metadata":   structpb.NewStructValue(&structpb.Struct{Fields: metadata}),
	}}
}
