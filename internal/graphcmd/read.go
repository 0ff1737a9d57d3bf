package graphcmd

// Reading: the function's input and the resources, from YAML, as a
// Composition request.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
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
		if d.object["kind"] == "Composition" {
			steps, _ := structAt(d.object, "spec")["pipeline"].([]any)
			for i, s := range steps {
				step, _ := s.(map[string]any)
				if isInput(structAt(step, "input")) {
					inputs = append(inputs, structAt(step, "input"))
					where = append(where, fmt.Sprintf("%s, spec.pipeline[%d].input", d.at, i))
				}
			}
			continue
		}
		if isInput(d.object) {
			inputs = append(inputs, d.object)
			where = append(where, d.at.String())
		}
	}
	if len(inputs) != 1 {
		return nil, errors.Errorf("cannot read the input from %q: it must hold one Input of %s, alone or as a Composition's pipeline step input; found %d%s",
			file, v1beta1.GroupVersion, len(inputs), strings.TrimSuffix(" ("+strings.Join(where, "; ")+")", " ()"))
	}
	data, err := json.Marshal(inputs[0])
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read the input from %q", file)
	}
	in, err := v1beta1.Decode(data)
	return in, errors.Wrapf(err, "invalid function input in %s", where[0])
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
func liveState(docs []document) (*fnv1.RunFunctionRequest, error) {
	var composed []document
	names := map[string]int{}
	for _, d := range docs {
		if !isRenderResult(d.object) {
			composed = append(composed, d)
			names[annotation(d.object)]++
		}
	}
	if len(names) > 1 || names[""] == 0 {
		composed = slices.DeleteFunc(composed, func(d document) bool { return annotation(d.object) == "" })
	}
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{}, Resources: map[string]*fnv1.Resource{}},
		Desired:  &fnv1.State{Resources: map[string]*fnv1.Resource{}},
	}
	for _, d := range composed {
		name := annotation(d.object)
		if name == "" || names[name] > 1 {
			name = kindNamespaceName(d.object)
		}
		s, err := structpb.NewStruct(d.object)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", d.at)
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

// A document is one YAML document of a file the command reads, and where it
// is, so that what is wrong with it can point there.
type document struct {
	object map[string]any
	at     place
}

// A place is where a document is: its file, its index in the file from 1,
// the line it starts on, and its kind and name once it is read.
type place struct {
	file        string
	index, line int
	kind, name  string
}

// String is, say, `document 3 (Object app) of "out.yaml", line 40`.
func (p place) String() string {
	file := strconv.Quote(p.file)
	if p.file == "-" {
		file = "standard input"
	}
	what := ""
	if p.kind != "" || p.name != "" {
		what = " (" + strings.TrimSpace(p.kind+" "+p.name) + ")"
	}
	return fmt.Sprintf("document %d%s of %s, line %d", p.index, what, file, p.line)
}

// readDocuments reads the YAML documents of a file, or of standard input for
// "-": each item of a List (kubectl get -o yaml of several resources) is one.
// Documents that hold nothing, only comments say, are left out.
func readDocuments(file string) ([]document, error) {
	data, err := readAll(file)
	if err != nil {
		return nil, err
	}
	in := &lineByLine{data: data}
	yr := kyaml.NewYAMLReader(bufio.NewReader(in))
	var docs []document
	for index := 1; ; index++ {
		from := in.at
		raw, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		first, content := in.linesFrom(from)
		at := place{file: file, index: index, line: content}
		if err != nil {
			// The reader stops at the separator it rejects: the last line
			// read.
			return nil, errors.Errorf("cannot parse %s: %s", at, within(at, in.lineOf(in.at-1), err.Error()))
		}
		d, err := decode(raw, at, first)
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		if d["kind"] != "List" {
			docs = append(docs, document{object: d, at: at.of(d)})
			continue
		}
		items, _ := d["items"].([]any)
		for _, i := range items {
			if m, ok := i.(map[string]any); ok {
				docs = append(docs, document{object: m, at: at.of(m)})
			}
		}
	}
}

// of is the place with the kind and name of the object there.
func (p place) of(d map[string]any) place {
	p.kind, _ = d["kind"].(string)
	p.name, _ = structAt(d, "metadata")["name"].(string)
	return p
}

func readAll(file string) ([]byte, error) {
	if file == "-" {
		data, err := io.ReadAll(os.Stdin)
		return data, errors.Wrap(err, "cannot read standard input")
	}
	data, err := os.ReadFile(file) //nolint:gosec // Reading the file the user names is the point.
	return data, errors.Wrapf(err, "cannot read %q", file)
}

// yamlLine is how the YAML decoder says where in a document it fails.
var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): `)

// decode reads one document, whose first line is the file's line first: an
// object, or nil when it holds nothing.
func decode(raw []byte, at place, first int) (map[string]any, error) {
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			// The decoder counts the document's lines from 1.
			n, _ := strconv.Atoi(m[1])
			msg = within(at, first+n-1, msg[len(m[0]):])
		}
		return nil, errors.Errorf("cannot parse %s: %s", at, msg)
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	case string:
		// Such as make's echo of the command, in a file make's output went
		// to without -s.
		return nil, errors.Errorf("cannot parse %s: it is the text %q, not a resource", at, message.Cut(v, message.MaxItemBytes))
	case []any:
		return nil, errors.Errorf("cannot parse %s: it is a list, not a resource", at)
	default:
		return nil, errors.Errorf("cannot parse %s: it is the value %v, not a resource", at, v)
	}
}

// within says the problem is at line, when that is not the document's first.
func within(at place, line int, problem string) string {
	if line == at.line {
		return problem
	}
	return fmt.Sprintf("at line %d: %s", line, problem)
}

// lineByLine hands the YAML reader its data a line at a time, so that the
// bufio.Reader between them never reads past the line it returns: at is then
// the end of what the YAML reader has read, and each document's lines can be
// numbered.
type lineByLine struct {
	data []byte
	at   int
}

func (l *lineByLine) Read(p []byte) (int, error) {
	if l.at == len(l.data) {
		return 0, io.EOF
	}
	end := len(l.data)
	if i := bytes.IndexByte(l.data[l.at:], '\n'); i >= 0 {
		end = l.at + i + 1
	}
	n := copy(p, l.data[l.at:end])
	l.at += n
	return n, nil
}

// lineOf is the line, from 1, that holds the byte at offset.
func (l *lineByLine) lineOf(offset int) int {
	return 1 + bytes.Count(l.data[:offset], []byte("\n"))
}

// linesFrom returns the lines the document the YAML reader read from offset
// on starts on: first, the first line it read, and content, the next when
// that is the "---" separator the reader keeps at a document's start, and
// more was read.
func (l *lineByLine) linesFrom(offset int) (first, content int) {
	first = l.lineOf(offset)
	end := bytes.IndexByte(l.data[offset:l.at], '\n')
	if bytes.HasPrefix(l.data[offset:l.at], []byte("---")) && end >= 0 && offset+end+1 < l.at {
		return first, first + 1
	}
	return first, first
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
