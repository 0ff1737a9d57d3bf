package object

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

// FuzzParseReferences parses arbitrary JSON as an Object's spec.references and checks
// it against the provider's rules as test/lib/oracle reads them (ReadReference):
// an entry is followed through patchesFrom when set, else dependsOn; the
// target must be an object whose apiVersion, kind, namespace and name are
// strings or absent, with a name and at most one slash in apiVersion;
// apiVersion defaults to the Object's group's v1alpha1 and kind to Object.
// Every valid entry gives exactly that target, with its field; every invalid
// one an error on its field; an entry that sets both an error too; nothing
// else is returned, and the answer is the same twice.
//
//	go test -run '^$' -fuzz '^FuzzParseReferences$' -fuzztime 10m ./internal/object
func FuzzParseReferences(f *testing.F) {
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
		targets, errs := ParseReferences(group, value)
		targets2, errs2 := ParseReferences(group, value)
		if fmt.Sprint(targets, errs) != fmt.Sprint(targets2, errs2) {
			t.Fatalf("ParseReferences(%s) answers differently twice", data)
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.references") || e.Error() == "" {
				t.Fatalf("ParseReferences(%s): error %q on field %q, want one on spec.references", data, e.Error(), e.Field)
			}
		}
		_, isList := references.([]any)
		switch {
		case references == nil:
			if len(targets)+len(errs) > 0 {
				t.Fatalf("ParseReferences(null) = %v, %v; want nothing", targets, errs)
			}
			return
		case !isList:
			if len(targets) > 0 || len(errs) != 1 || errs[0].Field != "spec.references" {
				t.Fatalf("ParseReferences(%s) = %v, %v; want one error on spec.references", data, targets, errs)
			}
			return
		}
		valid, problems := oracle.ReadReferences(group, references)
		// Every entry the rules find invalid, or setting both, has an error
		// on its field; no other entry has one.
		flagged := map[string]bool{}
		for _, p := range problems {
			flagged[p.Field] = true
			if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == p.Field || strings.HasPrefix(e.Field, p.Field+".") }) {
				t.Fatalf("ParseReferences(%s): no error for %s (sets both: %t); errors %v", data, p.Field, p.Both, errs)
			}
		}
		for _, e := range errs {
			if entry, _, _ := strings.Cut(e.Field, "]"); !flagged[entry+"]"] {
				t.Fatalf("ParseReferences(%s): error %q on an entry the rules find valid", data, e.Error())
			}
		}
		want := make([]Target, len(valid))
		for i, v := range valid {
			want[i] = Target{Ref: Ref{Group: v.Group, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name}, Index: v.Index, Via: v.Via}
		}
		if len(targets) != len(want) {
			t.Fatalf("ParseReferences(%s) = %+v, want %+v", data, targets, want)
		}
		for i := range want {
			got := targets[i]
			got.APIVersion = "" // As written or defaulted: not part of the identity.
			if got != want[i] {
				t.Fatalf("ParseReferences(%s): target %d is %+v, want %+v", data, i, targets[i], want[i])
			}
		}
	})
}
