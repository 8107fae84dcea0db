//go:build !race

package conditions_test

// raceEnabled is whether the race detector is on: it slows matching
// several times, past the wall-clock bounds some tests assert.
const raceEnabled = false
