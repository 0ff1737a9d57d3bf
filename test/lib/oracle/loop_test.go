package oracle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane-contrib/function-dependencies/test/lib/oracle"
)

func TestInputWithDefaults(t *testing.T) {
	cases := map[string]struct {
		in, want oracle.Input
	}{
		"AStepWithoutInputGetsEveryDefault": {
			want: oracle.Input{Mode: "Enforce", OnCycle: "Fatal", References: "Infer", Protection: "Finalizers", UsageAPI: oracle.ProtectionAPI, Creation: "Immediate", Graph: "None"},
		},
		"WhatTheInputSaysIsKept": {
			in: oracle.Input{Mode: "Report", OnCycle: "Warning", References: "Ignore", Protection: "Usages", UsageAPI: oracle.ApiextensionsAPI, Creation: "WaitForReady", Graph: "Context",
				Dependencies: []oracle.Dependency{{Resource: "app", DependsOn: []string{"db"}}}},
			want: oracle.Input{Mode: "Report", OnCycle: "Warning", References: "Ignore", Protection: "Usages", UsageAPI: oracle.ApiextensionsAPI, Creation: "WaitForReady", Graph: "Context",
				Dependencies: []oracle.Dependency{{Resource: "app", DependsOn: []string{"db"}}}},
		},
		"OnlyTheEmptyFieldsAreDefaulted": {
			in:   oracle.Input{Protection: "Both"},
			want: oracle.Input{Mode: "Enforce", OnCycle: "Fatal", References: "Infer", Protection: "Both", UsageAPI: oracle.ProtectionAPI, Creation: "Immediate", Graph: "None"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.WithDefaults()); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestUsageEmitted(t *testing.T) {
	observed := func(apiVersion, kind, namespace, name, uid string) map[string]any {
		md := map[string]any{"name": name, "uid": uid}
		if namespace != "" {
			md["namespace"] = namespace
		}
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	}
	desired := func(apiVersion, kind, namespace, name string) map[string]any {
		md := map[string]any{"name": name}
		if namespace != "" {
			md["namespace"] = namespace
		}
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	}
	ref := func(apiVersion, kind, name string, namespace ...string) map[string]any {
		rr := map[string]any{"name": name}
		if len(namespace) > 0 {
			rr["namespace"] = namespace[0]
		}
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "resourceRef": rr}
	}
	labels := map[string]any{oracle.UsageLabel: "true"}
	cases := map[string]struct {
		xr                map[string]any
		observed, desired map[string]map[string]any
		usageAPI          string
		want              []map[string]any
	}{
		"TwoNamespacedEndsGetAUsageInTheDependentsNamespaceLabelledAsTheFunctions": {
			xr:       map[string]any{"metadata": map[string]any{"namespace": "team", "uid": "xr"}},
			observed: map[string]map[string]any{"app": observed("apps/v1", "Deployment", "team", "app", "1"), "db": observed("v1", "ConfigMap", "team", "db", "2")},
			desired:  map[string]map[string]any{"app": desired("apps/v1", "Deployment", "", "app"), "db": desired("v1", "ConfigMap", "", "db")},
			want: []map[string]any{{
				"apiVersion": oracle.ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"namespace": "team", "labels": labels},
				"spec": map[string]any{"of": ref("v1", "ConfigMap", "db"), "by": ref("apps/v1", "Deployment", "app"),
					"reason": "app depends on db (function-dependencies)", "replayDeletion": true},
			}},
		},
		"ADependencyInAnotherNamespaceIsNamedWithItsNamespace": {
			xr:       map[string]any{"metadata": map[string]any{"uid": "xr"}},
			observed: map[string]map[string]any{"app": observed("apps/v1", "Deployment", "a", "app", "1"), "db": observed("v1", "ConfigMap", "b", "db", "2")},
			desired:  map[string]map[string]any{"app": desired("apps/v1", "Deployment", "a", "app"), "db": desired("v1", "ConfigMap", "b", "db")},
			want: []map[string]any{{
				"apiVersion": oracle.ProtectionAPI, "kind": "Usage", "metadata": map[string]any{"namespace": "a", "labels": labels},
				"spec": map[string]any{"of": ref("v1", "ConfigMap", "db", "b"), "by": ref("apps/v1", "Deployment", "app"),
					"reason": "app depends on db (function-dependencies)", "replayDeletion": true},
			}},
		},
		"TwoClusterScopedEndsGetAClusterUsage": {
			xr:       map[string]any{"metadata": map[string]any{"uid": "xr"}},
			observed: map[string]map[string]any{"app": observed("s3.example.org/v1beta1", "Bucket", "", "app", "1"), "db": observed("v1", "Namespace", "", "db", "2")},
			desired:  map[string]map[string]any{"app": desired("s3.example.org/v1beta1", "Bucket", "", "app"), "db": desired("v1", "Namespace", "", "db")},
			want: []map[string]any{{
				"apiVersion": oracle.ProtectionAPI, "kind": "ClusterUsage", "metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"of": ref("v1", "Namespace", "db"), "by": ref("s3.example.org/v1beta1", "Bucket", "app"),
					"reason": "app depends on db (function-dependencies)", "replayDeletion": true},
			}},
		},
		"CrossplaneV1sUsageIsClusterScoped": {
			xr:       map[string]any{"metadata": map[string]any{"uid": "xr"}},
			usageAPI: oracle.ApiextensionsAPI,
			observed: map[string]map[string]any{"app": observed("s3.example.org/v1beta1", "Bucket", "", "app", "1"), "db": observed("v1", "Namespace", "", "db", "2")},
			desired:  map[string]map[string]any{"app": desired("s3.example.org/v1beta1", "Bucket", "", "app"), "db": desired("v1", "Namespace", "", "db")},
			want: []map[string]any{{
				"apiVersion": oracle.ApiextensionsAPI, "kind": "Usage", "metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"of": ref("v1", "Namespace", "db"), "by": ref("s3.example.org/v1beta1", "Bucket", "app"),
					"reason": "app depends on db (function-dependencies)", "replayDeletion": true},
			}},
		},
		"NoneWhileAnEndDoesNotExist": {
			xr:       map[string]any{"metadata": map[string]any{"namespace": "team", "uid": "xr"}},
			observed: map[string]map[string]any{"db": observed("v1", "ConfigMap", "team", "db", "2")},
			desired:  map[string]map[string]any{"app": desired("apps/v1", "Deployment", "", "app"), "db": desired("v1", "ConfigMap", "", "db")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := oracle.Expect(oracle.State{
				XR: tc.xr, Observed: tc.observed, Desired: tc.desired,
				Input: oracle.Input{Protection: "Usages", UsageAPI: tc.usageAPI, Dependencies: []oracle.Dependency{{Resource: "app", DependsOn: []string{"db"}}}},
			})
			var got []map[string]any
			for _, u := range p.Usages {
				m, ready := u.Emitted()
				if !ready {
					t.Errorf("the Usage of edge %s → %s is not ready: True", u.Dependent, u.Dependency)
				}
				got = append(got, m)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			// Emitted leaves the Manifest as it was.
			for _, u := range p.Usages {
				if _, ok := u.Manifest()["metadata"].(map[string]any)["labels"]; ok {
					t.Errorf("Emitted changed the Manifest of edge %s → %s", u.Dependent, u.Dependency)
				}
			}
		})
	}
}
