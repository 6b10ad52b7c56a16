package store

import (
	"bytes"
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
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
