package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestErrnoOfAFullStoreIsENOSPC (issue 36): an error that wraps ENOSPC or
// EDQUOT (a file:// store's filesystem full, its quota spent) is that
// errno, as the store's driver wraps it, not EIO; an error of another class
// that happens to wrap one keeps its class's errno. Before, both were EIO.
func TestErrnoOfAFullStoreIsENOSPC(t *testing.T) {
	key := "sig/ab/cd/alice"
	full := func(e syscall.Errno) error {
		return fmt.Errorf("put %q: %w", key, &iofs.PathError{Op: "write", Path: "/store/" + key + ".tmp", Err: e})
	}
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{full(syscall.ENOSPC), syscall.ENOSPC},
		{full(syscall.EDQUOT), syscall.EDQUOT},
		{fmt.Errorf("update record %q: %w", format.JournalKey, full(syscall.ENOSPC)), syscall.ENOSPC},
		{full(syscall.EIO), syscall.EIO},
		{errors.Join(store.ErrNotFound, syscall.ENOSPC), syscall.ENOENT},
		{errors.Join(store.ErrReadOnly, syscall.EDQUOT), syscall.EROFS},
	} {
		var logged []string
		m := &Server{logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
		if got := m.errno("write", key, c.err); got != c.want {
			t.Errorf("errno(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// fullStore is a mem store whose PUTs of per-object keys fail with errno
// while full is set, as a file:// store's writes do once its disk is full.
func fullStore(t *testing.T, errno syscall.Errno) (*store.Store, *atomic.Bool) {
	t.Helper()
	drv := blobtest.New(nil)
	var full atomic.Bool
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if full.Load() && op == blobtest.OpPut {
			return &iofs.PathError{Op: "write", Path: "/store/" + key + ".tmp", Err: errno}
		}
		return nil
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st, &full
}

// TestWriteIntoAFullStoreIsENOSPC (issue 36): a file written into the mount
// while the store's filesystem is full fails at close with ENOSPC (EDQUOT
// when the quota is spent), the errno the application would get from a
// full local disk, and the cause is logged once. It was EIO, logged as
// "no space left on device (EIO)".
func TestWriteIntoAFullStoreIsENOSPC(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		t.Run(errno.Error(), func(t *testing.T) {
			st, full := fullStore(t, errno)
			ix := openIndex(t, st)
			srv, l := testMount(t, ix, Options{})
			e := storefixture.Ent(format.KindSig, "ab12cd34", "gina")
			if err := os.MkdirAll(filepath.Dir(srv.path(e)), 0o755); err != nil {
				t.Fatal(err)
			}
			full.Store(true)
			err := os.WriteFile(srv.path(e), []byte("never lands"), 0o644)
			if !errors.Is(err, errno) {
				t.Fatalf("write and close into a full store: %v, want %v", err, errno)
			}
			if n := l.count(errno.Error()); n != 1 {
				t.Errorf("the cause was logged %d times, want once: %q", n, l.all())
			}
			if n := l.count("(EIO)"); n != 0 {
				t.Errorf("logged as EIO: %q", l.all())
			}
			full.Store(false)
			if _, err := st.Get(context.Background(), e.Key()); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("per-object key: %v, want not found", err)
			}
			// The disk has room again: the same write lands.
			if err := os.WriteFile(srv.path(e), []byte("lands"), 0o644); err != nil {
				t.Fatalf("write once there is room: %v", err)
			}
			if got, err := st.Get(context.Background(), e.Key()); err != nil || !strings.EqualFold(string(got), "lands") {
				t.Errorf("per-object key after the retry: %q, %v", got, err)
			}
		})
	}
}

// records is a slog.Handler that keeps every record it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

func (r *records) all() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// attr is the value of a record's attribute key, "" if it has none.
func attr(rec slog.Record, key string) string {
	v := ""
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// TestAWriteIntoAFullStoreIsLoggedAsAWarning: the close of a file
// written into a full store gets ENOSPC, and the mount logs it once, at
// WARN, with the key and the error. It was logged at INFO: its line ended
// "(no space left on device)", which the mount's log did not take for a
// failure.
func TestAWriteIntoAFullStoreIsLoggedAsAWarning(t *testing.T) {
	st, full := fullStore(t, syscall.ENOSPC)
	ix := openIndex(t, st)
	recs := &records{}
	srv, _ := testMount(t, ix, Options{Log: slog.New(recs)})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "gina")
	if err := os.MkdirAll(filepath.Dir(srv.path(e)), 0o755); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	if err := os.WriteFile(srv.path(e), []byte("never lands"), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write and close into a full store: %v, want ENOSPC", err)
	}
	var found []slog.Record
	for _, rec := range recs.all() {
		if strings.Contains(rec.Message, "no space left on device") {
			found = append(found, rec)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d records name the error, want 1: %v", len(found), recs.all())
	}
	rec := found[0]
	if rec.Level != slog.LevelWarn {
		t.Errorf("logged at %v, want WARN: %q", rec.Level, rec.Message)
	}
	if got := attr(rec, "entry"); got != e.Key() {
		t.Errorf("key attribute %q, want %q", got, e.Key())
	}
	if got := attr(rec, "errno"); got != "ENOSPC" || !strings.Contains(rec.Message, "(ENOSPC)") {
		t.Errorf("errno attribute %q, message %q: want ENOSPC in both", got, rec.Message)
	}
}
