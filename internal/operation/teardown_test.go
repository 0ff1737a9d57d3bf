package operation

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

func TestNudgesWakeWhatTheBackoffWouldKeepWaiting(t *testing.T) {
	ref := object.Finalizer
	target := map[string]string{protocol.TeardownTargetLabel: "true"}
	shared := func(deleting bool, fs ...string) teardownObject {
		return teardownObject{Name: "shared", UID: "u-shared", Deleting: deleting, Finalizers: append([]string{object.ObjectFinalizer}, fs...), Labels: target}
	}
	dep := func(name string, deleting bool) teardownObject {
		return teardownObject{Name: name, UID: "u-" + name, Deleting: deleting, Finalizers: []string{object.ObjectFinalizer}}
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
		target     teardownObject
		dependents []teardownObject
		want       []nudge
	}{
		"NothingWhileTheTargetLives": {
			reason:     "A live target's dependents keep their finalizers, deleting or not: no nudge, and no write to the target.",
			target:     shared(false, ref("u-a")),
			dependents: []teardownObject{dep("a", true)},
		},
		"AHeldTargetIsLabelledOnce": {
			reason:     "A deleting target that dependents hold is labelled a target, so that it is known for one once none holds it; with its first deleting holder nudged.",
			target:     teardownObject{Name: "shared", UID: "u-shared", Deleting: true, Finalizers: []string{object.ObjectFinalizer, ref("u-a")}},
			dependents: []teardownObject{dep("a", true)},
			want:       []nudge{{"a", protocol.TeardownHolderKey("u-shared"), value("a"), false, false}, {"shared", protocol.TeardownTargetLabel, "true", true, true}},
		},
		"TheFirstDeletingHolderIsNudged": {
			reason:     "Of the deleting dependents whose finalizer is still on the deleting target, the first by UID is nudged: woken together, all but one would conflict. One that lives, or has released it, is not.",
			target:     shared(true, ref("u-c"), ref("u-a"), ref("u-b")),
			dependents: []teardownObject{dep("b", true), dep("a", true), dep("c", false), dep("d", true)},
			want:       []nudge{{"a", protocol.TeardownHolderKey("u-shared"), value("a", "b", "c"), false, false}},
		},
		"TheValueFollowsTheFinalizersLeft": {
			reason:     "Once a dependent released the target, the next holder is nudged with a new value.",
			target:     shared(true, ref("u-b"), ref("u-c")),
			dependents: []teardownObject{dep("b", true), dep("c", true)},
			want:       []nudge{{"b", protocol.TeardownHolderKey("u-shared"), value("b", "c"), false, false}},
		},
		"AlreadyNudgedIsLeftAlone": {
			reason:     "A dependent that carries the value already is not applied again: each apply is a write, and a managedFields entry.",
			target:     shared(true, ref("u-b")),
			dependents: []teardownObject{{Name: "b", UID: "u-b", Deleting: true, Annotations: map[string]string{protocol.TeardownHolderKey("u-shared"): value("b")}}},
		},
		"AReleasedTargetIsNudgedOnce": {
			reason: "A deleting target no dependent holds any more is nudged to delete what it manages.",
			target: shared(true),
			want:   []nudge{{"shared", protocol.TeardownReleasedKey, "true", false, true}},
		},
		"AReleasedTargetCarryingTheValueIsLeftAlone": {
			reason: "The target's protocol.TeardownReleasedKey is not applied twice.",
			target: teardownObject{Name: "shared", Deleting: true, Finalizers: []string{object.ObjectFinalizer}, Labels: target, Annotations: map[string]string{protocol.TeardownReleasedKey: "true"}},
		},
		"ADeletingObjectNoOneHeldIsNeverWritten": {
			reason: "A dependent no one references is not a target: a write while the provider reconciles it would make its own Update conflict.",
			target: teardownObject{Name: "dependent", Deleting: true, Finalizers: []string{object.ObjectFinalizer}},
		},
		"AHolderThatIsHeldItselfIsSkipped": {
			reason:     "A holder that dependents hold in turn can't let go before they do (the provider delays its deletion while another finalizer is on it), and a write to it would make their Updates conflict: the next holder is nudged instead.",
			target:     shared(true, ref("u-a"), ref("u-b")),
			dependents: []teardownObject{{Name: "a", UID: "u-a", Deleting: true, Finalizers: []string{object.ObjectFinalizer, ref("u-leaf")}}, dep("b", true)},
			want:       []nudge{{"b", protocol.TeardownHolderKey("u-shared"), value("a", "b"), false, false}},
		},
		"ATargetTheProviderDoesNotManageIsNotNudged": {
			reason: "A deleting target without the provider's own finalizer (a ConfigMap, say) goes by itself once no reference finalizer is left.",
			target: teardownObject{Name: "cm", Deleting: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := nudgesOf(tc.target, tc.dependents)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNudges(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOnlyAReleasedTargetWaitsForItsResourceToGo(t *testing.T) {
	target := map[string]string{protocol.TeardownTargetLabel: "true"}
	releasedKey := map[string]string{protocol.TeardownReleasedKey: "true"}
	own := []string{object.ObjectFinalizer}
	cases := map[string]struct {
		reason string
		o      teardownObject
		want   bool
	}{
		"Released": {
			reason: "A deleting target that carries protocol.TeardownReleasedKey and the provider's finalizer alone waits for its managed resource.",
			o:      teardownObject{Deleting: true, Finalizers: own, Labels: target, Annotations: releasedKey},
			want:   true,
		},
		"NotDeleting": {
			reason: "A live Object is never nudged, whatever its labels.",
			o:      teardownObject{Finalizers: own, Labels: target, Annotations: releasedKey},
		},
		"NotReleased": {
			reason: "A target not woken yet waits for nudgesOf, not for goneNudge.",
			o:      teardownObject{Deleting: true, Finalizers: own, Labels: target},
		},
		"StillHeld": {
			reason: "A target that a dependent holds again keeps its resource.",
			o:      teardownObject{Deleting: true, Finalizers: append(own, object.Finalizer("u-a")), Labels: target, Annotations: releasedKey},
		},
		"NoTarget": {
			reason: "An Object no one held is never written to.",
			o:      teardownObject{Deleting: true, Finalizers: own, Annotations: releasedKey},
		},
		"NudgedAlready": {
			reason: "protocol.TeardownGoneKey is applied once.",
			o:      teardownObject{Deleting: true, Finalizers: own, Labels: target, Annotations: map[string]string{protocol.TeardownReleasedKey: "true", protocol.TeardownGoneKey: "true"}},
		},
		"TheProviderLetGo": {
			reason: "Without the provider's finalizer nothing waits for a reconcile.",
			o:      teardownObject{Deleting: true, Labels: target, Annotations: releasedKey},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := released(tc.o); got != tc.want {
				t.Errorf("%s\nReleased(...) = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

func TestAnOperationAppliesTheNudgesOfAnObjectEitherExactOrNot(t *testing.T) {
	holder := nudge{Object: "middle", Key: protocol.TeardownHolderKey("u-shared"), Value: "0123456789"}
	released := nudge{Object: "middle", Key: protocol.TeardownReleasedKey, Value: "true", Exact: true}
	gone := nudge{Object: "middle", Key: protocol.TeardownGoneKey, Value: "true", Exact: true}
	other := nudge{Object: "shared", Key: protocol.TeardownTargetLabel, Value: "true", Label: true, Exact: true}
	cases := map[string]struct {
		reason string
		nudges []nudge
		want   []nudge
	}{
		"TargetNudgesAlone": {
			reason: "An object that is only a target gets its nudges, exact.",
			nudges: []nudge{released, other},
			want:   []nudge{released, other},
		},
		"AHolderAndATargetAtOnce": {
			reason: "One Operation applies one partial object per object, pinned to the version read or not: a holder's nudge must never be (refused, it is lost), a target's must. The holder's goes first; its write changes the object, which makes the next Operation, and that one applies the target's, exact.",
			nudges: []nudge{released, holder, other},
			want:   []nudge{holder, other},
		},
		"AHolderWhoseResourceIsGone": {
			reason: "protocol.TeardownGoneKey is a target's nudge too: it waits for the next Operation.",
			nudges: []nudge{gone, holder},
			want:   []nudge{holder},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := dueNow(tc.nudges)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nNow(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
