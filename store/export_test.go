package store

import "time"

// IdleTransport is idleTransport, for the tests of package store_test.
var IdleTransport = idleTransport

// SetReprobeAfter sets how long a conditions verdict is kept, until the
// test ends.
func SetReprobeAfter(t interface{ Cleanup(func()) }, d time.Duration) {
	old := reprobeAfter
	reprobeAfter = d
	t.Cleanup(func() { reprobeAfter = old })
}
