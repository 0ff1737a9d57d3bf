package docs

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	kfield "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
)

// A field is a field of the input as a user writes it: its path of JSON
// names (objectSelector.matchLabels), its Go type, and for a list of objects
// the JSON names of their fields.
type field struct {
	path  string
	typ   reflect.Type
	items []string
}

// inputFields returns every field of the Input, by its JSON tags: a field of
// an object field by its path, a field whose value is a list of objects with
// the names of their fields. TypeMeta and metadata are the object's, not
// the input's.
func inputFields(t reflect.Type, prefix string) []field {
	var out []field
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || name == "" || name == "-" || (prefix == "" && name == "metadata") {
			continue
		}
		typ := f.Type
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch {
		case typ.Kind() == reflect.Struct:
			out = append(out, inputFields(typ, prefix+name+".")...)
		case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct:
			var items []string
			for _, item := range inputFields(typ.Elem(), "") {
				items = append(items, item.path)
			}
			out = append(out, field{path: prefix + name, typ: typ, items: items})
		default:
			out = append(out, field{path: prefix + name, typ: typ})
		}
	}
	return out
}

// A row is a row of the README's input table.
type row struct {
	line                                  int
	field                                 string
	composition, operation                bool
	values, defaultValue, meaning, source string
}

// inputTable reads the README's input table: the table whose header starts
// with field, C and O.
func inputTable(t *testing.T, readme string) []row {
	t.Helper()
	var rows []row
	in := false
	for _, l := range prose(readme) {
		if strings.HasPrefix(l.text, "| field | C | O |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(l.text, "|") {
			break
		}
		if strings.HasPrefix(l.text, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "|"), "|")
		if len(cells) != 6 {
			t.Fatalf("README.md:%d: the input table's row has %d cells, not 6 (field, C, O, values, default, meaning): %s", l.n, len(cells), l.text)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		names := backticked(cells[0])
		if len(names) != 1 {
			t.Fatalf("README.md:%d: the input table's row names no field in backticks: %s", l.n, cells[0])
		}
		rows = append(rows, row{line: l.n, field: names[0], composition: cells[1] == "✓", operation: cells[2] == "✓",
			values: cells[3], defaultValue: cells[4], meaning: cells[5], source: l.text})
	}
	if len(rows) == 0 {
		t.Fatal("README.md: no input table (a table whose header starts | field | C | O |)")
	}
	return rows
}

// samples are values for the fields whose README row lists no value a user
// writes as is: a list of objects, a map.
var samples = map[string]any{
	"dependencies":               []any{map[string]any{"resource": "deployment-.*", "dependsOn": []any{"namespace"}}},
	"objectSelector.matchLabels": map[string]any{"team": "payments"},
}

