package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testdeps"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestMain tells the user, at the end, which tests skipped for want of
// FUSE (testkit/testdeps).
// A test binary started with OXYFS_FS_TEST_CHILD set is a child process
// a test runs to read its mount (mapchild_test.go), not a test run.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	testdeps.Main(m)
}

// logs collects what a mount logs.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *logs) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

func (l *logs) count(sub string) int {
	n := 0
	for _, m := range l.all() {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// testMount mounts ix in a temporary directory, unmounted at cleanup. Where
// FUSE cannot be used the test is skipped (failed where FUSE is required:
// CI=true or OXYFS_REQUIRE=fuse).
func testMount(t *testing.T, ix *index.Index, opts Options) (*Server, *logs) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipNoFUSE(t, err)
	}
	// Armed before the mount, so the unmount at cleanup runs under it too.
	w := testwatch.Arm(t)
	l := &logs{}
	if os.Getenv("OXYFS_TEST_LEAF_IDS") == "1" {
		opts.LeafIDs = true // the whole suite with leaf ids (leafids.go)
	}
	if opts.Logf == nil {
		opts.Logf = l.logf
	}
	dir := t.TempDir()
	w.Abort(dir)
	srv, err := Mount(dir, ix, opts)
	if err != nil {
		if errors.Is(err, ErrNoFUSE) || errors.Is(err, iofs.ErrPermission) {
			skipNoFUSE(t, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if t.Failed() {
			for _, m := range l.all() {
				t.Logf("mount log: %s", m)
			}
		}
	})
	return srv, l
}

func skipNoFUSE(t *testing.T, err error) {
	t.Helper()
	testdeps.SkipOrFail(t, "fuse", fmt.Sprintf("FUSE cannot be used here: %v", err))
}

func openIndex(t testing.TB, st *store.Store) *index.Index {
	t.Helper()
	// Read-ahead off: these tests count the GETs each operation costs by itself.
	ix, err := index.Open(context.Background(), st, index.Options{Warn: func(string) {}, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// fixture is a small store built by hand: a complete list, a journal, the
// per-object keys of both.
type fixture struct {
	st     *store.Store
	listed []format.Entry
	jrnl   []format.Entry
	sigs   map[string][]byte // key -> bytes
	list   string            // the complete list's name
}

func (f *fixture) all() []format.Entry { return append(slices.Clone(f.listed), f.jrnl...) }

// buildFixture writes the fixture store.
func buildFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{st: storefixture.NewMem(t), sigs: map[string][]byte{}}
	f.listed = []format.Entry{
		storefixture.Ent(format.KindSig, "ab12cd34", "alice"),
		storefixture.Ent(format.KindSig, "ab12cd34", "bob"),
		storefixture.Ent(format.KindSig, "ff0011223344", "carol smith"),
		storefixture.Ent(format.KindSeal, "ab12cd34", "change-1"),
		storefixture.Ent(format.KindReceipt, "0102", "state-7"),
		storefixture.Ent(format.KindApproval, "0102", "ops@example.com"),
		storefixture.Ent(format.KindCert, "c0ffee", "key-2026"),
		storefixture.Ent(format.KindAccepted, "beef", "main"),
	}
	f.jrnl = []format.Entry{
		storefixture.Ent(format.KindSig, "ab99", "alice"),
		storefixture.Ent(format.KindSeal, "cdef01", "change-2"),
	}
	sizes := []int{137, 64, 5000, 1}
	i := 0
	for _, e := range f.all() {
		var data []byte
		if e.Kind == format.KindSig {
			data = bytes.Repeat([]byte{byte('a' + i)}, sizes[i%len(sizes)])
			data[0] = '#'
			f.sigs[e.Key()] = data
			i++
		}
		if err := f.st.Put(ctx, e.Key(), data); err != nil {
			t.Fatal(err)
		}
	}
	f.list = storefixture.WriteEntryList(t, f.st, true, f.listed...)
	var lines []format.JournalLine
	for _, e := range f.jrnl {
		lines = append(lines, format.JournalLine{Key: e.Key()})
	}
	if err := f.st.Put(ctx, format.JournalKey, format.Journal(lines)); err != nil {
		t.Fatal(err)
	}
	return f
}

// mountFixture builds the fixture and mounts it.
func mountFixture(t *testing.T, opts Options) (*fixture, *index.Index, *Server, *logs) {
	t.Helper()
	f := buildFixture(t)
	ix := openIndex(t, f.st)
	srv, l := testMount(t, ix, opts)
	return f, ix, srv, l
}

// path is the mount path of an entry.
func (m *Server) path(e format.Entry) string { return m.Dir() + "/" + e.Key() }

// loopBeside runs fn over and over in a goroutine beside the test until the
// returned stop is called; stop waits for the last run to end.
func loopBeside(fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			fn()
		}
	}()
	return func() { close(done); wg.Wait() }
}
