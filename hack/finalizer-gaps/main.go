// Command finalizer-gaps prints, as YAML comments, which reference finalizers
// the observed composed resources of an example lack: the provider-kubernetes
// #371 state that hack/render.sh shows before the render fixes it.
//
//	finalizer-gaps example/cluster/observed.yaml
//
// It reads references the way provider-kubernetes resolves them (patchesFrom
// before dependsOn, the CRD's default apiVersion and kind, no default
// namespace) but shares no code with the function, so that what it prints is
// a second opinion rather than the function's own.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
)

const finalizerPrefix = "kubernetes.crossplane.io/referred-by-object-"

type object struct {
	group, kind, namespace, name string
	uid                          string
	deleting                     bool
	finalizers                   map[string]bool
	references                   []key
}

type key struct{ group, kind, namespace, name string }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: finalizer-gaps OBSERVED-RESOURCES-FILE")
		os.Exit(2)
	}
	objects, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "finalizer-gaps: %v\n", err)
		os.Exit(1)
	}
	report(os.Stdout, os.Args[1], objects)
}

func read(path string) ([]object, error) {
	f, err := os.Open(path) //nolint:gosec // The path is the user's argument.
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var objects []object
	d := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var u map[string]any
		if err := d.Decode(&u); errors.Is(err, io.EOF) {
			return objects, nil
		} else if err != nil {
			return nil, fmt.Errorf("cannot decode %s: %w", path, err)
		}
		if u == nil {
			continue
		}
		gv, _ := schema.ParseGroupVersion(str(u, "apiVersion"))
		o := object{
			group:      gv.Group,
			kind:       str(u, "kind"),
			namespace:  str(u, "metadata", "namespace"),
			name:       str(u, "metadata", "name"),
			uid:        str(u, "metadata", "uid"),
			deleting:   str(u, "metadata", "deletionTimestamp") != "",
			finalizers: map[string]bool{},
		}
		for _, f := range list(u, "metadata", "finalizers") {
			if s, ok := f.(string); ok {
				o.finalizers[s] = true
			}
		}
		if o.kind == "Object" && (o.group == "kubernetes.crossplane.io" || o.group == "kubernetes.m.crossplane.io") {
			for _, r := range list(u, "spec", "references") {
				ref, _ := r.(map[string]any)
				target := ref["patchesFrom"]
				if target == nil {
					target = ref["dependsOn"]
				}
				t, ok := target.(map[string]any)
				if !ok {
					continue
				}
				apiVersion := firstOf(str(t, "apiVersion"), o.group+"/v1alpha1")
				tgv, _ := schema.ParseGroupVersion(apiVersion)
				o.references = append(o.references, key{tgv.Group, firstOf(str(t, "kind"), "Object"), str(t, "namespace"), str(t, "name")})
			}
		}
		objects = append(objects, o)
	}
}

// report prints one comment line per referenced object that lacks the
// finalizer of a live Object referencing it.
func report(w io.Writer, path string, objects []object) {
	byKey := map[key]int{}
	for i, o := range objects {
		byKey[key{o.group, o.kind, o.namespace, o.name}] = i
	}
	type gap struct{ lacking, dependents []string }
	gaps := map[int]*gap{}
	var order []int
	for _, d := range objects {
		if d.uid == "" || d.deleting {
			continue // Only a live, existing Object has a finalizer to need.
		}
		for _, r := range d.references {
			i, ok := byKey[r]
			if !ok {
				continue
			}
			g := gaps[i]
			if g == nil {
				g = &gap{}
				gaps[i] = g
				order = append(order, i)
			}
			g.dependents = append(g.dependents, d.name)
			if !objects[i].finalizers[finalizerPrefix+d.uid] {
				g.lacking = append(g.lacking, d.name)
			}
		}
	}
	missing := 0
	for _, i := range order {
		missing += len(gaps[i].lacking)
	}
	if missing == 0 {
		fmt.Fprintf(w, "# %s: every observed referenced object carries the reference finalizer of every live Object that references it.\n", path)
		return
	}
	fmt.Fprintf(w, "# provider-kubernetes #371 in %s: observed referenced objects lack %d reference finalizers of live Objects that reference them:\n", path, missing)
	// Sorted, so that the lines don't depend on the file's order.
	sort.Slice(order, func(a, b int) bool { return objects[order[a]].name < objects[order[b]].name })
	for _, i := range order {
		g := gaps[i]
		sort.Strings(g.lacking)
		if len(g.lacking) == 0 {
			continue
		}
		fmt.Fprintf(w, "#   %s %s lacks %d of %d: %s\n", objects[i].kind, objects[i].name, len(g.lacking), len(g.dependents), strings.Join(g.lacking, ", "))
	}
}

func value(m map[string]any, path ...string) any {
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

func str(m map[string]any, path ...string) string {
	s, _ := value(m, path...).(string)
	return s
}

func list(m map[string]any, path ...string) []any {
	l, _ := value(m, path...).([]any)
	return l
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
