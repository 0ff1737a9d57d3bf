package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestDrawsAPanelPerNumberOfDependents(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	files := []string{
		write("a.json", `{"arm": "with", "dependents": 10, "gone": 30, "conflicts": 4, "finalizers": [{"t": 0, "n": 10}, {"t": 12, "n": 3}, {"t": 29, "n": 0}]}`),
		write("b.json", `{"arm": "without", "dependents": 10, "gone": 9, "finalizers": [{"t": 0, "n": 2}, {"t": 5, "n": 0}]}`),
		write("c.json", `{"arm": "with", "dependents": 30, "gone": 60, "finalizers": [{"t": 0, "n": 30}]}`),
	}
	out := filepath.Join(dir, "teardown.png")
	if err := run(out, files); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is no PNG: %v", out, err)
	}
	// Three panels, one above the other, 2:1 each: one per number of
	// dependents and the growth.
	if cfg.Width == 0 || 2*cfg.Height != 3*cfg.Width {
		t.Errorf("the plot is %dx%d, want three 2:1 panels stacked", cfg.Width, cfg.Height)
	}
}

func TestMedianIsTheMiddleRun(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{75, 16, 20}, 20},
		{[]float64{3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got, want := runs([]float64{75, 16, 20}), "median 20 s of 75, 16, 20"; got != want {
		t.Errorf("runs = %q, want %q", got, want)
	}
}

func TestRefusesWhatIsNoTimeline(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(f, []byte(`{"arm": "sometimes", "finalizers": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(filepath.Join(t.TempDir(), "x.png"), []string{f}); err == nil {
		t.Error("run accepted a file that is no timeline")
	}
	if err := run("x.png", nil); err == nil {
		t.Error("run accepted no files")
	}
}
