package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

func TestVersionPrefersTheStampThenTheModuleVersion(t *testing.T) {
	cases := map[string]struct {
		stamped string
		info    *debug.BuildInfo
		ok      bool
		want    string
	}{
		"StampedByXpkgWins":        {stamped: "v0.2.0", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, ok: true, want: "v0.2.0"},
		"GoInstallOfATagReportsIt": {stamped: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, ok: true, want: "v0.1.0"},
		"ABuildFromACloneIsDev":    {stamped: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, ok: true, want: "dev"},
		"NoBuildInfoIsDev":         {stamped: "dev", want: "dev"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := versionOf(tc.stamped, tc.info, tc.ok); got != tc.want {
				t.Errorf("versionOf(%q, %+v, %t) = %q, want %q", tc.stamped, tc.info, tc.ok, got, tc.want)
			}
		})
	}
}

func TestVersionFlagPrintsTheVersionAndExits(t *testing.T) {
	var out bytes.Buffer
	exited := -1
	parser, err := kong.New(&CLI{}, append(cliOptions(), kong.Writers(&out, &out), kong.Exit(func(code int) { exited = code; panic(exitPanic{}) }))...)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(exitPanic); !ok {
					panic(r)
				}
			}
		}()
		_, _ = parser.Parse([]string{"--version"})
	}()
	if exited != 0 {
		t.Errorf("--version exited with %d, want 0", exited)
	}
	if got, want := strings.TrimSpace(out.String()), Version(); got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}

// exitPanic stops the parse where kong would have exited the process.
type exitPanic struct{}
