package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
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
