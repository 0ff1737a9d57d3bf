package protection

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEveryStateHasAnEntry(t *testing.T) {
	ranks := map[uint8]State{}
	for s := range numStates {
		info := states[s]
		if info.name == "" {
			t.Errorf("State(%d) has no entry in the table", int(s))
		}
		if other, taken := ranks[info.rank]; taken {
			t.Errorf("%v and %v share rank %d: the report would list them in no fixed order", s, other, info.rank)
		}
		ranks[info.rank] = s
	}
}

func TestUnknownStatesDontPassForKnownOnes(t *testing.T) {
	if got, want := numStates.String(), "State(8)"; got != want {
		t.Errorf("String() of a number that is no state = %q, want %q", got, want)
	}
	if got, want := Standing(9).String(), "Standing(9)"; got != want {
		t.Errorf("String() of a number that is no standing = %q, want %q", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Standing of a number that is no state returned, want a panic: no state falls back to a meaning")
		}
	}()
	_ = numStates.Standing(true)
}

// TestTable states the table: what each state means to the report, the
// graph view, the graph command and an Operation.
func TestTable(t *testing.T) {
	type meaning struct {
		Name              string
		Enforced, Report  string
		Holds, Live, Lack bool
		Why               string
	}
	want := map[State]meaning{
		Exposed:        {Name: "Exposed", Enforced: "missing", Report: "missing"},
		Protected:      {Name: "Protected", Enforced: "protected", Report: "protected", Holds: true, Live: true},
		Declared:       {Name: "Declared", Enforced: "pending", Report: "missing", Live: true, Lack: true},
		Pending:        {Name: "Pending", Enforced: "pending", Report: "pending", Why: "DependentNotManaged"},
		Releasing:      {Name: "Releasing", Enforced: "stale", Report: "stale", Why: "DependentDeleting"},
		TargetRemoved:  {Name: "TargetRemoved", Enforced: "missing", Report: "missing"},
		TargetDeleting: {Name: "TargetDeleting", Enforced: "missing", Report: "missing", Why: "TargetDeleting"},
		Cyclic:         {Name: "Cyclic", Enforced: "missing", Report: "missing", Why: "Cycle"},
	}
	got := map[State]meaning{}
	for s := range numStates {
		got[s] = meaning{
			Name: s.String(), Enforced: s.Standing(true).String(), Report: s.Standing(false).String(),
			Holds: s.Holds(), Live: s.Live(), Lack: s.Lacking(), Why: s.Why(),
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the states mean (-want +got):\n%s", diff)
	}
}

// TestStatesOf lists the states of each standing in the order the report
// lists their edges: the condition names removed targets first, then
// deleting ones, then edges nothing protects, and in Enforce mode the
// protections declared before those that wait for their Object.
func TestStatesOf(t *testing.T) {
	cases := map[string]struct {
		standing Standing
		enforce  bool
		want     []State
	}{
		"Missing":                  {StandingMissing, true, []State{TargetRemoved, TargetDeleting, Exposed, Cyclic}},
		"MissingInReportMode":      {StandingMissing, false, []State{TargetRemoved, TargetDeleting, Exposed, Cyclic, Declared}},
		"Pending":                  {StandingPending, true, []State{Declared, Pending}},
		"PendingInReportMode":      {StandingPending, false, []State{Pending}},
		"Protected":                {StandingProtected, true, []State{Protected}},
		"StaleWhateverTheMode":     {StandingStale, false, []State{Releasing}},
		"AnUnknownStandingHasNone": {Standing(9), true, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StatesOf(tc.standing, tc.enforce)); diff != "" {
				t.Errorf("StatesOf(%v, %v) (-want +got):\n%s", tc.standing, tc.enforce, diff)
			}
		})
	}
}