// inputWith returns the JSON of an input that sets the field at the path to
// the value.
func inputWith(t *testing.T, path string, value any) []byte {
	t.Helper()
	parts := strings.Split(path, ".")
	v := value
	for i := len(parts) - 1; i >= 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	// A given input says what it is.
	in := v.(map[string]any)
	for k, typed := range map[string]string{"apiVersion": v1beta1.GroupVersion, "kind": "Input"} {
		if _, set := in[k]; !set {
			in[k] = typed
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// valueOf returns a value of the field written as the README's values cell
// lists it: a string field takes a listed value as is, a list of strings a
// list of it.
func valueOf(f field, listed string) (any, bool) {
	switch {
	case f.typ.Kind() == reflect.String:
		return listed, true
	case f.typ.Kind() == reflect.Slice && f.typ.Elem().Kind() == reflect.String:
		return []any{listed}, true
	}
	return nil, false
}

// modes are the steps a row says read its field.
func (r row) modes() []v1beta1.Step {
	var steps []v1beta1.Step
	if r.composition {
		steps = append(steps, v1beta1.StepComposition)
	}
	if r.operation {
		steps = append(steps, v1beta1.StepOperation)
	}
	return steps
}

// TestTheInputTableSaysWhatTheInputIs checks the README's input table
// against the input itself: a row for every field and a field for every row,
// each mode the row marks reading the field and the other refusing it, every
// value listed accepted, and the default the input's.
func TestTheInputTableSaysWhatTheInputIs(t *testing.T) {
	fields := inputFields(reflect.TypeFor[v1beta1.Input](), "")
	rows := inputTable(t, read(t, "README.md"))
	byField := map[string]row{}
	for _, r := range rows {
		byField[r.field] = r
	}
	for _, f := range fields {
		r, ok := byField[f.path]
		if !ok {
			t.Errorf("README.md: the input table has no row for the input's field %s", f.path)
			continue
		}
		delete(byField, f.path)
		for _, item := range f.items {
			if !strings.Contains(r.values+" "+r.meaning, item) {
				t.Errorf("README.md:%d: the input table's row for %s doesn't name %s, a field of its items", r.line, f.path, item)
			}
		}
		checkModes(t, f, r)
		checkValues(t, f, r)
		checkEveryValueListed(t, f, r)
		checkDefault(t, f, r)
	}
	for name, r := range byField {
		t.Errorf("README.md:%d: the input table has a row for %s, which is no field of the input", r.line, name)
	}
}

// checkModes checks that the modes the row marks read the field and the
// others refuse it.
func checkModes(t *testing.T, f field, r row) {
	t.Helper()
	value, ok := samples[f.path]
	if !ok {
		listed := backticked(r.values)
		if len(listed) == 0 {
			t.Errorf("README.md:%d: the input table lists no value of %s, and the docs test has no sample of it: add one to samples", r.line, f.path)
			return
		}
		if value, ok = valueOf(f, listed[0]); !ok {
			t.Errorf("README.md:%d: %s is neither a string nor a list of strings, and the docs test has no sample of it: add one to samples", r.line, f.path)
			return
		}
	}
	in := inputWith(t, f.path, value)
	for _, step := range []v1beta1.Step{v1beta1.StepComposition, v1beta1.StepOperation} {
		_, err := v1beta1.DecodeFor(in, step)
		switch reads := slices.Contains(r.modes(), step); {
		case reads && err != nil:
			t.Errorf("README.md:%d: the input table says %s reads %s, but it refuses %s: %v", r.line, phrase(step), f.path, in, err)
		case !reads && err == nil:
			t.Errorf("README.md:%d: the input table says %s doesn't read %s, but it accepts %s", r.line, phrase(step), f.path, in)
		}
	}
}

// phrase names the step as the README does.
func phrase(step v1beta1.Step) string {
	if step == v1beta1.StepOperation {
		return "an Operation"
	}
	return "a Composition step"
}

// checkValues checks that every value the row lists is accepted.
func checkValues(t *testing.T, f field, r row) {
	t.Helper()
	if _, ok := samples[f.path]; ok || len(r.modes()) == 0 {
		return
	}
	for _, listed := range backticked(r.values) {
		value, _ := valueOf(f, listed)
		if _, err := v1beta1.DecodeFor(inputWith(t, f.path, value), r.modes()[0]); err != nil {
			t.Errorf("README.md:%d: the input table lists %s: %s, which the input refuses: %v", r.line, f.path, listed, err)
		}
	}
}

// checkEveryValueListed checks that the row lists every value the input
// accepts, as the input's own error for a value it doesn't names them.
func checkEveryValueListed(t *testing.T, f field, r row) {
	t.Helper()
	value, ok := valueOf(f, "unlisted value")
	if _, sample := samples[f.path]; sample || !ok || len(r.modes()) == 0 {
		return
	}
	_, err := v1beta1.DecodeFor(inputWith(t, f.path, value), r.modes()[0])
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Errorf("README.md:%d: %s accepts any value, but the input table lists some", r.line, f.path)
		return
	}
	for _, e := range agg.Errors() {
		var fe *kfield.Error
		if !errors.As(e, &fe) || fe.Type != kfield.ErrorTypeNotSupported {
			continue
		}
		for _, quoted := range strings.Split(strings.TrimPrefix(fe.Detail, "supported values: "), ", ") {
			if v, err := strconv.Unquote(quoted); err == nil && !slices.Contains(backticked(r.values), v) {
				t.Errorf("README.md:%d: the input table doesn't list %s: %s, which the input accepts", r.line, f.path, v)
			}
		}
	}
}

// checkDefault checks that the default the row gives is the input's: its
// value after decoding an empty input, or none for a field left empty.
func checkDefault(t *testing.T, f field, r row) {
	t.Helper()
	if len(r.modes()) == 0 {
		t.Errorf("README.md:%d: the input table marks no mode reading %s", r.line, f.path)
		return
	}
	in, err := v1beta1.DecodeFor(nil, r.modes()[0])
	if err != nil {
		t.Fatalf("an empty input is refused: %v", err)
	}
	got := reflect.ValueOf(in).Elem()
	for _, name := range strings.Split(f.path, ".") {
		for got.Kind() == reflect.Pointer {
			if got.IsNil() {
				got = reflect.Value{}
				break
			}
			got = got.Elem()
		}
		if !got.IsValid() {
			break
		}
		got = fieldByJSONName(got, name)
	}
	want := backticked(r.defaultValue)
	switch {
	case r.defaultValue == "none":
		if got.IsValid() && !got.IsZero() {
			t.Errorf("README.md:%d: the input table says %s has no default, but it defaults to %v", r.line, f.path, got)
		}
	case len(want) == 1 && got.IsValid() && got.Kind() == reflect.String:
		if got.String() != want[0] {
			t.Errorf("README.md:%d: the input table says %s defaults to %s, but it defaults to %s", r.line, f.path, want[0], got.String())
		}
	default:
		t.Errorf("README.md:%d: the input table's default of %s is neither none nor one value in backticks: %s", r.line, f.path, r.defaultValue)
	}
}

// fieldByJSONName returns the field of a struct whose JSON name is name.
func fieldByJSONName(v reflect.Value, name string) reflect.Value {
	for i := range v.NumField() {
		if n, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); n == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// TestThePackageReadmeNamesEveryInputField checks that the readme the
// package shows in registries names every field of the input.
func TestThePackageReadmeNamesEveryInputField(t *testing.T) {
	var pkg struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "package/crossplane.yaml")), &pkg); err != nil {
		t.Fatalf("package/crossplane.yaml: %v", err)
	}
	readme := pkg.Metadata.Annotations["meta.crossplane.io/readme"]
	if readme == "" {
		t.Fatal("package/crossplane.yaml: no meta.crossplane.io/readme annotation")
	}
	named := map[string]bool{}
	for _, f := range inputFields(reflect.TypeFor[v1beta1.Input](), "") {
		name, _, _ := strings.Cut(f.path, ".")
		if named[name] {
			continue
		}
		named[name] = true
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(readme) {
			t.Errorf("package/crossplane.yaml: the meta.crossplane.io/readme annotation doesn't name the input's field %s", name)
		}
	}
}
