package store

// One get: every read of a key's body — Get, GetAdmitted, GetStream, and
// the records' reads with their version token (readWithToken: ReadRecord,
// readIfChanged, the confirmation, the probe) — is one call of get, whose
// options say what the read asks beyond the key's bytes within its cap.
// get sends the GET as every read is sent (s.read: a request slot, the
// per-request timeout, the retries, one GET in Counts), on the lean path
// (leanget.go) or through the SDK, and reads the body as every read does
// (readAdmitted: the cap, the admission, readCapped).

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"gocloud.dev/blob"
)

// keyCap, as getOpts.limit, is the key's own cap (format.ReadCap).
const keyCap = -1

// getOpts are the options of one get.
type getOpts struct {
	// limit is the cap: at most limit bytes, never more than the key's
	// own (format.ReadCap); keyCap for the key's own. A body over it is
	// refused before it is read when the answer declares its size, else
	// one byte past it (ErrTooLarge, final).
	limit int64
	// admit, if not nil, is asked with the declared size before a byte of
	// the body is read, and with each slab of a body of no declared size
	// (readCapped): its error ends the read (final), its releases are
	// called when the body was read or the attempt failed.
	admit func(size int64) (release func(), err error)
	// lean reads on the store's lean path where it has one and the key is
	// sent as it is (leanKey); else through the SDK.
	lean bool
	// cond is the driver's condition on the read (S3 If-None-Match, GCS
	// generation; nil: none). A conditional read takes the SDK path.
	cond *blob.ReaderOptions
	// token asks the driver's change token of what was read (a record's
	// Version). A read with a token takes the SDK path.
	token bool
	// stream, if not nil, is handed the body as it arrives instead of the
	// body being read whole (GetStream; the SDK path): called again from
	// the body's start when an attempt is sent again.
	stream func(body io.Reader) error
}

// got is what one get read.
type got struct {
	data  []byte    // the body (nil for a stream)
	mod   time.Time // the key's Last-Modified as the answer gave it; zero if none
	token string    // the change token, when asked
	// streamErr is stream's own error (never retried; the read's error,
	// if any, comes first).
	streamErr error
}

// get is one GET of key with the options o, sent again while it fails
// transiently (s.read). Its error is not wrapped: the caller names the
// operation and the key.
func (s *Store) get(ctx context.Context, key string, o getOpts) (got, error) {
	if c := format.ReadCap(key); o.limit < 0 || o.limit > c {
		o.limit = c
	}
	one := s.getSDK
	if o.lean && o.cond == nil && !o.token && o.stream == nil && s.leanReads(key) {
		one = s.getLean // leanget.go
	}
	var g got
	err := s.read(ctx, &s.n.get, func(ctx context.Context) (err error) {
		g, err = one(ctx, key, o)
		return err
	})
	if err != nil {
		return got{}, err
	}
	return g, nil
}

// getSDK is one attempt of get through the bucket (the backend's SDK).
func (s *Store) getSDK(ctx context.Context, key string, o getOpts) (g got, err error) {
	if o.stream != nil {
		g.streamErr, err = s.streamBody(ctx, key, o.limit, o.stream) // getstream.go
		return g, err
	}
	r, err := s.bucket.NewReader(ctx, key, o.cond)
	if err != nil {
		return got{}, err
	}
	defer r.Close()
	if g.data, err = readAdmitted(r, r.Size(), o); err != nil {
		return got{}, err
	}
	g.mod = r.ModTime()
	if o.token {
		if g.token, err = s.drv.changeToken(r, g.data); err != nil {
			return got{}, err
		}
	}
	return g, nil
}

// readAdmitted reads a body whose answer declared size bytes (S3's SDK
// says 0, the lean path -1, when it did not) within o.limit: refused
// before a byte is read when size is over it, admitted with size (o.admit)
// before the body, then read by readCapped, which asks o.admit again for
// each slab past a declared size.
func readAdmitted(body io.Reader, size int64, o getOpts) ([]byte, error) {
	if size > o.limit {
		return nil, tooLarge(size, o.limit)
	}
	if o.admit != nil {
		release, err := o.admit(size)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return readCapped(body, size, o.limit, o.admit) // readcap.go
}

// Get reads a key (one GET), within its cap (format.ReadCap: a body over
// it fails with ErrTooLarge, before it is read when the answer says its
// size).
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	g, err := s.get(ctx, key, getOpts{limit: keyCap})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return g.data, nil
}

// GetAdmitted is Get with an admission, on the store's read path (ReadPath:
// one lean GET on S3, GCS and Azure where the store was opened so), that
// also returns the key's own Last-Modified as the same answer gave it (the
// file's mtime on a file store; the zero time if the backend did not say):
// no extra request. Once the answer says the body's size (-1 or, on S3's
// SDK path, 0 if it does not), before a byte of it is read, admit is
// called with it, and with each slab of a body of no declared size. Its
// error ends the read (not retried) and is returned wrapped; else the
// release it returns is called when the body was read or the attempt
// failed. A caller bounding what it holds (the index's readers' budget)
// refuses a body before it reads it. admit may be nil.
func (s *Store) GetAdmitted(ctx context.Context, key string, admit func(size int64) (release func(), err error)) ([]byte, time.Time, error) {
	g, err := s.get(ctx, key, getOpts{limit: keyCap, admit: admit, lean: true})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("get %q: %w", key, err)
	}
	return g.data, g.mod, nil
}

// readWithToken reads a key and returns the backend's version token for
// it, the read conditional on cond (nil: none). Errors are mapped (mapErr)
// and not wrapped; a 304 of a conditional read is not retried.
func (s *Store) readWithToken(ctx context.Context, key string, cond *blob.ReaderOptions) ([]byte, string, error) {
	g, err := s.get(ctx, key, getOpts{limit: keyCap, cond: cond, token: true})
	if err != nil {
		return nil, "", err
	}
	return g.data, g.token, nil
}
