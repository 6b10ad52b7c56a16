package store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// ErrUnconfirmed is wrapped by the error of a conditional write the server
// acknowledged but whose bytes it does not hold: the write is never
// reported as made.
var ErrUnconfirmed = errors.New("the server acknowledged a write it does not hold")

// writeAnswer is what the answer to a conditional PUT said that can prove
// the bytes landed: the HTTP guard (driver_http.go) records the headers of
// every 2xx answer to a PUT or POST sent under a context carrying one.
type writeAnswer struct {
	mu     sync.Mutex // protects the following; a leaf
	header http.Header
}

type writeAnswerKey struct{}

func withWriteAnswer(ctx context.Context, a *writeAnswer) context.Context {
	return context.WithValue(ctx, writeAnswerKey{}, a)
}

// noteWriteAnswer records resp's headers in the request's writeAnswer, if
// it carries one and resp answers a write with success.
func noteWriteAnswer(r *http.Request, resp *http.Response) {
	a, ok := r.Context().Value(writeAnswerKey{}).(*writeAnswer)
	if !ok || resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 || (r.Method != http.MethodPut && r.Method != http.MethodPost) {
		return
	}
	a.mu.Lock()
	a.header = resp.Header.Clone()
	a.mu.Unlock()
}

// proves reports whether the answer names the MD5 of data: S3's ETag of a
// single-part PUT (the quoted hex MD5), Azure's Content-MD5 and GCS's
// X-Goog-Hash md5= (base64).
func (a *writeAnswer) proves(data []byte) bool {
	a.mu.Lock()
	h := a.header
	a.mu.Unlock()
	if h == nil {
		return false
	}
	sum := md5.Sum(data)
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	if strings.Trim(h.Get("ETag"), `"`) == hex.EncodeToString(sum[:]) || h.Get("Content-MD5") == b64 {
		return true
	}
	for _, v := range h.Values("X-Goog-Hash") {
		for _, part := range strings.Split(v, ",") {
			if strings.TrimSpace(part) == "md5="+b64 {
				return true
			}
		}
	}
	return false
}

// confirmWrite is asked after a conditional write of data to key, which
// replaced the version base ("" for a create-only write), succeeded: nil
// when the answer proves the bytes (its MD5 is theirs); else one GET reads
// the key back, and the write is confirmed when the key holds data, or
// holds a version other than base (a writer replaced it since, by a write
// conditional on ours: the conditions probe showed the server honours
// them). A key still at base, or gone after a create-only write, was not
// written, whatever the server answered: ErrUnconfirmed.
func (s *Store) confirmWrite(ctx context.Context, key string, data []byte, base string, a *writeAnswer) error {
	if a.proves(data) {
		s.confirmed.proved.Add(1)
		return nil
	}
	s.confirmed.readBack.Add(1)
	got, tok, err := s.readWithToken(ctx, key, nil)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: %q is not there after its write", ErrUnconfirmed, key)
	case err != nil:
		return fmt.Errorf("read back %q to confirm a write: %w", key, err)
	case bytes.Equal(got, data):
		return nil
	case base != "" && tok == base:
		return fmt.Errorf("%w: %q is still at the version the write replaced", ErrUnconfirmed, key)
	}
	return nil
}

func md5hex(data []byte) string { s := md5.Sum(data); return hex.EncodeToString(s[:]) }
func md5b64(data []byte) string { s := md5.Sum(data); return base64.StdEncoding.EncodeToString(s[:]) }

// WritesConfirmed is how many conditional writes were confirmed by their
// answer (its MD5 is the bytes') and how many by reading back.
func (s *Store) WritesConfirmed() (byAnswer, byReadBack int64) {
	return s.confirmed.proved.Load(), s.confirmed.readBack.Load()
}
