package request

import (
	"testing"
	"time"

	"github.com/crossplane/function-sdk-go/resource"
)

func TestNotReadySinceIsWhenTheObjectLastStoppedBeingReady(t *testing.T) {
	created := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	changed := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		json   string
		want   time.Time
		known  bool
	}{
		"NoReadyCondition": {
			reason: "An object without a Ready condition, a ProviderConfig say, has not been ready since it was created.",
			json:   `{"metadata": {"creationTimestamp": "2026-12-07T08:00:00Z"}}`,
			want:   created, known: true,
		},
		"ReadyFalse": {
			reason: "An object whose Ready condition is not True has not been ready since the condition last changed.",
			json:   `{"metadata": {"creationTimestamp": "2026-12-07T08:00:00Z"}, "status": {"conditions": [{"type": "Synced", "status": "True", "lastTransitionTime": "2026-12-07T08:01:00Z"}, {"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-07T09:30:00Z"}]}}`,
			want:   changed, known: true,
		},
		"Ready": {
			reason: "A ready object is not waited on.",
			json:   `{"metadata": {"creationTimestamp": "2026-12-07T08:00:00Z"}, "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-07T09:30:00Z"}]}}`,
		},
		"Unknown": {
			reason: "An object that says neither, as in a render's observed state, is not known to wait.",
			json:   `{"metadata": {"name": "chart"}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, known := ObjectOf(resource.MustStructJSON(tc.json)).NotReadySince()
			if !got.Equal(tc.want) || known != tc.known {
				t.Errorf("%s\nNotReadySince() = %v, %t; want %v, %t", tc.reason, got, known, tc.want, tc.known)
			}
		})
	}
}
