package store

import (
	"bytes"
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
	"io"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/memtest"
)

// TestGetAtMostRefusesABodyOverItsLimit: a 1 GiB sparse list read with a
// limit of 100 bytes is refused from its size, before its body; one within
// its limit reads.
func TestGetAtMostRefusesABodyOverItsLimit(t *testing.T) {
	big := format.EntryListName(string(bytes.Repeat([]byte("a"), 64)), false)
	small := format.EntryListName(string(bytes.Repeat([]byte("b"), 64)), false)
	st := sparseStore(t, map[string]int64{big: 1 << 30, small: 100})
	ctx := context.Background()
	var err error
	peak := memtest.Peak(func() { _, err = GetAtMost(st, ctx, big, 100) })
	if !errors.Is(err, ErrTooLarge) || peak > 16*memtest.MiB {
		t.Errorf("GetAtMost(1 GiB, 100) = %v, %d MiB of heap; want ErrTooLarge and no body read", err, peak/memtest.MiB)
	}
	if data, err := GetAtMost(st, ctx, small, 100); err != nil || len(data) != 100 {
		t.Errorf("GetAtMost(100 bytes, 100) = %d bytes, %v; want the 100", len(data), err)
	}
	if _, err := GetAtMost(st, ctx, small, 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("GetAtMost(100 bytes, 99) = %v; want ErrTooLarge", err)
	}
}

// TestEveryReadIsOneGET: each read of a key's body (get's callers) sends
// one GET, counted once, for a key that is there and for one that is not;
// a key that is not there is ErrNotFound, named in the error; a body over
// its cap is refused before the admission is asked.
func TestEveryReadIsOneGET(t *testing.T) {
	const sig, big = "sig/ab/cdef/carol", "sig/ab/cdef/bob"
	st := sparseStore(t, map[string]int64{sig: 100, big: format.MaxEntryBytes + 1, format.JournalKey: 10})
	ctx := context.Background()
	reads := map[string]func(key string) error{
		"Get": func(key string) error { _, err := st.Get(ctx, key); return err },
		"GetAdmitted": func(key string) error {
			_, _, err := st.GetAdmitted(ctx, key, func(int64) (func(), error) { return func() {}, nil })
			return err
		},
		"GetStream": func(key string) error {
			return st.GetStream(ctx, key, 1<<20, func(body io.Reader) error { _, err := io.Copy(io.Discard, body); return err })
		},
		"ReadRecord": func(key string) error { _, _, err := st.ReadRecord(ctx, key); return err },
	}
	for name, read := range reads {
		for _, key := range []string{sig, format.JournalKey, "sig/ab/cdef/nobody"} {
			before := st.Counts()
			err := read(key)
			if d := st.Counts().Sub(before); d.Get != 1 || d.Total() != 1 {
				t.Errorf("%s(%s) sent %v, want one GET", name, key, d)
			}
			missing := key == "sig/ab/cdef/nobody"
			if name == "ReadRecord" && missing {
				if err != nil {
					t.Errorf("ReadRecord of a record not there: %v, want no error (no version)", err)
				}
				continue
			}
			if missing != errors.Is(err, ErrNotFound) || (err != nil && !strings.Contains(err.Error(), key)) {
				t.Errorf("%s(%s) = %v, want ErrNotFound naming the key only when the key is not there", name, key, err)
			}
		}
	}
	asked := false
	_, _, err := st.GetAdmitted(ctx, big, func(int64) (func(), error) { asked = true; return func() {}, nil })
	if !errors.Is(err, ErrTooLarge) || asked {
		t.Errorf("GetAdmitted over the cap = %v, admission asked %v; want ErrTooLarge before the admission", err, asked)
	}
}
