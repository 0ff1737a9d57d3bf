package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// TestGraphValue checks that graphValue, which builds the graph's struct
// directly, gives what encoding the graph as JSON gives. Every field of the
// nodes and edges is set, by reflection, so that a field added to the view but
// not to graphValue fails here.
func TestGraphValue(t *testing.T) {
	filled := func(v any) {
		rv := reflect.ValueOf(v).Elem()
		for i := range rv.NumField() {
			if rv.Field(i).Kind() != reflect.String {
				t.Fatalf("%s.%s is a %s: graphValue writes only strings", rv.Type(), rv.Type().Field(i).Name, rv.Field(i).Kind())
			}
			rv.Field(i).SetString(fmt.Sprintf("%s-%d", rv.Type().Field(i).Name, i))
		}
	}
	var n view.Node
	var e view.Edge
	filled(&n)
	filled(&e)
	cases := map[string]view.Graph{
		"Zero":  {},
		"Empty": {Nodes: []view.Node{}, Edges: []view.Edge{}},
		"Full":  {Nodes: []view.Node{n, n}, Edges: []view.Edge{e, e, e}},
	}
	for name, g := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			want := &structpb.Value{}
			if err := protojson.Unmarshal(b, want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, graphValue(g), protocmp.Transform()); diff != "" {
				t.Errorf("graphValue(...): -JSON form, +got:\n%s", diff)
			}
		})
	}
}
