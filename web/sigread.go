package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// The signature bytes serve sends are read here, through the index, on
// the request's context: one copy per version, shared by every request on
// it within the readers' budget (index.OpenSig); each function gives the
// bytes back before it returns, or through release.

// sigContent returns a signature's (or another entry's, empty) bytes to
// serve and their ETag (the first 128 bits of their SHA-256); release gives
// the bytes back once they are sent.
// mod is their key's own Last-Modified (index.SigHandle.ModTime; zero when
// not known).
func (h *handler) sigContent(ctx context.Context, e format.Entry) (content io.ReadSeeker, etag string, mod time.Time, release func(), err error) {
	sh, err := h.ix.OpenSig(ctx, e)
	if err != nil {
		return nil, "", time.Time{}, nil, err
	}
	data := sh.Bytes()
	sum := sha256.Sum256(data)
	return bytes.NewReader(data), `"` + hex.EncodeToString(sum[:16]) + `"`, sh.ModTime(), sh.Release, nil
}

// sigPrefix returns a signature's size, its first SigPagePrefix bytes
// (a copy: the page holds no more of it while it is written) and its
// key's time (as sigContent).
func (h *handler) sigPrefix(ctx context.Context, e format.Entry) (int64, []byte, time.Time, error) {
	sh, err := h.ix.OpenSig(ctx, e)
	if err != nil {
		return 0, nil, time.Time{}, err
	}
	defer sh.Release()
	data := sh.Bytes()
	return int64(len(data)), bytes.Clone(data[:min(len(data), SigPagePrefix)]), sh.ModTime(), nil
}
