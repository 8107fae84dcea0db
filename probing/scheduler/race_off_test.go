//go:build !race

package scheduler_test

// raceEnabled is whether the race detector is on: it shadows every
// allocation, so heap figures measured under it mean nothing.
const raceEnabled = false
