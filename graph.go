package main

import (
	"bufio"
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

	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// compositionResourceName is the annotation Crossplane puts on every composed
// resource.
const compositionResourceName = "crossplane.io/composition-resource-name"

// errMissing is returned when a referenced object lacks a live dependent's
// finalizer, so that the command exits non-zero.
var errMissing = errors.New("referenced objects lack their dependents' finalizers")

// GraphCmd draws the dependency graph of resources read from YAML.
type GraphCmd struct {
	Format string   `default:"mermaid" enum:"mermaid,dot" help:"Output format: mermaid or dot."`
	Files  []string `arg:"" default:"-" help:"YAML files to read: a crossplane render output, or kubectl get ... -o yaml of a live cluster. - reads standard input." optional:""`

	out, diagnostics io.Writer
}

// Run reads the resources, draws their graph on standard output and lists
// on standard error every referenced object that lacks a live dependent's
// finalizer, and every stale one. It fails when a finalizer is missing.
func (c *GraphCmd) Run() error {
	if c.out == nil {
		c.out, c.diagnostics = os.Stdout, os.Stderr
	}
	var docs []map[string]any
	for _, f := range c.Files {
		d, err := readDocuments(f)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	req, err := liveState(docs)
	if err != nil {
		return err
	}
	read := composedResources(req, true, false)
	resources, invalid := read.resources, read.invalid
	g := graph.New(resources, graph.Options{})
	fin := finalizer.Declare(g)
	edges, external := report.EdgesOf(g, fin, usage.Plan{})
	draw := map[string]func(view.Graph) string{"mermaid": view.Mermaid, "dot": view.DOT}[c.Format]
	if _, err := io.WriteString(c.out, draw(view.Of(g, edges, external, nil, false))); err != nil {
		return errors.Wrap(err, "cannot write the graph")
	}
	for _, r := range invalid {
		fmt.Fprintf(c.diagnostics, "invalid reference: %s: %s\n", r.Resource, r.Problem)
	}
	missing := 0
	for _, target := range targets(edges) {
		var lacking, live []string
		for _, e := range edges {
			if e.Target != target || (e.State != graph.Protected && e.State != graph.Declared) {
				continue
			}
			live = append(live, e.Dependent)
			if e.State == graph.Declared {
				lacking = append(lacking, e.Dependent)
			}
		}
		if len(lacking) > 0 {
			missing += len(lacking)
			fmt.Fprintf(c.diagnostics, "missing: %s lacks the reference finalizers of %d of its %d live dependents: %s\n",
				target, len(lacking), len(live), strings.Join(lacking, ", "))
		}
	}
	for _, s := range fin.Stale {
		fmt.Fprintf(c.diagnostics, "stale: %s carries %s, which names no Object that references it\n", s.Resource, s.Finalizer)
	}
	if missing > 0 {
		return errors.Wrapf(errMissing, "%d of the finalizers the graph needs are lacking", missing)
	}
	return nil
}

// targets returns the targets of the edges, sorted, once each.
func targets(edges []report.Edge) []string {
	var out []string
	for _, e := range edges {
		out = append(out, e.Target)
	}
	slices.Sort(out)
	return slices.Compact(out)
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
		req.Desired.Resources[name] = &fnv1.Resource{Resource: s}
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
	s, _ := structAt(d, "metadata", "annotations")[compositionResourceName].(string)
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
