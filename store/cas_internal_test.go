package store

import (
	"testing"
	"time"
)

// TestBackoffSpreadsOverTheContendersWhenTriesAreSlow: the waits of a lost
// compare-and-swap spread over at least backoffSlots round trips, however
// long a try takes. Under a fixed 2 s cap a try of a starved server (~1 s)
// left 2 slots for 16 updaters, and one lost 32 times in a row (CI:
// TestAzureConformance/CASUnderContention under a load of 30).
func TestBackoffSpreadsOverTheContendersWhenTriesAreSlow(t *testing.T) {
	for _, rtt := range []time.Duration{0, 5 * time.Millisecond, 100 * time.Millisecond, time.Second, 3 * time.Second} {
		base := max(rtt, time.Millisecond)
		for n := 1; n <= MaxCASTries; n++ {
			ceil := backoffCeil(n, rtt)
			if want := min(base<<min(n, 16), base*backoffSlots); ceil < want {
				t.Errorf("rtt %v, try %d: waits up to %v, want at least %v (%d round trips, or the doubling)", rtt, n, ceil, want, backoffSlots)
			}
			if ceil > max(maxBackoff, base*backoffSlots) {
				t.Errorf("rtt %v, try %d: waits up to %v, past the cap %v", rtt, n, ceil, max(maxBackoff, base*backoffSlots))
			}
		}
	}
}
