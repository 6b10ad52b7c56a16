package store

import (
	"context"
	"time"
)

// IdleTransport is idleTransport, for the tests of package store_test.
var IdleTransport = idleTransport

// SetReprobeAfter sets how long a conditions verdict is kept, until the
// test ends.
func SetReprobeAfter(t interface{ Cleanup(func()) }, d time.Duration) {
	old := reprobeAfter
	reprobeAfter = d
	t.Cleanup(func() { reprobeAfter = old })
}

// GetAdmittedAtMost is GetAdmittedAt with the cap limit instead of the
// key's.
func GetAdmittedAtMost(s *Store, ctx context.Context, key string, limit int64, admit func(int64) (func(), error)) ([]byte, time.Time, error) {
	return s.getAdmittedAt(ctx, key, limit, admit)
}
