//go:build !race

package fnserve

// raceEnabled: the test binary lacks the race detector.
const raceEnabled = false
