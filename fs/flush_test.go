package fs

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestCloseByAChildThatInheritedTheFileWritesNothing: a process writing a
// signature runs a command halfway. The child inherits the descriptor and
// closes it (at exec, since Go opens files close-on-exec), which the kernel
// sends as a flush; that flush must not commit the half signature. Only the
// writer's own close writes the entry: one PUT of the whole signature, one
// journal line.
func TestCloseByAChildThatInheritedTheFileWritesNothing(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "ivan")
	fh, err := os.Create(srv.path(e))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte("first half, ")); err != nil {
		t.Fatal(err)
	}
	during := storefixture.Delta(f.st, func() {
		if out, err := exec.Command("true").CombinedOutput(); err != nil {
			t.Fatalf("true: %v %s", err, out)
		}
	})
	if during.Put != 0 {
		t.Errorf("a child's exec, closing the inherited descriptor, sent %v: the half signature was committed", during)
	}
	if _, err := fh.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	landed(t, f.st, e, []byte("first half, second half"))
	if n := countKey(storefixture.JournalKeys(t, f.st), e.Key()); n != 1 {
		t.Errorf("the journal names %s %d times, want once", e.Key(), n)
	}
}

// TestChildWritingThroughAnInheritedDescriptorCommits: the other way round,
// a child that writes through a descriptor it inherited commits when it
// closes it, and the parent's close, having written nothing, writes nothing
// more.
func TestChildWritingThroughAnInheritedDescriptorCommits(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "judy")
	fh, err := os.Create(srv.path(e))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "printf 'written by the child' >&3")
	cmd.ExtraFiles = []*os.File{fh}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	landed(t, f.st, e, []byte("written by the child"))
	if d := storefixture.Delta(f.st, func() {
		if err := fh.Close(); err != nil {
			t.Errorf("parent's close: %v", err)
		}
	}); d.Put != 0 {
		t.Errorf("the parent's close, after the child's wrote the entry, sent %v", d)
	}
}

func countKey(keys []string, key string) int {
	return len(slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k != key }))
}
