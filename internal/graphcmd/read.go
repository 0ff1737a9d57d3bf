package graphcmd

// Reading: the function's input and the resources, from YAML, as a
// Composition request.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// readGraphInput reads the function's input from a file holding the Input
// itself, or a Composition with one pipeline step whose input is the
// function's; with no file, the defaults.
func readGraphInput(file string) (*v1beta1.Input, error) {
	if file == "" {
		return v1beta1.Decode(nil)
	}
	docs, err := readDocuments(file)
	if err != nil {
		return nil, err
	}
	var inputs []map[string]any
	var where []string
	for _, d := range docs {
		if d["kind"] == "Composition" {
			steps, _ := structAt(d, "spec")["pipeline"].([]any)
			for i, s := range steps {
				step, _ := s.(map[string]any)
				if isInput(structAt(step, "input")) {
					inputs = append(inputs, structAt(step, "input"))
					where = append(where, fmt.Sprintf("Composition %q spec.pipeline[%d].input", structAt(d, "metadata")["name"], i))
				}
			}
			continue
		}
		if isInput(d) {
			inputs = append(inputs, d)
			where = append(where, "an Input")
		}
	}
	if len(inputs) != 1 {
		return nil, errors.Errorf("cannot read the input from %q: it must hold one Input of %s, alone or as a Composition's pipeline step input; found %d%s",
			file, v1beta1.GroupVersion, len(inputs), strings.TrimSuffix(" ("+strings.Join(where, ", ")+")", " ()"))
	}
	data, err := json.Marshal(inputs[0])
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read the input from %q", file)
	}
	in, err := v1beta1.Decode(data)
	return in, errors.Wrapf(err, "invalid function input in %s of %q", where[0], file)
}

func isInput(d map[string]any) bool {
	return d["apiVersion"] == v1beta1.GroupVersion && d["kind"] == "Input"
}

// liveState makes a request whose observed and desired state are the
// resources: as a live cluster holds them, every one exists and is wanted.
// When some resources carry a composition resource name, only those are
// composed: the rest are composites, or objects outside any composition.
// A resource is named by its composition resource name, or by kind, namespace
// and name when it has none or shares it with another (resources of several
// composites). crossplane render's results are left out.
func liveState(docs []map[string]any) (*fnv1.RunFunctionRequest, error) {
	var composed []map[string]any
	names := map[string]int{}
	for _, d := range docs {
		if !isRenderResult(d) {
			composed = append(composed, d)
			names[annotation(d)]++
		}
	}
	if len(names) > 1 || names[""] == 0 {
		composed = slices.DeleteFunc(composed, func(d map[string]any) bool { return annotation(d) == "" })
	}
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{}, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	for _, d := range composed {
		name := annotation(d)
		if name == "" || names[name] > 1 {
			name = kindNamespaceName(d)
		}
		s, err := structpb.NewStruct(d)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %q", kindNamespaceName(d))
		}
		req.Observed.Resources[name] = &fnv1.Resource{Resource: s}
		// The function reads one of its own Usages as what protects an edge
		// only when it is observed alone.
		if request.ObjectOf(s).Label(protocol.UsageLabel) != "true" {
			req.Desired.Resources[name] = &fnv1.Resource{Resource: s}
		}
	}
	return req, nil
}

func readDocuments(file string) ([]map[string]any, error) {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file) //nolint:gosec // Reading the file the user names is the point.
		if err != nil {
			return nil, errors.Wrapf(err, "cannot open %q", file)
		}
		defer f.Close()
		r = f
	}
	var docs []map[string]any
	yr := kyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		raw, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %q", file)
		}
		var d map[string]any
		if err := yaml.Unmarshal(raw, &d); err != nil {
			return nil, errors.Wrapf(err, "cannot parse a document of %q", file)
		}
		// kubectl get -o yaml of several resources is one List.
		if d["kind"] == "List" {
			items, _ := d["items"].([]any)
			for _, i := range items {
				if m, ok := i.(map[string]any); ok {
					docs = append(docs, m)
				}
			}
			continue
		}
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
}

func isRenderResult(d map[string]any) bool {
	v, _ := d["apiVersion"].(string)
	return strings.HasPrefix(v, "render.crossplane.io/")
}

func annotation(d map[string]any) string {
	s, _ := structAt(d, "metadata", "annotations")[protocol.CompositionResourceName].(string)
	return s
}

func kindNamespaceName(d map[string]any) string {
	metadata := structAt(d, "metadata")
	kind, _ := d["kind"].(string)
	namespace, _ := metadata["namespace"].(string)
	name, _ := metadata["name"].(string)
	return strings.Join(slices.DeleteFunc([]string{strings.ToLower(kind), namespace, name}, func(s string) bool { return s == "" }), "/")
}

func structAt(d map[string]any, path ...string) map[string]any {
	for _, k := range path {
		d, _ = d[k].(map[string]any)
	}
	return d
}
