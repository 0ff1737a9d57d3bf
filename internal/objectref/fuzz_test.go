package objectref

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzParse parses arbitrary JSON as an Object's spec.references and checks
// it against the provider's rules, written again here: an entry is followed
// through patchesFrom when set, else dependsOn; the target must be an object
// whose apiVersion, kind, namespace and name are strings or absent, with a
// name and at most one slash in apiVersion; apiVersion defaults to the
// Object's group's v1alpha1 and kind to Object. Every valid entry gives
// exactly that target, with its field; every invalid one an error on its
// field; nothing else is returned, and the answer is the same twice.
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 10m ./internal/objectref
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`null`, `{}`, `"x"`, `[]`, `[null]`, `[{}]`, `[{"dependsOn": null}]`, `["x"]`,
		`[{"dependsOn": {"name": "a"}}]`,
		`[{"dependsOn": {"apiVersion": "v1", "kind": "Namespace", "name": "ns"}}, {"patchesFrom": {"apiVersion": "kubernetes.crossplane.io/v1alpha2", "name": "b", "fieldPath": "x"}}]`,
		`[{"dependsOn": {"name": "a"}, "patchesFrom": {"name": "b", "namespace": "n"}}]`,
		`[{"dependsOn": {"name": ""}}, {"dependsOn": {"name": 3}}, {"dependsOn": {"apiVersion": "a/b/c", "name": "x"}}, {"patchesFrom": "x"}]`,
		`[{"dependsOn": {"kind": ["x"], "namespace": true, "name": {"a": 1}}}]`,
	} {
		f.Add(false, []byte(seed))
		f.Add(true, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, namespaced bool, data []byte) {
		// The oracle below reads the references as Go values; Parse reads
		// them as the request's struct holds them.
		var references any
		if err := json.Unmarshal(data, &references); err != nil {
			t.Skip()
		}
		value, err := structpb.NewValue(references)
		if err != nil {
			t.Skip()
		}
		group := ClusterGroup
		if namespaced {
			group = NamespacedGroup
		}
		targets, errs := Parse(group, value)
		targets2, errs2 := Parse(group, value)
		if fmt.Sprint(targets, errs) != fmt.Sprint(targets2, errs2) {
			t.Fatalf("Parse(%s) answers differently twice", data)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.references") || e.Error() == "" {
				t.Fatalf("Parse(%s): error %q on field %q, want one on spec.references", data, e.Error(), e.Field)
			}
		}
		list, isList := references.([]any)
		switch {
		case references == nil:
			if len(targets)+len(errs) > 0 {
				t.Fatalf("Parse(null) = %v, %v; want nothing", targets, errs)
			}
			return
		case !isList:
			if len(targets) > 0 || len(errs) != 1 || errs[0].Field != "spec.references" {
				t.Fatalf("Parse(%s) = %v, %v; want one error on spec.references", data, targets, errs)
			}
			return
		}
		var want []Target
		for i, r := range list {
			path := fmt.Sprintf("spec.references[%d]", i)
			target, ok := expectedTarget(group, i, r)
			if ok {
				want = append(want, target)
				continue
			}
			found := false
			for _, e := range errs {
				found = found || e.Field == path || strings.HasPrefix(e.Field, path+".")
			}
			if !found {
				t.Fatalf("Parse(%s): no error for the invalid %s; errors %v", data, path, errs)
			}
		}
		if len(targets) != len(want) {
			t.Fatalf("Parse(%s) = %+v, want %+v", data, targets, want)
		}
		for i := range want {
			got := targets[i]
			got.APIVersion = "" // As written or defaulted: not part of the identity.
			if got != want[i] {
				t.Fatalf("Parse(%s): target %d is %+v, want %+v", data, i, targets[i], want[i])
			}
		}
	})
}

// expectedTarget is the target of one entry by the provider's rules.
func expectedTarget(group string, index int, r any) (Target, bool) {
	m, ok := r.(map[string]any)
	if !ok {
		return Target{}, false
	}
	field, target := "patchesFrom", m["patchesFrom"]
	if target == nil {
		field, target = "dependsOn", m["dependsOn"]
	}
	t, ok := target.(map[string]any)
	if !ok {
		return Target{}, false
	}
	values := map[string]string{"apiVersion": group + "/v1alpha1", "kind": "Object"}
	for _, k := range []string{"apiVersion", "kind", "namespace", "name"} {
		switch v := t[k].(type) {
		case nil:
		case string:
			if v != "" {
				values[k] = v
			}
		default:
			return Target{}, false
		}
	}
	g, _, _ := strings.Cut(values["apiVersion"], "/")
	switch strings.Count(values["apiVersion"], "/") {
	case 0:
		g = ""
	case 1:
	default:
		return Target{}, false
	}
	if values["name"] == "" {
		return Target{}, false
	}
	return Target{Group: g, Kind: values["kind"], Namespace: values["namespace"], Name: values["name"], Index: index, Via: field}, true
}
