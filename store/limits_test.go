package store

import (
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/memtest"
)

// sparseStore opens a file:// bucket store holding sparse files of the given
// sizes: gigabytes on disk for nothing.
func sparseStore(t *testing.T, sizes map[string]int64) *Store {
	t.Helper()
	dir := t.TempDir()
	for key, size := range sizes {
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	s, err := Open(context.Background(), "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestReadOverItsCapIsRefusedBeforeItsBody(t *testing.T) {
	const sig = "sig/ab/cdef/alice"
	s := sparseStore(t, map[string]int64{
		sig:                 3 << 30,
		"sig/ab/cdef/bob":   format.MaxEntryBytes + 1,
		"sig/ab/cdef/carol": 100,
		format.JournalKey:   format.MaxRecordBytes + 1,
		format.EntryListName(strings.Repeat("a", 64), true): format.MaxEntryListBytes + 1,
	})
	ctx := context.Background()
	var err error
	peak := memtest.Peak(func() { _, err = s.Get(ctx, sig) })
	want := `get "sig/ab/cdef/alice": 3221225472 bytes, over the cap of 67108864 for such a key: over its size cap`
	if err == nil || err.Error() != want || !errors.Is(err, ErrTooLarge) {
		t.Errorf("Get of a 3 GiB signature = %v, want %s", err, want)
	}
	if peak > 16*memtest.MiB {
		t.Errorf("Get of a 3 GiB signature took %d MiB of heap, want < 16", peak/memtest.MiB)
	}
	if _, err := s.Get(ctx, "sig/ab/cdef/bob"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Get of a signature one byte over the cap = %v, want ErrTooLarge", err)
	}
	if data, err := s.Get(ctx, "sig/ab/cdef/carol"); err != nil || len(data) != 100 {
		t.Errorf("Get of 100 bytes = %d bytes, %v", len(data), err)
	}
	if _, _, err := s.ReadRecord(ctx, format.JournalKey); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), format.JournalKey) {
		t.Errorf("ReadRecord of a journal over the cap = %v, want ErrTooLarge naming the key", err)
	}
	if _, err := s.ReadSnapshot(ctx); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadSnapshot with a journal over the cap = %v, want ErrTooLarge", err)
	}
	if _, err := s.Get(ctx, format.EntryListName(strings.Repeat("a", 64), true)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Get of a list over the cap = %v, want ErrTooLarge", err)
	}
	if got := s.Counts().Get; got != 7 {
		t.Errorf("GETs = %d, want 7 (a refusal is final, not retried)", got)
	}
}
