//go:build !race

package group

// raceEnabled: this test binary was built with -race (see TestMain).
const raceEnabled = false
