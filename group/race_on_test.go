//go:build race

package group

// raceEnabled: this test binary was built with -race, under which every
// test needs several times the CPU (see TestMain).
const raceEnabled = true
