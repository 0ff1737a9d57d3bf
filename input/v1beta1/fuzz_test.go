package v1beta1

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecode decodes arbitrary bytes as the step's input and checks what
// must hold for any of them: no panic; the same answer twice; an input that
// decodes has only supported values, every dependency a resource and at least
// one dependsOn, all patterns that compile anchored, and encodes and decodes to itself; an
// object with a field the Input doesn't have never decodes; a field it sets
// is the value it gets.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 10m ./input/v1beta1
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"Enforce"`,
		`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report", "onCycle": "Warning"}`,
		`{"mode": "Enforce", "onCycle": "Fatal", "references": "Ignore", "usages": "All", "usageAPI": "apiextensions.crossplane.io/v1beta1", "creation": "WaitForReady"}`,
		`{"dependencies": [{"resource": "deployment-.*", "dependsOn": ["namespace", "config"]}], "usages": "External"}`,
		`{"dependencies": [{"resource": "(", "dependsOn": []}]}`,
		`{"metadata": {"name": "x", "labels": {"a": "b"}}, "mode": "Fix"}`,
		`{"dependencies": [{"resource": "\\Qshared", "dependsOn": ["a)|(b"]}]}`, `{"dependencies": [{"resource": 1, "dependsOn": "x"}]}`,
		`{"infer": ["ProviderConfigs", "Credentials", "ManagedReferences"]}`, `{"infer": ["Secrets", 1]}`, `{"infer": "Credentials"}`,
		`{"modus": "Report"}`, `{"mode": 1}`, `{"mode": "Report", "mode": "Enforce"}`, `{"Mode": "Report"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Decode(data)
		again, err2 := Decode(data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(in, again) {
			t.Fatalf("Decode(%q) answers differently twice: %v, %v", data, err, err2)
		}
		var fields map[string]any
		object := json.Unmarshal(data, &fields) == nil && fields != nil
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Decode(%q): an empty error", data)
			}
			return
		}
		if object {
			for k, v := range fields {
				if !slices.Contains([]string{"apiVersion", "kind", "metadata", "mode", "onCycle", "dependencies", "references", "usages", "usageAPI", "creation", "protection", "graph", "infer"}, k) {
					t.Fatalf("Decode(%q) accepts the unknown field %q", data, k)
				}
				if s, ok := v.(string); ok && s != "" {
					got := map[string]string{"mode": string(in.Mode), "onCycle": string(in.OnCycle), "references": string(in.References),
						"usages": string(in.Usages), "usageAPI": string(in.UsageAPI), "creation": string(in.Creation), "apiVersion": in.APIVersion, "kind": in.Kind}
					if g, known := got[k]; known && g != s {
						t.Fatalf("Decode(%q): %s is %q, want %q", data, k, g, s)
					}
				}
			}
		}
		supported := []struct {
			field, value string
			values       []string
		}{
			{"mode", string(in.Mode), []string{"Enforce", "Report"}},
			{"onCycle", string(in.OnCycle), []string{"Fatal", "Warning"}},
			{"references", string(in.References), []string{"Infer", "Ignore"}},
			{"usages", string(in.Usages), []string{"Disabled", "External", "All", "Every"}},
			{"usageAPI", string(in.UsageAPI), []string{"protection.crossplane.io/v1beta1", "apiextensions.crossplane.io/v1beta1"}},
			{"creation", string(in.Creation), []string{"Immediate", "WaitForReady"}},
		}
		for _, s := range supported {
			if !slices.Contains(s.values, s.value) {
				t.Fatalf("Decode(%q): %s is %q, which is not one of %q", data, s.field, s.value, s.values)
			}
		}
		for i, kind := range in.Infer {
			if !slices.Contains([]Inference{InferProviderConfigs, InferCredentials, InferManagedReferences}, kind) {
				t.Fatalf("Decode(%q): infer[%d] is %q, which is no kind of edge", data, i, kind)
			}
		}
		for i, d := range in.Dependencies {
			if len(d.DependsOn) == 0 {
				t.Fatalf("Decode(%q): dependencies[%d] depends on nothing", data, i)
			}
			for _, p := range append([]string{d.Resource}, d.DependsOn...) {
				if _, err := Pattern(p); p == "" || err != nil {
					t.Fatalf("Decode(%q): dependencies[%d] has the pattern %q: %v", data, i, p, err)
				}
			}
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("cannot encode %#v: %v", in, err)
		}
		round, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%q) encodes to %s, which doesn't decode: %v", data, b, err)
		}
		if b2, _ := json.Marshal(round); string(b2) != string(b) {
			t.Fatalf("Decode(%q) encodes to %s, which decodes and encodes to %s", data, b, b2)
		}
	})
}
