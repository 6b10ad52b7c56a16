package index

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// A KeyStream yields entry keys in ascending byte order, one at a time: an
// entry list as its body arrives (ListKeys), a folded view's set
// (ViewMark.Keys), a sorted slice (SliceKeys), or the union of several
// (UnionKeys). DiffKeys compares two of them holding one key of each at a
// time, so comparing lists of any size within the caps takes the memory of
// the streams alone (ListKeys: a few batches of keys).
type KeyStream interface {
	// Next returns the next key, valid until the next call, or false at
	// the end or on an error (Err).
	Next() ([]byte, bool)
	// Err is the error that ended the stream, if any.
	Err() error
	// Close releases the stream; it may be called before the end and
	// more than once.
	Close()
}

// ErrKeyOrder is the error of a stream whose keys do not ascend strictly.
var ErrKeyOrder = errors.New("keys out of order")

// sliceKeys is SliceKeys' stream.
type sliceKeys struct {
	keys []string
	i    int
	buf  []byte
}

// SliceKeys streams keys, which it sorts and dedups in place.
func SliceKeys(keys []string) KeyStream {
	slices.Sort(keys)
	return &sliceKeys{keys: slices.Compact(keys)}
}

func (s *sliceKeys) Next() ([]byte, bool) {
	if s.i >= len(s.keys) {
		return nil, false
	}
	s.buf = append(s.buf[:0], s.keys[s.i]...)
	s.i++
	return s.buf, true
}

func (s *sliceKeys) Err() error { return nil }
func (s *sliceKeys) Close()     { s.i = len(s.keys) }

// unionKeys is UnionKeys' stream.
type unionKeys struct {
	in   []KeyStream
	head [][]byte // the current key of each input; nil when it ended
	last []byte   // the key returned last
	had  bool
	err  error
	init bool
}

// UnionKeys streams the union of streams, each key once. It fails if one
// of them does, or if one's keys do not ascend (ErrKeyOrder). Close closes
// them all.
func UnionKeys(streams ...KeyStream) KeyStream {
	return &unionKeys{in: streams, head: make([][]byte, len(streams))}
}

// advance moves input i to its next key, copied: the input may reuse its
// buffer.
func (u *unionKeys) advance(i int) {
	k, ok := u.in[i].Next()
	if !ok {
		if err := u.in[i].Err(); err != nil && u.err == nil {
			u.err = err
		}
		u.head[i] = nil
		return
	}
	if u.head[i] != nil && bytes.Compare(k, u.head[i]) <= 0 && u.err == nil {
		u.err = fmt.Errorf("%w: %q after %q", ErrKeyOrder, termsafe.Value(string(k)), termsafe.Value(string(u.head[i])))
	}
	u.head[i] = append(u.head[i][:0], k...)
	if len(u.head[i]) == 0 {
		u.head[i] = []byte{} // an empty key is a key: not nil
	}
}

func (u *unionKeys) Next() ([]byte, bool) {
	if !u.init {
		u.init = true
		for i := range u.in {
			u.advance(i)
		}
	}
	for u.err == nil {
		min := -1
		for i, h := range u.head {
			if h != nil && (min < 0 || bytes.Compare(h, u.head[min]) < 0) {
				min = i
			}
		}
		if min < 0 {
			return nil, false
		}
		u.last = append(u.last[:0], u.head[min]...)
		for i, h := range u.head {
			if h != nil && bytes.Equal(h, u.last) {
				u.advance(i)
			}
		}
		if u.err == nil {
			return u.last, true
		}
	}
	return nil, false
}

func (u *unionKeys) Err() error { return u.err }

func (u *unionKeys) Close() {
	for _, s := range u.in {
		s.Close()
	}
}

// DiffOp says on which side of a comparison a key is.
type DiffOp int8

const (
	// DiffRemoved is a key the old side has and the new one lacks.
	DiffRemoved DiffOp = -1
	// DiffSame is a key both sides have.
	DiffSame DiffOp = 0
	// DiffAdded is a key the new side has and the old one lacks.
	DiffAdded DiffOp = 1
)

// DiffKeys walks old and new together and calls fn with every key one of
// them lacks (DiffAdded, DiffRemoved), in key order, and, when same is
// true, with every key both have (DiffSame). The key passed is valid only
// during the call. It stops at fn's first error, a stream's, or keys that
// do not ascend strictly (ErrKeyOrder), and returns it; it closes neither
// stream.
func DiffKeys(old, new KeyStream, same bool, fn func(op DiffOp, key []byte) error) error {
	var a, b, pa, pb []byte
	next := func(s KeyStream, prev *[]byte, side string) ([]byte, bool, error) {
		k, ok := s.Next()
		if !ok {
			if err := s.Err(); err != nil {
				return nil, false, fmt.Errorf("%s: %w", side, err)
			}
			return nil, false, nil
		}
		if *prev != nil && bytes.Compare(k, *prev) <= 0 {
			return nil, false, fmt.Errorf("%s: %w: %q after %q", side, ErrKeyOrder, termsafe.Value(k), termsafe.Value(*prev))
		}
		*prev = append((*prev)[:0], k...)
		if *prev == nil {
			*prev = []byte{}
		}
		return *prev, true, nil
	}
	a, okA, err := next(old, &pa, "old")
	if err != nil {
		return err
	}
	b, okB, err := next(new, &pb, "new")
	if err != nil {
		return err
	}
	for okA || okB {
		c := 0
		switch {
		case !okA:
			c = 1
		case !okB:
			c = -1
		default:
			c = bytes.Compare(a, b)
		}
		switch {
		case c < 0:
			err = fn(DiffRemoved, a)
		case c > 0:
			err = fn(DiffAdded, b)
		case same:
			err = fn(DiffSame, a)
		}
		if err != nil {
			return err
		}
		if c <= 0 {
			if a, okA, err = next(old, &pa, "old"); err != nil {
				return err
			}
		}
		if c >= 0 {
			if b, okB, err = next(new, &pb, "new"); err != nil {
				return err
			}
		}
	}
	return nil
}
