package v1beta1

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// generatedCRD is the CRD controller-gen generates from this package's
// kubebuilder markers.
const generatedCRD = "../../package/input/dependencies.fn.crossplane.io_inputs.yaml"

// A crdSchema is what the CRD says of a field that its declaration says too.
type crdSchema struct {
	Type       string               `json:"type,omitempty"`
	Default    string               `json:"default,omitempty"`
	Enum       []string             `json:"enum,omitempty"`
	Items      *crdSchema           `json:"items,omitempty"`
	Properties map[string]crdSchema `json:"properties,omitempty"`
}

// generatedFields are the properties of the generated CRD's Input.
func generatedFields(t *testing.T) map[string]crdSchema {
	t.Helper()
	data, err := os.ReadFile(generatedCRD)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema crdSchema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", generatedCRD, err)
	}
	for _, v := range crd.Spec.Versions {
		if GroupVersion == "dependencies.fn.crossplane.io/"+v.Name {
			return v.Schema.OpenAPIV3Schema.Properties
		}
	}
	t.Fatalf("%s has no version of %s", generatedCRD, GroupVersion)
	return nil
}

// schemaOf is what the CRD must say of a shape.
func schemaOf(s shape) crdSchema {
	out := crdSchema{Type: s.jsonType}
	if s.items != nil {
		items := schemaOf(*s.items)
		out.Items = &items
	}
	for name, f := range s.fields {
		if out.Properties == nil {
			out.Properties = map[string]crdSchema{}
		}
		out.Properties[name] = schemaOf(f)
	}
	return out
}

// TestTheCRDAndTheStructSayWhatTheDeclarationSays holds the kubebuilder
// markers, through the CRD controller-gen generates from them, and the
// Input's json tags to the one declaration of each field that the decoding
// derives from: each field of the CRD and of the struct is declared, with the
// CRD's type, default and values, and a default is one of its values. The CRD
// enumerates no values of apiVersion and kind, which are metav1.TypeMeta's:
// any string to it.
func TestTheCRDAndTheStructSayWhatTheDeclarationSays(t *testing.T) {
	generated := generatedFields(t)
	tags := jsonFields(reflect.TypeFor[Input]())
	typeMeta := jsonFields(reflect.TypeFor[metav1.TypeMeta]())
	declared := map[string]inputField{}
	names := map[string]bool{}
	for _, f := range inputFields {
		declared[f.name] = f
		names[f.name] = true
	}
	for name := range generated {
		names[name] = true
	}
	for name := range tags {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		t.Run(name, func(t *testing.T) {
			f, isDeclared := declared[name]
			_, isTagged := tags[name]
			if !isDeclared || !isTagged {
				t.Errorf("%s: declared %t, a json tag of the Input %t: want both", name, isDeclared, isTagged)
			}
			if f.def != "" && !slices.Contains(f.values, f.def) {
				t.Errorf("%s: the default %q is none of its values %q", name, f.def, f.values)
			}
			want := schemaOf(f.shape)
			want.Default = f.def
			switch {
			case typeMeta[name] != nil:
			case want.Items != nil:
				want.Items.Enum = f.values
			default:
				want.Enum = f.values
			}
			if diff := cmp.Diff(want, generated[name]); diff != "" {
				t.Errorf("%s in %s: -declared, +generated:\n%s", name, generatedCRD, diff)
			}
		})
	}
}
