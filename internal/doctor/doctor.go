// Package doctor is the function's graph command: it reads resources from
// YAML, decides about them as the Composition step does with the same input,
// draws their dependency graph, and lists what the graph lacks.
package doctor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composition"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/view"
)

// errMissing is returned when a referenced object lacks a live dependent's
// finalizer, so that the command exits non-zero.
var errMissing = errors.New("referenced objects lack their dependents' finalizers")

// errCycle is returned when references form a cycle that fails the
// function's step.
var errCycle = errors.New("references form a cycle")

// Command draws the dependency graph of resources read from YAML.
type Command struct {
	Format string   `default:"mermaid" enum:"mermaid,dot" help:"Output format: mermaid or dot."`
	Input  string   `help:"The function's input, so that the verdict is the function's: a YAML file holding the Input, or the Composition whose pipeline step runs the function. Without it, the defaults." type:"existingfile"`
	Files  []string `arg:"" default:"-" help:"YAML files to read: a crossplane render output, or kubectl get ... -o yaml of a live cluster. - reads standard input." optional:""`

	out, diagnostics io.Writer
}

// Run reads the resources, decides about them as the function does with the
// same input, draws their graph on standard output and lists on standard
// error every referenced object that lacks a live dependent's finalizer or
// Usage, every stale finalizer and every cycle. It fails when one is missing,
// and on a cycle that fails the function's step.
func (c *Command) Run() error {
	if c.out == nil {
		c.out, c.diagnostics = os.Stdout, os.Stderr
	}
	in, err := readGraphInput(c.Input)
	if err != nil {
		return err
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
	p := composition.Decide(in, req)
	edges, external := report.EdgesOf(p.Graph, p.Finalizers, p.Usages)
	draw := map[string]func(view.Graph) string{"mermaid": view.Mermaid, "dot": view.DOT}[c.Format]
	if _, err := io.WriteString(c.out, draw(view.Of(p.Graph, edges, external, nil, false))); err != nil {
		return errors.Wrap(err, "cannot write the graph")
	}
	for _, r := range p.Invalid {
		fmt.Fprintf(c.diagnostics, "invalid reference: %s: %s\n", r.Resource, r.Problem)
	}
	for _, cycle := range p.Graph.Cycles {
		fmt.Fprintf(c.diagnostics, "cycle: %s\n", graph.Path(cycle))
	}
	for _, l := range p.Graph.LeftOut {
		fmt.Fprintf(c.diagnostics, "inferred edge left out: %s → %s via %s closes %s\n", l.Edge.Dependent, l.Edge.Target, l.Edge.Via, graph.Path(l.Cycle))
	}
	if len(p.Graph.Cycles) > 0 && in.OnCycle == v1beta1.CycleFatal {
		// The function declares nothing then: no finalizer is missing.
		return errors.Wrap(errCycle, "the function fails its step on it (onCycle: Fatal)")
	}
	missing := 0
	for _, target := range targets(edges) {
		var live []string
		lacking := map[report.Protection][]string{}
		for _, e := range edges {
			if e.Target != target || !e.State.Live() {
				continue
			}
			live = append(live, e.Dependent)
			if e.State.Lacking() {
				lacking[e.Protection] = append(lacking[e.Protection], e.Dependent)
			}
		}
		for _, l := range []struct {
			by   report.Protection
			what string
		}{{report.ByFinalizer, "reference finalizers"}, {report.ByUsage, "Usages"}} {
			if dependents := lacking[l.by]; len(dependents) > 0 {
				missing += len(dependents)
				fmt.Fprintf(c.diagnostics, "missing: %s lacks the %s of %d of its %d live dependents: %s\n",
					target, l.what, len(dependents), len(live), strings.Join(dependents, ", "))
			}
		}
	}
	for _, s := range p.Finalizers.Stale {
		fmt.Fprintf(c.diagnostics, "stale: %s carries %s, which names no Object that references it\n", s.Resource, s.Finalizer)
	}
	if missing > 0 {
		return errors.Wrapf(errMissing, "%d of the finalizers and Usages the graph needs are lacking", missing)
	}
	return nil
}

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
	live := request.NewLive()
	for _, d := range composed {
		name := annotation(d)
		if name == "" || names[name] > 1 {
			name = kindNamespaceName(d)
		}
		if err := live.Add(name, d); err != nil {
			return nil, errors.Wrapf(err, "cannot read %q", kindNamespaceName(d))
		}
	}
	return live.Request(), nil
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
