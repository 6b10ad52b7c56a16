package store

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is wrapped by the error of a read refused by its cap.
var ErrTooLarge = errors.New("over its size cap")

// tooLarge is the error of a read refused by its cap (the caller's error
// names the key); size < 0 means "more than max" (the size was not known
// before reading).
func tooLarge(size, max int64) error {
	if size < 0 {
		return fmt.Errorf("more than %d bytes, the cap for such a key: %w", max, ErrTooLarge)
	}
	return fmt.Errorf("%d bytes, over the cap of %d for such a key: %w", size, max, ErrTooLarge)
}

// Slabs of a body whose size was not declared (or that runs past what was
// declared): the first firstSlab bytes, each next one twice the last, up
// to maxSlab. A flooded body costs at most its cap plus one slab.
const (
	firstSlab = 32 << 10
	maxSlab   = 1 << 20
)

// readCapped reads r, a body whose response declared size bytes (0 or
// less: not declared; S3's SDK reports an undeclared length as 0), to its
// end, at most limit bytes: one byte more fails with tooLarge. It holds
// no more than what it read plus one slab, and never grows a buffer by
// copying it: a declared size is read into one buffer of that size (plus
// the byte that shows the end), and what comes past it, or a body of no
// declared size, into slabs (firstSlab doubling up to maxSlab), joined
// once at the end (for that moment the body is held twice; a body of one
// slab is not copied).
//
// admit, if not nil, is asked for each slab before it is read (the
// declared size was asked before): its error ends the read as it is (not
// wrapped: final), and the releases it returned are called when
// readCapped returns. A read error is wrapped in errBodyRead (retried).
func readCapped(r io.Reader, size, limit int64, admit func(int64) (func(), error)) (data []byte, err error) {
	var releases []func()
	defer func() {
		for _, rel := range releases {
			rel()
		}
	}()
	var slabs [][]byte
	var total int64
	next := int64(firstSlab)
	if size > 0 {
		next = min(size, limit) + 1
	}
	first := true
	for {
		n := min(next, limit+1-total)
		if n <= 0 {
			return nil, tooLarge(-1, limit)
		}
		if admit != nil && !(first && size > 0) {
			rel, err := admit(n)
			if err != nil {
				return nil, err
			}
			releases = append(releases, rel)
		}
		first = false
		slab := make([]byte, n)
		k, eof, err := fill(r, slab)
		total += int64(k)
		if k > 0 {
			slabs = append(slabs, slab[:k])
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errBodyRead, err)
		}
		if total > limit {
			return nil, tooLarge(-1, limit)
		}
		if eof {
			break
		}
		next = min(max(n*2, firstSlab), maxSlab)
	}
	switch len(slabs) {
	case 0:
		return []byte{}, nil
	case 1:
		return slabs[0], nil
	}
	if admit != nil {
		rel, err := admit(total)
		if err != nil {
			return nil, err
		}
		releases = append(releases, rel)
	}
	data = make([]byte, 0, total)
	for i, s := range slabs {
		data = append(data, s...)
		slabs[i] = nil
	}
	return data, nil
}

// fill reads r into buf until buf is full or r ends (eof).
func fill(r io.Reader, buf []byte) (n int, eof bool, err error) {
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}
