package store

import (
	"context"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
)

// GetAtMost is Get with a lower cap: a body over limit bytes (or over
// ReadCap(key), if that is lower) is refused as Get refuses one over its
// cap, before it is read when the response says its size. A reader that
// reserved memory for a key from a listing's size reads it with that size
// as the cap, so a listing that understates a size costs no more than the
// reservation.
func (s *Store) GetAtMost(ctx context.Context, key string, limit int64) ([]byte, error) {
	limit = min(max(limit, 0), format.ReadCap(key))
	var data []byte
	err := s.read(ctx, &s.n.get, func(ctx context.Context) (err error) {
		data, err = s.readBodyAtMost(ctx, key, limit, nil, nil, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return data, nil
}
