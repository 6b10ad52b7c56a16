package fold

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/fileblob"
	"github.com/oxyfs/oxyfs/store/format"
)

// fileFaultStore is a bucket-layout file:// store with a journal, a
// complete list and newer entries, on which the readdir of dir fails with
// EACCES while the returned switch is on (fileblob.Options.Fault of its
// bucket: root, which CI runs as, reads any directory whatever its mode). For a dir under the older sigs/, the store
// also holds an older one-list key and no marker; else it has the marker
// (a fold copies the older lists, and writes the marker, before it lists
// the entry prefixes).
func fileFaultStore(t *testing.T, dir string) (*store.Store, *store.FakeClock, *atomic.Bool) {
	t.Helper()
	clk := store.NewFakeClock(t0)
	root := t.TempDir()
	var on atomic.Bool
	b, err := fileblob.OpenBucket(root, &fileblob.Options{Fault: func(op, path string) error {
		if on.Load() && op == "readdir" && path == dir {
			return syscall.EACCES
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(b, "file", root, store.Options{Layout: store.LayoutBucket, Clock: clk, StoreClock: clk})
	t.Cleanup(func() { st.Close() })
	write(t, st, ekey(format.KindSig, "0011", "alice"), ekey(format.KindSig, "0111", "bob"))
	mustComplete(t, st)
	write(t, st, ekey(format.KindSig, "0122", "carol"), ekey(format.KindSeal, "0122", "v1"))
	if strings.HasPrefix(dir, "sigs/") {
		putRecord(t, st, "sigs/01/33", string(format.LegacySigs([]format.LegacySig{{Signer: "dave", Sig: []byte("dave's")}})))
		if err := st.Delete(context.Background(), format.LegacyFoldedMarker); err != nil {
			t.Fatal(err)
		}
	} else if !exists(t, st, format.LegacyFoldedMarker) {
		t.Fatal("fixture: the first fold wrote no marker")
	}
	on.Store(true)
	return st, clk, &on
}

// storeState is everything a fold or collection could change.
type storeState struct {
	lists, keys      []string
	journal, retired string
	marker           bool
}

// stateOf reads the state of st with its fault off.
func stateOf(t *testing.T, st *store.Store, fault *atomic.Bool) storeState {
	t.Helper()
	fault.Store(false)
	defer fault.Store(true)
	var s storeState
	for _, l := range snapshot(t, st).Lists {
		s.lists = append(s.lists, l.Name)
	}
	s.keys = perObjectKeys(t, st)
	s.journal, s.retired = readRecordText(t, st, format.JournalKey), readRecordText(t, st, format.RetiredKey)
	s.marker = exists(t, st, format.LegacyFoldedMarker)
	return s
}

func sameState(a, b storeState) bool {
	return slices.Equal(a.lists, b.lists) && slices.Equal(a.keys, b.keys) && a.journal == b.journal && a.retired == b.retired && a.marker == b.marker
}

// TestFoldOnFileStoreFailsWhenAListingFails: a complete fold of a file://
// store that cannot read one directory under sig/ (or under the older
// sigs/) stops with an error naming it, and writes nothing: no entry
// list, no marker, no retired line, no journal mark. gocloud's fileblob skipped the
// directory: the fold exited 0, wrote a complete list without its entries
// and (for sigs/) the marker, after which no reader looks at the older
// list again.
func TestFoldOnFileStoreFailsWhenAListingFails(t *testing.T) {
	for _, dir := range []string{"sig/01/", "sig/01/11/", "sigs/01/", "sig/"} {
		t.Run(dir, func(t *testing.T) {
			st, _, fault := fileFaultStore(t, dir)
			before := stateOf(t, st, fault)
			if before.marker == strings.HasPrefix(dir, "sigs/") || len(before.lists) != 1 {
				t.Fatalf("fixture: marker %v, lists %v", before.marker, before.lists)
			}
			start := st.Counts()
			rep, err := Complete(context.Background(), st, Options{})
			d := st.Counts().Sub(start)
			if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), strings.TrimSuffix(dir, "/")) {
				t.Fatalf("fold = %+v, %v; want it to fail on the unreadable %s", rep.List, err, dir)
			}
			if d.Put != 0 || d.Delete != 0 {
				t.Errorf("the failed fold sent %v, want no PUT or DELETE", d)
			}
			if after := stateOf(t, st, fault); !sameState(after, before) {
				t.Errorf("the failed fold changed the store:\n got %+v\nwant %+v", after, before)
			}
		})
	}
}

// TestCollectOnFileStoreDeletesNothingWhenAListingFails: a collection that
// forgets an object whose directory it cannot read deletes nothing, and a
// dry run (which folds dry) fails the same way.
func TestCollectOnFileStoreDeletesNothingWhenAListingFails(t *testing.T) {
	st, clk, fault := fileFaultStore(t, "sig/01/22/")
	clk.Advance(2 * hour)
	before := stateOf(t, st, fault)
	for _, opts := range []CollectOptions{
		{ForgetObjects: []ForgetObject{{Object: "0122"}}, Apply: true},
		{DryRun: true},
	} {
		start := st.Counts()
		rep, err := Collect(context.Background(), st, opts)
		d := st.Counts().Sub(start)
		if !errors.Is(err, syscall.EACCES) {
			t.Fatalf("collection %+v = %v deleted, %v; want it to fail on the unreadable directory", opts, rep.Deleted, err)
		}
		if d.Put != 0 || d.Delete != 0 || rep.Forget.Deleted != 0 {
			t.Errorf("the failed collection %+v sent %v and forgot %d keys, want no PUT or DELETE", opts, d, rep.Forget.Deleted)
		}
		if after := stateOf(t, st, fault); !sameState(after, before) {
			t.Errorf("the failed collection changed the store:\n got %+v\nwant %+v", after, before)
		}
	}
	// Without the fault the same collection goes through: the failure was
	// the directory's alone.
	fault.Store(false)
	rep, err := Collect(context.Background(), st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "0122"}}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{ekey(format.KindSeal, "0122", "v1"), ekey(format.KindSig, "0122", "carol")}; !slices.Equal(rep.Forget.Keys, want) {
		t.Fatalf("forgot %v, want %v", rep.Forget.Keys, want)
	}
}
