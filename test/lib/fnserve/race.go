//go:build race

package fnserve

// raceEnabled: the test binary has the race detector, and so does the
// function's binary it builds, so that -race covers the function's own code.
const raceEnabled = true
