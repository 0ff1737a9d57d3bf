//go:build controlplane

package controlplane

import (
	"testing"
)

// TestRaceShownNeedsOneMissingFinalizer proves the check of the runs
// without the function can fail: when the race spares every run.
func TestRaceShownNeedsOneMissingFinalizer(t *testing.T) {
	cases := map[string]struct {
		present map[string]int
		fails   bool
	}{
		"OneRunMissedOne":      {present: map[string]int{"without-1": 30, "without-2": 29}, fails: false},
		"EveryRunMissedMost":   {present: map[string]int{"without-1": 2, "without-2": 4, "without-3": 3}, fails: false},
		"EveryRunKeptEveryOne": {present: map[string]int{"without-1": 30, "without-2": 30}, fails: true},
		"NoRuns":               {present: map[string]int{}, fails: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := raceShown(30, tc.present)
			if got := err != nil; got != tc.fails {
				t.Errorf("raceShown(30, %v): error %v, want an error: %t", tc.present, err, tc.fails)
			}
		})
	}
}
