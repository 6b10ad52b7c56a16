package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/oxyfs/oxyfs/internal/lib/hugepage"
)

// GetStream is one GET of key whose body fn reads as it arrives, rather
// than once it has all arrived: a reader decodes a large record (an entry
// list) while the rest of it is still on the wire.
//
// The body is read by a goroutine of its own as fast as the server sends
// it, into pieces fn reads in order, so the request ends when the transfer
// does however slowly fn reads (the store's per-request timeout bounds the
// transfer, not fn), and what fn has not read yet is held, at most the
// whole body. A body over limit bytes (or over ReadCap(key), if lower) is
// refused as Get refuses one over its cap: before fn is called when the
// response says its size, else fn's reader fails past the cap and
// GetStream returns an error wrapping ErrTooLarge.
//
// A request that fails transiently is sent again, as every read is, and
// that includes a body that fails midway: fn is then called again with the
// new body, from its start, and must start over (drop what it made of the
// first). fn's own error ends the GET and is returned wrapped with the key;
// it is never retried. fn's reader returns io.EOF at the body's end, and a
// body that failed midway as its error (fn need not tell it apart: its
// error is then not the one returned).
func (s *Store) GetStream(ctx context.Context, key string, limit int64, fn func(body io.Reader) error) error {
	g, err := s.get(ctx, key, getOpts{limit: max(limit, 0), stream: fn}) // get.go
	if err == nil {
		err = g.streamErr
	}
	if err != nil {
		return fmt.Errorf("get %q: %w", key, err)
	}
	return nil
}

// streamBody is one attempt of GetStream: the request's error (retried if
// transient), else fn's.
func (s *Store) streamBody(ctx context.Context, key string, limit int64, fn func(io.Reader) error) (fnErr, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if n := r.Size(); n > limit {
		return nil, tooLarge(n, limit)
	}
	sp := &spool{size: r.Size()}
	sp.cond = sync.NewCond(&sp.mu)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sp.fill(r, limit)
	}()
	fnErr = fn(sp)
	// fn is done with the body: stop a transfer it left unfinished (an
	// error of its own) and wait until nothing reads r.
	sp.quit()
	cancel()
	<-done
	switch {
	case sp.err == nil, errors.Is(sp.err, errSpoolQuit):
		return fnErr, nil
	case errors.Is(sp.err, errSpoolLarge):
		return nil, tooLarge(-1, limit)
	}
	return nil, fmt.Errorf("%w: %w", errBodyRead, sp.err)
}

// spool hands a body over from the goroutine that reads it (fill) to the
// one that consumes it (Read), piece by piece, in order.
type spool struct {
	size int64 // as the response declared (-1: unknown)

	mu     sync.Mutex
	cond   *sync.Cond
	pieces []spoolPiece // read from the body, not yet consumed
	ended  bool         // fill returned: err says why
	err    error        // nil: the body's end (io.EOF)
	stop   bool         // the consumer is gone
}

// spoolPiece is one Read of the body: b, the part of buf it filled (buf
// is held until b is consumed or dropped: slab.go).
type spoolPiece struct {
	b   []byte
	buf *spoolBuf
}

// Internal ends of a spool besides the body's own error.
var (
	errSpoolQuit  = fmt.Errorf("the reader stopped reading the body")
	errSpoolLarge = fmt.Errorf("body over the cap")
)

// spoolSlab is the size of the buffers the body is read into (spoolBuf,
// slab.go): each Read of the body fills the next part of one, and that
// part is the piece handed over (no copy). A huge page.
const spoolSlab = hugepage.Size

// fill reads r to its end (or an error, or past limit) into pieces.
func (sp *spool) fill(r io.Reader, limit int64) {
	var buf *spoolBuf // the buffer read into, held by fill
	var slab []byte   // its part not filled yet
	var total int64
	end := func(err error) {
		sp.mu.Lock()
		sp.ended, sp.err = true, err
		if buf != nil {
			buf.release()
		}
		sp.cond.Broadcast()
		sp.mu.Unlock()
	}
	for {
		if len(slab) < spoolSlab/16 {
			n := int64(spoolSlab)
			if sp.size >= 0 {
				n = min(n, max(sp.size-total+1, 512)) // the last slab no larger than what is left
			}
			next := newSpoolBuf(int(n))
			if buf != nil {
				sp.mu.Lock()
				buf.release()
				sp.mu.Unlock()
			}
			buf, slab = next, next.b
		}
		n, err := r.Read(slab)
		if n > 0 {
			total += int64(n)
			if total > limit {
				end(errSpoolLarge)
				return
			}
			sp.mu.Lock()
			if sp.stop {
				sp.mu.Unlock()
				end(errSpoolQuit)
				return
			}
			buf.refs++
			sp.pieces = append(sp.pieces, spoolPiece{b: slab[:n:n], buf: buf})
			sp.cond.Broadcast()
			sp.mu.Unlock()
			slab = slab[n:]
		}
		if err == io.EOF {
			end(nil)
			return
		}
		if err != nil {
			sp.mu.Lock()
			stopped := sp.stop
			sp.mu.Unlock()
			if stopped {
				err = errSpoolQuit // canceled because the consumer left
			}
			end(err)
			return
		}
	}
}

// Read is the consumer's side.
func (sp *spool) Read(p []byte) (int, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for len(sp.pieces) == 0 && !sp.ended {
		sp.cond.Wait()
	}
	if len(sp.pieces) == 0 {
		if sp.err == nil {
			return 0, io.EOF
		}
		return 0, sp.err
	}
	first := &sp.pieces[0]
	n := copy(p, first.b)
	if n < len(first.b) {
		first.b = first.b[n:]
		return n, nil
	}
	first.buf.release()
	*first = spoolPiece{}
	sp.pieces = sp.pieces[1:]
	return n, nil
}

// quit tells fill the consumer is gone and drops what it had not read.
func (sp *spool) quit() {
	sp.mu.Lock()
	sp.stop = true
	for _, p := range sp.pieces {
		p.buf.release()
	}
	sp.pieces = nil
	sp.mu.Unlock()
}
