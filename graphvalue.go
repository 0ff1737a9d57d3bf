package main

import (
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// graphValue encodes the graph as its JSON form, for the context. It builds
// the struct directly: through json.Marshal and protojson.Unmarshal it took as
// long as the rest of RunFunction. TestGraphValue checks that both agree.
func graphValue(g view.Graph) *structpb.Value {
	// Names are the most of the distinct strings; the rest are kinds and
	// states, a few.
	const others = 32
	a := newValueArena(len(g.Nodes)+others, len(g.Nodes)+len(g.Edges)+1)
	var nodes, edges []*structpb.Value
	if g.Nodes != nil {
		nodes = make([]*structpb.Value, len(g.Nodes))
	}
	for i, n := range g.Nodes {
		nodes[i] = a.object(map[string]*structpb.Value{"name": a.text(n.Name), "kind": a.text(n.Kind), "scope": a.text(n.Scope), "state": a.text(n.State)})
	}
	if g.Edges != nil {
		edges = make([]*structpb.Value, len(g.Edges))
	}
	for i, e := range g.Edges {
		edges[i] = a.object(map[string]*structpb.Value{"from": a.text(e.From), "to": a.text(e.To), "origin": a.text(e.Origin), "protection": a.text(e.Protection), "state": a.text(e.State)})
	}
	return a.object(map[string]*structpb.Value{"nodes": list(nodes), "edges": list(edges)})
}

// list is the value of a list; JSON encodes a nil slice as null.
func list(values []*structpb.Value) *structpb.Value {
	if values == nil {
		return structpb.NewNullValue()
	}
	return structpb.NewListValue(&structpb.ListValue{Values: values})
}

// A valueArena makes the many small values of a large struct from a few
// allocations: one each for the values, the strings and the objects, rather
// than three per string and three per object. At a thousand composed
// resources the graph has thousands of each.
//
// It makes each distinct string once and shares its value: a resource's name
// is in every edge to and from it, and states repeat. The struct is only
// ever encoded, never changed, so sharing is safe.
type valueArena struct {
	texts   []structpb.Value
	strings []structpb.Value_StringValue
	made    map[string]*structpb.Value
	objects []structpb.Value
	structs []structpb.Struct
	fields  []structpb.Value_StructValue
}

// newValueArena returns an arena with room for the numbers of distinct
// strings and objects given; it allocates more as needed.
func newValueArena(texts, objects int) *valueArena {
	return &valueArena{
		texts:   make([]structpb.Value, texts),
		strings: make([]structpb.Value_StringValue, texts),
		made:    make(map[string]*structpb.Value, texts),
		objects: make([]structpb.Value, objects),
		structs: make([]structpb.Struct, objects),
		fields:  make([]structpb.Value_StructValue, objects),
	}
}

// text returns a string value.
func (a *valueArena) text(s string) *structpb.Value {
	if v, ok := a.made[s]; ok {
		return v
	}
	var v *structpb.Value
	if len(a.texts) == 0 {
		v = structpb.NewStringValue(s)
	} else {
		sv := &a.strings[0]
		v = &a.texts[0]
		a.texts, a.strings = a.texts[1:], a.strings[1:]
		sv.StringValue = s
		v.Kind = sv
	}
	a.made[s] = v
	return v
}

// object returns an object value of the fields.
func (a *valueArena) object(fields map[string]*structpb.Value) *structpb.Value {
	if len(a.objects) == 0 {
		return structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	v, s, sv := &a.objects[0], &a.structs[0], &a.fields[0]
	a.objects, a.structs, a.fields = a.objects[1:], a.structs[1:], a.fields[1:]
	s.Fields = fields
	sv.StructValue = s
	v.Kind = sv
	return v
}
