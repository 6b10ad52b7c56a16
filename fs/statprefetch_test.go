package fs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// statPrefetchStore is a folded store of signatures: object first with
// signers signatures, fillers objects of one signature each after it, and
// object last, the last in key order, with signers signatures. Each
// signature's bytes are storefixture.SigBytes of its key, so sizes differ.
func statPrefetchStore(t *testing.T, signers, fillers int) (st *store.Store, first, last []format.Entry) {
	t.Helper()
	st = storefixture.NewMem(t)
	var all []format.Entry
	for i := range signers {
		first = append(first, storefixture.Ent(format.KindSig, "10aa", fmt.Sprintf("signer-%02d", i)))
		last = append(last, storefixture.Ent(format.KindSig, "f0bb", fmt.Sprintf("signer-%02d", i)))
	}
	all = append(all, first...)
	for i := range fillers {
		all = append(all, storefixture.Ent(format.KindSig, fmt.Sprintf("20%04x", i), "filler"))
	}
	all = append(all, last...)
	storefixture.PutEntries(t, st, all...)
	storefixture.WriteEntryList(t, st, true, all...)
	storefixture.WriteJournal(t, st, 0)
	return st, first, last
}

// openReadAhead opens st with read-ahead on, as a mount opens it (the fs
// tests' openIndex turns it off).
func openReadAhead(t *testing.T, st *store.Store) *index.Index {
	t.Helper()
	ix, err := index.Open(context.Background(), st, index.Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// waitGets waits until st counts at least want GETs more than base, or
// gives up after 20 s (the caller's next check then fails).
func waitGets(st *store.Store, base store.Counts, want int64) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st.Counts().Get-base.Get >= want {
			return
		}
	}
}

// waitReadAheadIdle waits until read-ahead has nothing queued or in flight.
func waitReadAheadIdle(t *testing.T, ix *index.Index) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ix.Status().ReadAhead.Queued > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("read-ahead still has %d signatures queued after 20 s", ix.Status().ReadAhead.Queued)
		}
	}
}

// checkSizes stats every entry through the mount and checks each size is
// its bytes' length.
func checkSizes(t *testing.T, srv *Server, es []format.Entry) {
	t.Helper()
	for _, e := range es {
		fi, err := os.Lstat(srv.path(e))
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(len(storefixture.SigBytes(e.Key()))); fi.Size() != want {
			t.Errorf("%s: size %d, want %d", e.Key(), fi.Size(), want)
		}
	}
}

// TestListingAfterStatsPrefetchesTheSignatures: a cold `ls -l` of a
// directory of signatures (the last in key order: nothing after it to read
// ahead) costs one GET per signature, no more, no LIST, with every size
// right; then the listing of another directory (as ls -lR, du and find
// -size go, stats following listings) fetches that directory's signatures
// before the kernel asks for their attributes — one GET each, nothing
// else — and stating them then costs no request.
func TestListingAfterStatsPrefetchesTheSignatures(t *testing.T) {
	const signers = 12
	st, first, last := statPrefetchStore(t, signers, 20)
	ix := openReadAhead(t, st)
	srv, _ := testMount(t, ix, Options{})

	d := storefixture.Delta(st, func() {
		if out, err := exec.Command("ls", "-l", filepath.Dir(srv.path(last[0]))).CombinedOutput(); err != nil {
			t.Fatalf("ls -l: %v: %s", err, out)
		}
	})
	if d.Get != signers || d.Total() != d.Get {
		t.Fatalf("a cold ls -l of %d signatures sent %v, want %d GET", signers, d, signers)
	}
	if d := storefixture.Delta(st, func() { checkSizes(t, srv, last) }); d.Total() != 0 {
		t.Fatalf("stating them again sent %v", d)
	}

	// The listing alone (getdents, no stat) of the first directory.
	base := st.Counts()
	if _, err := os.ReadDir(filepath.Dir(srv.path(first[0]))); err != nil {
		t.Fatal(err)
	}
	waitGets(st, base, signers)
	if d := st.Counts().Sub(base); d.Get != signers || d.Total() != d.Get {
		t.Fatalf("the listing of %d signatures after stats sent %v, want %d GET", signers, d, signers)
	}
	if d := storefixture.Delta(st, func() { checkSizes(t, srv, first) }); d.Total() != 0 {
		t.Fatalf("stating the listed signatures sent %v, want nothing", d)
	}
	if got := ix.Status().ReadAhead.Listings; got < 1 {
		t.Errorf("Status.ReadAhead.Listings = %d, want at least 1", got)
	}
}

// TestWalkWithoutStatsPrefetchesNothing: a walk that lists every directory
// of signatures and stats none (find -type f, ls -R) sends no request,
// read-ahead on: listings fetch ahead only when stats follow them.
func TestWalkWithoutStatsPrefetchesNothing(t *testing.T) {
	st, _, _ := statPrefetchStore(t, 4, 40)
	ix := openReadAhead(t, st)
	srv, _ := testMount(t, ix, Options{})
	d := storefixture.Delta(st, func() {
		for range 2 {
			if out, err := exec.Command("find", srv.Dir(), "-type", "f").CombinedOutput(); err != nil {
				t.Fatalf("find: %v: %s", err, out)
			}
			if out, err := exec.Command("ls", "-R", srv.Dir()).CombinedOutput(); err != nil {
				t.Fatalf("ls -R: %v: %s", err, out)
			}
		}
		ix.Close() // whatever read-ahead started has ended
	})
	if d.Total() != 0 {
		t.Fatalf("find and ls -R sent %v", d)
	}
}

// TestRefreshChecksOfHeldNamesArmNoPrefetch: after a refresh the mount
// asks the index about every name the kernel holds (Invalidate); that is
// not a user's stat, so a walk that stats nothing afterwards still sends
// no request. Before, the check counted as stats (index.Stat told
// read-ahead), and the next listing of a directory of signatures fetched
// all of them.
func TestRefreshChecksOfHeldNamesArmNoPrefetch(t *testing.T) {
	st, first, last := statPrefetchStore(t, 4, 3)
	ix := openReadAhead(t, st)
	srv, _ := testMount(t, ix, Options{})
	// The kernel holds the names of last's directory (a stat each), and
	// the listing of first's that follows fetches first's signatures:
	// stats follow listings. Then nothing is armed.
	checkSizes(t, srv, last)
	base := st.Counts()
	if _, err := os.ReadDir(filepath.Dir(srv.path(first[0]))); err != nil {
		t.Fatal(err)
	}
	waitGets(st, base, int64(len(first)))
	// The listing's window may run past first's directory (fillers): what
	// it fetches must land before the listing measured below.
	waitReadAheadIdle(t, ix)
	// A refresh that changed the tree (a new signature), so the mount
	// checks the names the kernel holds.
	added := storefixture.Ent(format.KindSig, "30cc", "added")
	storefixture.PutEntries(t, st, added)
	storefixture.WriteJournal(t, st, 0, added)
	gen := ix.Generation()
	refreshed(t, ix, srv)
	if ix.Generation() == gen {
		t.Fatal("the refresh did not change the view")
	}
	filler := storefixture.Ent(format.KindSig, "200001", "filler")
	d := storefixture.Delta(st, func() {
		if _, err := os.ReadDir(filepath.Dir(srv.path(filler))); err != nil {
			t.Fatal(err)
		}
		ix.Close() // whatever read-ahead started has ended
	})
	if d.Total() != 0 {
		t.Fatalf("a listing after a refresh, with no stat since the last listing, sent %v", d)
	}
}
