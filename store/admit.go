package store

import (
	"context"
	"fmt"
)

// GetAdmitted is Get with an admission: once the response says the body's
// size (-1 if it does not), before a byte of it is read, admit is called
// with it. Its error ends the read (not retried) and is returned wrapped;
// else the release it returns is called when the body was read or the
// attempt failed. A caller bounding what it holds (the index's readers'
// budget) refuses a body before it reads it.
func (s *Store) GetAdmitted(ctx context.Context, key string, admit func(size int64) (release func(), err error)) ([]byte, error) {
	var data []byte
	err := s.read(ctx, &s.n.get, func(ctx context.Context) (err error) {
		data, err = s.readBody(ctx, key, nil, admit, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return data, nil
}
