package docs

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
)

// function is the name the examples give this function.
const function = "function-dependencies"

// document is a YAML document decoded as JSON decodes.
type document = map[string]any

// documentSeparator separates the documents of a YAML stream.
var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// documents reads the YAML documents of a file of the repository.
func documents(t *testing.T, file string) []document {
	t.Helper()
	var docs []document
	for _, text := range documentSeparator.Split(read(t, file), -1) {
		var d document
		if err := yaml.Unmarshal([]byte(text), &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs
}

// lookup returns the value at a path of keys in a document.
func lookup(d document, keys ...string) any {
	var v any = d
	for _, k := range keys {
		m, ok := v.(document)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// A step is a pipeline step that runs this function: where it is, how
// Crossplane runs it, and its input.
type step struct {
	where string
	mode  v1beta1.Step
	input document
}

// stepsOf returns the steps of a document's pipeline that run this function:
// a Composition's, or an Operation's, CronOperation's or WatchOperation's.
func stepsOf(file string, d document) []step {
	var pipeline any
	var mode v1beta1.Step
	apiVersion, _ := d["apiVersion"].(string)
	kind, _ := d["kind"].(string)
	switch group, _, _ := strings.Cut(apiVersion, "/"); {
	case group == "apiextensions.crossplane.io" && kind == "Composition":
		pipeline, mode = lookup(d, "spec", "pipeline"), v1beta1.StepComposition
	case group == "ops.crossplane.io" && kind == "Operation":
		pipeline, mode = lookup(d, "spec", "pipeline"), v1beta1.StepOperation
	case group == "ops.crossplane.io" && (kind == "CronOperation" || kind == "WatchOperation"):
		pipeline, mode = lookup(d, "spec", "operationTemplate", "spec", "pipeline"), v1beta1.StepOperation
	default:
		return nil
	}
	var steps []step
	list, _ := pipeline.([]any)
	for i, s := range list {
		sd, _ := s.(document)
		if name, _ := lookup(sd, "functionRef", "name").(string); name != function {
			continue
		}
		input, _ := sd["input"].(document)
		name, _ := lookup(d, "metadata", "name").(string)
		steps = append(steps, step{where: file + ": " + kind + " " + name + ", step " + stepName(sd, i), mode: mode, input: input})
	}
	return steps
}

func stepName(s document, i int) string {
	if name, ok := s["step"].(string); ok {
		return name
	}
	return "#" + strconv.Itoa(i)
}

// TestEveryExampleInputIsValidForItsMode decodes the input of every step
// that runs this function in the examples, as the function decodes it for the
// step's mode: a Composition's for a Composition step, an Operation's for an
// Operation. A Crossplane v1 variant's input.yaml sets its fields in the
// Composition's input of the folder above, as the end-to-end tier renders it.
func TestEveryExampleInputIsValidForItsMode(t *testing.T) {
	var files []string
	err := fs.WalkDir(osFS, "example", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && path.Ext(p) == ".yaml" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[v1beta1.Step]int{}
	compositions := map[string][]step{}
	for _, file := range files {
		for _, d := range documents(t, file) {
			if d["kind"] == "Composition" {
				compositions[path.Dir(file)] = nil
			}
			for _, s := range stepsOf(file, d) {
				compositions[path.Dir(file)] = append(compositions[path.Dir(file)], s)
				decode(t, s)
				counts[s.mode]++
			}
		}
	}
	for dir, steps := range compositions {
		if len(steps) == 0 {
			t.Errorf("%s: a Composition with no step that runs %s", dir, function)
		}
	}
	for _, file := range files {
		if path.Base(file) != "input.yaml" {
			continue
		}
		parent := compositions[path.Dir(path.Dir(file))]
		if len(parent) == 0 {
			t.Errorf("%s: no Composition in the folder above whose input it sets fields of", file)
			continue
		}
		for _, d := range documents(t, file) {
			in := maps.Clone(parent[0].input)
			if in == nil {
				in = document{}
			}
			maps.Copy(in, d)
			decode(t, step{where: file + " over " + parent[0].where, mode: v1beta1.StepComposition, input: in})
			counts[v1beta1.StepComposition]++
		}
	}
	for _, mode := range []v1beta1.Step{v1beta1.StepComposition, v1beta1.StepOperation} {
		if counts[mode] == 0 {
			t.Errorf("example: no input for %s of %s found: the check checked nothing", phrase(mode), function)
		}
	}
}

// decode decodes a step's input for its mode, and reports why it is refused.
func decode(t *testing.T, s step) {
	t.Helper()
	var data []byte
	if s.input != nil {
		var err error
		if data, err = json.Marshal(s.input); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v1beta1.DecodeFor(data, s.mode); err != nil {
		t.Errorf("%s: the input is not valid for %s: %v", s.where, phrase(s.mode), err)
	}
}

// osFS is the repository's files, by their paths from its root.
var osFS = os.DirFS(root)

// TestEveryInputInTheDocsIsValid decodes the input of every step that runs
// this function in the YAML blocks of the Markdown files, as the examples'
// are: what a reader copies must work. A block that isn't YAML fails too,
// since what it shows couldn't be applied.
func TestEveryInputInTheDocsIsValid(t *testing.T) {
	steps := 0
	for _, file := range markdownFiles(t) {
		for _, b := range yamlBlocks(read(t, file)) {
			for _, text := range documentSeparator.Split(b.text, -1) {
				var v any
				if err := yaml.Unmarshal([]byte(text), &v); err != nil {
					t.Errorf("%s:%d: a YAML block that isn't YAML: %v", file, b.n, err)
					continue
				}
				for _, s := range stepsIn(v, v1beta1.StepComposition) {
					s.where = fmt.Sprintf("%s:%d: step %s", file, b.n, s.where)
					decode(t, s)
					steps++
				}
			}
		}
	}
	if steps == 0 {
		t.Error("no step that runs function-dependencies in the docs' YAML: the check checked nothing")
	}
}

// yamlBlocks returns the fenced yaml blocks of a Markdown document, each
// with the number of its opening line.
func yamlBlocks(doc string) []line {
	var blocks []line
	var in *line
	for i, text := range strings.Split(doc, "\n") {
		switch trimmed := strings.TrimSpace(text); {
		case in == nil && trimmed == "```yaml":
			in = &line{n: i + 1}
		case in != nil && trimmed == "```":
			blocks = append(blocks, *in)
			in = nil
		case in != nil:
			in.text += text + "\n"
		}
	}
	return blocks
}

// stepsIn returns the steps that run this function anywhere in a decoded
// YAML value: those of an Operation, a CronOperation or a WatchOperation run
// as an Operation, the others as a Composition step.
func stepsIn(v any, mode v1beta1.Step) []step {
	var steps []step
	switch v := v.(type) {
	case document:
		if k, _ := v["kind"].(string); strings.HasSuffix(k, "Operation") {
			mode = v1beta1.StepOperation
		}
		if name, _ := lookup(v, "functionRef", "name").(string); name == function {
			input, _ := v["input"].(document)
			where, _ := v["step"].(string)
			return []step{{where: where, mode: mode, input: input}}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			steps = append(steps, stepsIn(v[k], mode)...)
		}
	case []any:
		for _, item := range v {
			steps = append(steps, stepsIn(item, mode)...)
		}
	}
	return steps
}
