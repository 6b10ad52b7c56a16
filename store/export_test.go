package store

import (
	"context"
	"fmt"
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

// GetAdmittedAtMost is GetAdmitted with the cap limit instead of the
// key's.
func GetAdmittedAtMost(s *Store, ctx context.Context, key string, limit int64, admit func(int64) (func(), error)) ([]byte, time.Time, error) {
	g, err := s.get(ctx, key, getOpts{limit: limit, admit: admit, lean: true})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get %q: %w", key, err)
	}
	return g.data, g.mod, nil
}

// GetAtMost is Get with the cap limit instead of the key's (min of both).
func GetAtMost(s *Store, ctx context.Context, key string, limit int64) ([]byte, error) {
	g, err := s.get(ctx, key, getOpts{limit: max(limit, 0)})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return g.data, nil
}

// SpoolBufsHeld is how many buffers of streamed bodies are held.
func SpoolBufsHeld() int64 { return spoolBufsHeld.Load() }
