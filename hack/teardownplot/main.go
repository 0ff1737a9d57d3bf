// Command teardownplot draws the teardown timelines TestTeardownTimeline
// records (docs/teardown/*.json): the reference finalizers left on the
// shared Object over time, one line per XR and a panel per number of
// dependents, and last how each arm's median teardown grows with the
// number of dependents. `make teardown-plot` runs it.
//
//	teardownplot [-o docs/teardown/teardown.png] docs/teardown/*.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"maps"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A timeline is what TestTeardownTimeline writes; the fields it draws.
type timeline struct {
	Arm        string  `json:"arm"`
	Stack      string  `json:"stack"`
	Dependents int     `json:"dependents"`
	Conflicts  int     `json:"conflicts"`
	Gone       float64 `json:"gone"`
	Finalizers []struct {
		T float64 `json:"t"`
		N int     `json:"n"`
	} `json:"finalizers"`
}

// colors tell the arms apart.
var colors = map[string]color.Color{
	"without": color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff},
	"with":    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"watched": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"usages":  color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// legends name the arms.
var legends = map[string]string{
	"without": "without function-dependencies",
	"with":    "with it",
	"watched": "with it and its WatchOperations",
	"usages":  "with it, protection: Usages",
}

func main() {
	out := flag.String("o", "docs/teardown/teardown.png", "the PNG to write")
	flag.Parse()
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "teardownplot:", err)
		os.Exit(1)
	}
}

func run(out string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("no timelines: give the JSON files TestTeardownTimeline wrote")
	}
	bySize := map[int][]timeline{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var tl timeline
		if err := json.Unmarshal(b, &tl); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if colors[tl.Arm] == nil || len(tl.Finalizers) == 0 {
			return fmt.Errorf("%s: arm %q with %d points is not a timeline TestTeardownTimeline writes", f, tl.Arm, len(tl.Finalizers))
		}
		bySize[tl.Dependents] = append(bySize[tl.Dependents], tl)
	}
	sizes := slices.Sorted(maps.Keys(bySize))
	panels := make([]*plot.Plot, 0, len(sizes)+1)
	for _, n := range sizes {
		p, err := panel(n, bySize[n])
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	g, err := growth(bySize)
	if err != nil {
		return err
	}
	panels = append(panels, g)
	const w, h = 6 * vg.Inch, 3 * vg.Inch
	img := vgimg.New(w, h*vg.Length(len(panels)))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1}
	for i, p := range panels {
		p.Draw(tiles.At(dc, 0, i))
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// panel draws the timelines of one number of dependents, every run, with
// one legend entry per arm: its median teardown and conflicts.
func panel(n int, tls []timeline) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d dependents: reference finalizers on the shared Object during teardown", n)
	p.X.Label.Text = "seconds after deleting the XR"
	p.Y.Label.Text = "finalizers left"
	p.Y.Min = 0
	p.Legend.Top = true
	for _, arm := range arms(tls) {
		var gone, conflicts []float64
		var first *plotter.Line
		for _, tl := range tls {
			if tl.Arm != arm {
				continue
			}
			pts := make(plotter.XYs, 0, len(tl.Finalizers)+1)
			for _, pt := range tl.Finalizers {
				pts = append(pts, plotter.XY{X: pt.T, Y: float64(pt.N)})
			}
			// Hold the last count until everything was gone.
			last := tl.Finalizers[len(tl.Finalizers)-1]
			pts = append(pts, plotter.XY{X: max(tl.Gone, last.T), Y: float64(last.N)})
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			line.StepStyle = plotter.PostStep
			line.Color = colors[tl.Arm]
			line.Width = vg.Points(1.5)
			p.Add(line)
			if first == nil {
				first = line
			}
			gone, conflicts = append(gone, tl.Gone), append(conflicts, float64(tl.Conflicts))
		}
		p.Legend.Add(fmt.Sprintf("%s: %s, %.0f conflicts", legends[arm], runs(gone), median(conflicts)), first)
	}
	return p, nil
}

// growth draws each arm's median teardown against the number of
// dependents.
func growth(bySize map[int][]timeline) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "median teardown by number of dependents"
	p.X.Label.Text = "dependents of the shared Object"
	p.Y.Label.Text = "seconds until nothing was left"
	p.X.Min, p.Y.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	var all []timeline
	for _, tls := range bySize {
		all = append(all, tls...)
	}
	for _, arm := range arms(all) {
		var pts plotter.XYs
		for _, n := range slices.Sorted(maps.Keys(bySize)) {
			var gone []float64
			for _, tl := range bySize[n] {
				if tl.Arm == arm {
					gone = append(gone, tl.Gone)
				}
			}
			if len(gone) > 0 {
				pts = append(pts, plotter.XY{X: float64(n), Y: median(gone)})
			}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = colors[arm], colors[arm]
		line.Width = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(legends[arm], line, points)
	}
	return p, nil
}

// arms are the arms of the timelines, in the order the legends give.
func arms(tls []timeline) []string {
	var out []string
	for _, arm := range []string{"without", "with", "watched", "usages"} {
		if slices.ContainsFunc(tls, func(tl timeline) bool { return tl.Arm == arm }) {
			out = append(out, arm)
		}
	}
	return out
}

// runs says the median of a few runs' teardowns and each of them.
func runs(gone []float64) string {
	if len(gone) == 1 {
		return fmt.Sprintf("%.0f s", gone[0])
	}
	each := make([]string, len(gone))
	for i, g := range gone {
		each[i] = fmt.Sprintf("%.0f", g)
	}
	return fmt.Sprintf("median %.0f s of %s", median(gone), strings.Join(each, ", "))
}

// median is the middle value, or the mean of the middle two.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
