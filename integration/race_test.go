//go:build race

package integration

// raceEnabled: the test binary runs under the race detector, and so does
// the oxyfs binary it builds.
const raceEnabled = true
