package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// Documents returns the non-empty documents of a YAML stream, in order. A
// document of comments only, null or {} is empty and left out. Numbers are
// decoded as Kubernetes decodes them: int64 when integral, else float64.
func Documents(t testing.TB, content []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("cannot split YAML: %v", err)
		}
		var d map[string]any
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatalf("cannot parse YAML document: %v\n%s", err, raw)
		}
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
}

// ReadDocuments returns the non-empty documents of a YAML file, as Documents
// does.
func ReadDocuments(t testing.TB, path string) []map[string]any {
	t.Helper()
	return Documents(t, ReadFile(t, path))
}

// WriteDocuments writes docs to path as a YAML stream of JSON documents,
// which every YAML reader reads.
func WriteDocuments(t testing.TB, path string, docs []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	for _, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ReadFile returns the content of a file the test reads: one of this
// repository, of the module cache or of the test's own output.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // Files the tests choose, not user input.
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DeepCopy returns a copy of m that shares nothing with it, made through
// JSON: every number in the copy is a float64.
func DeepCopy(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Lookup returns the value at path in m, following nested maps; nil if a
// key is missing or a value on the way is no map.
func Lookup(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// Set sets the value at path in m, making the objects on the way that m
// lacks, and replacing a value on the way that is no object.
func Set(m map[string]any, v any, path ...string) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// String returns the string at path in m; "" if there is none.
func String(m map[string]any, path ...string) string {
	s, _ := Lookup(m, path...).(string)
	return s
}

// Strings returns the strings of the list at path in m, skipping what is
// no string.
func Strings(m map[string]any, path ...string) []string {
	var out []string
	for _, v := range List(m, path...) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// List returns the list at path in m; nil if there is none.
func List(m map[string]any, path ...string) []any {
	l, _ := Lookup(m, path...).([]any)
	return l
}

// IsYAML reports whether a file name has a YAML extension, .yaml or .yml.
func IsYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// YAMLFiles returns the YAML files under dir, at any depth, sorted; none if
// dir doesn't exist.
func YAMLFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && IsYAML(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}
