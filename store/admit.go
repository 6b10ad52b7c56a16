package store

import (
	"context"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// GetAdmitted is Get with an admission: once the response says the body's
// size (-1 if it does not), before a byte of it is read, admit is called
// with it. Its error ends the read (not retried) and is returned wrapped;
// else the release it returns is called when the body was read or the
// attempt failed. A caller bounding what it holds (the index's readers'
// budget) refuses a body before it reads it.
func (s *Store) GetAdmitted(ctx context.Context, key string, admit func(size int64) (release func(), err error)) ([]byte, error) {
	data, _, err := s.GetAdmittedAt(ctx, key, admit)
	return data, err
}

// GetAdmittedAt is GetAdmitted that also returns the key's own
// Last-Modified as the same response gave it (the file's mtime on a file
// store; the zero time if the backend did not say): no extra request. On
// S3, GCS and Azure it is one lean GET where the store was opened so
// (leanget.go, ReadPath).
func (s *Store) GetAdmittedAt(ctx context.Context, key string, admit func(size int64) (release func(), err error)) ([]byte, time.Time, error) {
	return s.getAdmittedAt(ctx, key, format.ReadCap(key), admit) // leanget.go
}
