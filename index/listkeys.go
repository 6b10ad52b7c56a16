package index

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// listKeysBatch is how many keys a list's decoder hands over at once, and
// listKeysAhead how many batches it may decode ahead of the reader: what a
// ListKeys stream holds is at most (listKeysAhead+2) batches of keys (a
// batch of 79-byte signature keys: ~80 KiB), and what store.GetStream has
// read of the body and the decoder has not (at most the body).
const (
	listKeysBatch = 1024
	listKeysAhead = 2
)

// listKeyStream is ListKeys' stream: a goroutine decodes the list as its body
// arrives and hands its keys over in batches.
type listKeyStream struct {
	cancel context.CancelFunc
	ch     chan [][]byte // batches; closed at the end
	done   chan struct{} // closed once the goroutine returned; err is set then
	err    error         // read after done
	batch  [][]byte
	i      int
	closed bool
}

// ListKeys streams the keys of the entry list name (pack-<id>.entries or
// -part) from one GET of it (store.GetStream), decoded as its body
// arrives: the list is never held whole. A list that is not there, over
// format.MaxEntryListBytes compressed or its caps decoded, or does not
// decode, ends the stream with an error naming it. Keys are not checked
// against the key rules (format.ParseKey): the caller says what a
// malformed one is.
func ListKeys(ctx context.Context, st *store.Store, name string) KeyStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &listKeyStream{cancel: cancel, ch: make(chan [][]byte, listKeysAhead), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		sent := 0 // keys handed over: a body read again (a retried GET) skips them
		err := st.GetStream(ctx, name, format.MaxEntryListBytes, func(body io.Reader) error {
			seen := 0
			var b [][]byte
			flush := func() error {
				if len(b) == 0 {
					return nil
				}
				select {
				case s.ch <- b:
				case <-ctx.Done():
					return ctx.Err()
				}
				sent += len(b) // handed over: not again if the body is read again
				b = nil
				return nil
			}
			_, _, err := format.DecodeEntryListFrom(body, func(key []byte) error {
				seen++
				if seen <= sent {
					return nil
				}
				b = append(b, append([]byte(nil), key...))
				if len(b) == listKeysBatch {
					return flush()
				}
				return nil
			})
			if err != nil {
				return err
			}
			return flush()
		})
		if err != nil {
			s.err = fmt.Errorf("read entry list %q: %w", name, err)
			if errors.Is(err, store.ErrNotFound) {
				s.err = fmt.Errorf("read entry list %q: %w (a collection deletes a retired list an hour after it was retired)", name, err)
			}
		}
	}()
	return s
}

func (s *listKeyStream) Next() ([]byte, bool) {
	for s.i >= len(s.batch) {
		if s.closed {
			return nil, false
		}
		b, ok := <-s.ch
		if !ok {
			<-s.done
			return nil, false
		}
		s.batch, s.i = b, 0
	}
	k := s.batch[s.i]
	s.i++
	return k, true
}

func (s *listKeyStream) Err() error {
	select {
	case <-s.done:
		if s.closed {
			return nil
		}
		return s.err
	default:
		return nil
	}
}

func (s *listKeyStream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	for range s.ch { // let the goroutine end
	}
	<-s.done
	s.batch = nil
}
