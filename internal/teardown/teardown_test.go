package teardown

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

func TestNudgesWakeWhatTheBackoffWouldKeepWaiting(t *testing.T) {
	ref := objectref.Finalizer
	target := map[string]string{TargetLabel: "true"}
	shared := func(deleting bool, fs ...string) Object {
		return Object{Name: "shared", UID: "u-shared", Deleting: deleting, Finalizers: append([]string{objectref.ObjectFinalizer}, fs...), Labels: target}
	}
	dep := func(name string, deleting bool) Object {
		return Object{Name: name, UID: "u-" + name, Deleting: deleting, Finalizers: []string{objectref.ObjectFinalizer}}
	}
	// value is the nudge for the dependents still holding the target: a
	// digest of their sorted UIDs, the same whatever order the finalizers
	// are in.
	value := func(uids ...string) string {
		sum := sha256.Sum256([]byte("u-" + strings.Join(uids, ",u-")))
		return hex.EncodeToString(sum[:])[:10]
	}
	cases := map[string]struct {
		reason     string
		target     Object
		dependents []Object
		want       []Nudge
	}{
		"NothingWhileTheTargetLives": {
			reason:     "A live target's dependents keep their finalizers, deleting or not: no nudge, and no write to the target.",
			target:     shared(false, ref("u-a")),
			dependents: []Object{dep("a", true)},
		},
		"AHeldTargetIsLabelledOnce": {
			reason:     "A deleting target that dependents hold is labelled a target, so that it is known for one once none holds it; with its first deleting holder nudged.",
			target:     Object{Name: "shared", UID: "u-shared", Deleting: true, Finalizers: []string{objectref.ObjectFinalizer, ref("u-a")}},
			dependents: []Object{dep("a", true)},
			want:       []Nudge{{"a", HolderKey("u-shared"), value("a"), false, false}, {"shared", TargetLabel, "true", true, true}},
		},
		"TheFirstDeletingHolderIsNudged": {
			reason:     "Of the deleting dependents whose finalizer is still on the deleting target, the first by UID is nudged: woken together, all but one would conflict. One that lives, or has released it, is not.",
			target:     shared(true, ref("u-c"), ref("u-a"), ref("u-b")),
			dependents: []Object{dep("b", true), dep("a", true), dep("c", false), dep("d", true)},
			want:       []Nudge{{"a", HolderKey("u-shared"), value("a", "b", "c"), false, false}},
		},
		"TheValueFollowsTheFinalizersLeft": {
			reason:     "Once a dependent released the target, the next holder is nudged with a new value.",
			target:     shared(true, ref("u-b"), ref("u-c")),
			dependents: []Object{dep("b", true), dep("c", true)},
			want:       []Nudge{{"b", HolderKey("u-shared"), value("b", "c"), false, false}},
		},
		"AlreadyNudgedIsLeftAlone": {
			reason:     "A dependent that carries the value already is not applied again: each apply is a write, and a managedFields entry.",
			target:     shared(true, ref("u-b")),
			dependents: []Object{{Name: "b", UID: "u-b", Deleting: true, Annotations: map[string]string{HolderKey("u-shared"): value("b")}}},
		},
		"AReleasedTargetIsNudgedOnce": {
			reason: "A deleting target no dependent holds any more is nudged to delete what it manages.",
			target: shared(true),
			want:   []Nudge{{"shared", ReleasedKey, "true", false, true}},
		},
		"AReleasedTargetCarryingTheValueIsLeftAlone": {
			reason: "The target's ReleasedKey is not applied twice.",
			target: Object{Name: "shared", Deleting: true, Finalizers: []string{objectref.ObjectFinalizer}, Labels: target, Annotations: map[string]string{ReleasedKey: "true"}},
		},
		"ADeletingObjectNoOneHeldIsNeverWritten": {
			reason: "A dependent no one references is not a target: a write while the provider reconciles it would make its own Update conflict.",
			target: Object{Name: "dependent", Deleting: true, Finalizers: []string{objectref.ObjectFinalizer}},
		},
		"AHolderThatIsHeldItselfIsSkipped": {
			reason:     "A holder that dependents hold in turn can't let go before they do (the provider delays its deletion while another finalizer is on it), and a write to it would make their Updates conflict: the next holder is nudged instead.",
			target:     shared(true, ref("u-a"), ref("u-b")),
			dependents: []Object{{Name: "a", UID: "u-a", Deleting: true, Finalizers: []string{objectref.ObjectFinalizer, ref("u-leaf")}}, dep("b", true)},
			want:       []Nudge{{"b", HolderKey("u-shared"), value("a", "b"), false, false}},
		},
		"ATargetTheProviderDoesNotManageIsNotNudged": {
			reason: "A deleting target without the provider's own finalizer (a ConfigMap, say) goes by itself once no reference finalizer is left.",
			target: Object{Name: "cm", Deleting: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Nudges(tc.target, tc.dependents)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNudges(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOnlyAReleasedTargetWaitsForItsResourceToGo(t *testing.T) {
	target := map[string]string{TargetLabel: "true"}
	released := map[string]string{ReleasedKey: "true"}
	own := []string{objectref.ObjectFinalizer}
	cases := map[string]struct {
		reason string
		o      Object
		want   bool
	}{
		"Released": {
			reason: "A deleting target that carries ReleasedKey and the provider's finalizer alone waits for its managed resource.",
			o:      Object{Deleting: true, Finalizers: own, Labels: target, Annotations: released},
			want:   true,
		},
		"NotDeleting": {
			reason: "A live Object is never nudged, whatever its labels.",
			o:      Object{Finalizers: own, Labels: target, Annotations: released},
		},
		"NotReleased": {
			reason: "A target not woken yet waits for Nudges, not for Gone.",
			o:      Object{Deleting: true, Finalizers: own, Labels: target},
		},
		"StillHeld": {
			reason: "A target that a dependent holds again keeps its resource.",
			o:      Object{Deleting: true, Finalizers: append(own, objectref.Finalizer("u-a")), Labels: target, Annotations: released},
		},
		"NoTarget": {
			reason: "An Object no one held is never written to.",
			o:      Object{Deleting: true, Finalizers: own, Annotations: released},
		},
		"NudgedAlready": {
			reason: "GoneKey is applied once.",
			o:      Object{Deleting: true, Finalizers: own, Labels: target, Annotations: map[string]string{ReleasedKey: "true", GoneKey: "true"}},
		},
		"TheProviderLetGo": {
			reason: "Without the provider's finalizer nothing waits for a reconcile.",
			o:      Object{Deleting: true, Labels: target, Annotations: released},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Released(tc.o); got != tc.want {
				t.Errorf("%s\nReleased(...) = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

func TestAnOperationAppliesTheNudgesOfAnObjectEitherExactOrNot(t *testing.T) {
	holder := Nudge{Object: "middle", Key: HolderKey("u-shared"), Value: "0123456789"}
	released := Nudge{Object: "middle", Key: ReleasedKey, Value: "true", Exact: true}
	gone := Nudge{Object: "middle", Key: GoneKey, Value: "true", Exact: true}
	other := Nudge{Object: "shared", Key: TargetLabel, Value: "true", Label: true, Exact: true}
	cases := map[string]struct {
		reason string
		nudges []Nudge
		want   []Nudge
	}{
		"TargetNudgesAlone": {
			reason: "An object that is only a target gets its nudges, exact.",
			nudges: []Nudge{released, other},
			want:   []Nudge{released, other},
		},
		"AHolderAndATargetAtOnce": {
			reason: "One Operation applies one partial object per object, pinned to the version read or not: a holder's nudge must never be (refused, it is lost), a target's must. The holder's goes first; its write changes the object, which makes the next Operation, and that one applies the target's, exact.",
			nudges: []Nudge{released, holder, other},
			want:   []Nudge{holder, other},
		},
		"AHolderWhoseResourceIsGone": {
			reason: "GoneKey is a target's nudge too: it waits for the next Operation.",
			nudges: []Nudge{gone, holder},
			want:   []Nudge{holder},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Now(tc.nudges)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNow(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
