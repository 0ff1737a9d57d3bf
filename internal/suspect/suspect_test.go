package suspect

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// referencing makes an Object whose spec.references name the refs.
func referencing(name string, refs ...object.Ref) composed.Resource {
	targets := make([]object.Target, len(refs))
	for i, r := range refs {
		targets[i] = object.Target{Ref: r}
	}
	return composedtest.With(composedtest.Object(name), composedtest.Referencing(targets...))
}

func clusterObject(name string) object.Ref {
	return object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: object.Kind, Name: name}
}

func configMap(namespace, name string) object.Ref {
	return object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: name}
}

func TestSuspectReferencesAreThoseThatCantBeWhatWasMeant(t *testing.T) {
	cases := map[string]struct {
		reason    string
		resources []composed.Resource
		want      []string
	}{
		"ATypoInAName": {
			reason:    "A reference a letter off a composed resource names it as the one likely meant.",
			resources: []composed.Resource{composedtest.Object("shop-config"), referencing("deploy-api", clusterObject("shop-confg"))},
			want:      []string{`deploy-api spec.references[0].dependsOn Object.kubernetes.crossplane.io shop-confg: no composed resource is that object; did you mean composed resource "shop-config", Object.kubernetes.crossplane.io shop-config?`},
		},
		"ATypoInTheGroup": {
			reason: "A reference whose API group is a letter off names the composed resource of its name.",
			resources: []composed.Resource{composedtest.Object("shop-config"), referencing("deploy-api", object.Ref{
				APIVersion: "kubernetes.crosplane.io/v1alpha2", Group: "kubernetes.crosplane.io", Kind: object.Kind, Name: "shop-config",
			})},
			want: []string{`deploy-api spec.references[0].dependsOn Object.kubernetes.crosplane.io shop-config: no composed resource is that object; did you mean composed resource "shop-config", Object.kubernetes.crossplane.io shop-config?`},
		},
		"ANamespacedKindWithoutANamespace": {
			reason:    "A reference to a namespaced kind without a namespace can't resolve: the composed resource of its name is named.",
			resources: []composed.Resource{composedtest.ConfigMap("settings"), referencing("app", configMap("", "settings"))},
			want:      []string{`app spec.references[0].dependsOn ConfigMap settings: ConfigMap is namespaced, and provider-kubernetes defaults no namespace: set namespace (composed resource "settings" is ConfigMap team/settings)`},
		},
		"ANamespacedKindNotComposed": {
			reason:    "A Kubernetes kind known to be namespaced is suspect without a namespace even when nothing of its kind is composed, as is a Crossplane v2 namespaced managed resource.",
			resources: []composed.Resource{referencing("app", object.Ref{Kind: "Secret", Name: "token"}, object.Ref{Group: "s3.aws.m.upbound.io", Kind: "Bucket", Name: "b"})},
			want: []string{
				"app spec.references[0].dependsOn Secret token: Secret is namespaced, and provider-kubernetes defaults no namespace: set namespace",
				"app spec.references[1].dependsOn Bucket.s3.aws.m.upbound.io b: Bucket is namespaced, and provider-kubernetes defaults no namespace: set namespace",
			},
		},
		"WhatAnObjectManages": {
			reason: "A reference to the object a composed Object creates, rather than to the Object, names the Object to reference instead.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shop-config"), func(r *composed.Resource) {
					r.Manages = object.Ref{Kind: "ConfigMap", Namespace: "shop", Name: "shop-config"}
				}),
				referencing("app", configMap("shop", "shop-config")),
			},
			want: []string{`app spec.references[0].dependsOn ConfigMap shop/shop-config: that is what composed Object "shop-config" manages, not a composed resource: reference the Object, Object.kubernetes.crossplane.io shop-config, to order their deletion`},
		},
		"ARealOutsideObject": {
			reason: "A reference to an object outside the composite whose name is unlike any composed resource's is no mistake: a namespace the platform installed, another composite's Object, a cluster-scoped kind.",
			resources: []composed.Resource{
				composedtest.Object("shop-config"),
				referencing("app", clusterObject("platform-namespace"), object.Ref{Kind: "Namespace", Name: "shop-config"}, configMap("platform", "settings"), object.Ref{Group: "example.org", Kind: "XApp", Name: "shop"}),
			},
		},
		"AShortNameTwoOff": {
			reason:    "A short name two letters off a composed one is another word, not a typo.",
			resources: []composed.Resource{composedtest.Object("db"), referencing("app", clusterObject("mq"))},
		},
		"MatchedIsNoSuspect": {
			reason:    "A reference that matches a composed resource makes an edge, and is no suspect.",
			resources: []composed.Resource{composedtest.Object("shop-config"), referencing("app", clusterObject("shop-config"))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, r := range Of(composed.New(tc.resources, composed.Options{})) {
				got = append(got, r.Dependent+" "+r.Target.Field()+" "+r.Target.String()+": "+r.Problem)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
