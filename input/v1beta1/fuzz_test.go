package v1beta1

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecode decodes arbitrary bytes as a Composition step's input and
// checks what must hold for any of them: no panic; the same answer twice; an
// input that decodes has only the values the fields declare, every dependency
// a resource and at least one dependsOn, all patterns that compile anchored,
// and encodes and decodes to itself; an object with a field the step doesn't
// read never decodes; a field it sets is the value it gets.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 10m ./input/v1beta1
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"Enforce"`,
		`{"apiVersion": "dependencies.fn.crossplane.io/v1beta1", "kind": "Input", "mode": "Report", "onCycle": "Warning"}`,
		`{"mode": "Enforce", "onCycle": "Fatal", "references": "Ignore", "usageAPI": "apiextensions.crossplane.io/v1beta1", "creation": "WaitForReady"}`,
		`{"dependencies": [{"resource": "deployment-.*", "dependsOn": ["namespace", "config"]}]}`,
		`{"dependencies": [{"resource": "(", "dependsOn": []}]}`,
		`{"metadata": {"name": "x", "labels": {"a": "b"}}, "mode": "Fix"}`,
		`{"dependencies": [{"resource": "\\Qshared", "dependsOn": ["a)|(b"]}]}`, `{"dependencies": [{"resource": 1, "dependsOn": "x"}]}`,
		`{"infer": ["ProviderConfigs", "Credentials", "ManagedReferences"]}`, `{"infer": ["Secrets", 1]}`, `{"infer": "Credentials"}`,
		`{"protection": "Both", "graph": "Context"}`, `{"objectSelector": {"matchLabels": {"a": "b"}}}`,
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
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("cannot encode %#v: %v", in, err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("cannot decode %s: %v", b, err)
		}
		if object {
			for k, v := range fields {
				if !slices.ContainsFunc(inputFields, func(f inputField) bool { return f.name == k && slices.Contains(f.readBy, StepComposition) }) {
					t.Fatalf("Decode(%q) accepts the field %q, which a Composition step doesn't read", data, k)
				}
				if s, ok := v.(string); ok && s != "" && got[k] != s {
					t.Fatalf("Decode(%q): %s is %v, want %q", data, k, got[k], s)
				}
			}
		}
		for _, f := range inputFields {
			if f.values == nil {
				continue
			}
			items, isList := got[f.name].([]any)
			if !isList {
				items = []any{got[f.name]}
			}
			for _, item := range items {
				if s, _ := item.(string); !slices.Contains(f.values, s) && (item != nil || f.def != "") {
					t.Fatalf("Decode(%q): %s has %v, which is not one of %q", data, f.name, item, f.values)
				}
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
		round, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%q) encodes to %s, which doesn't decode: %v", data, b, err)
		}
		if b2, _ := json.Marshal(round); string(b2) != string(b) {
			t.Fatalf("Decode(%q) encodes to %s, which decodes and encodes to %s", data, b, b2)
		}
	})
}
