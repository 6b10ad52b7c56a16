package fs

import (
	"bytes"
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestHeldUnreadDescriptorAcrossAnOwnTruncatingWrite (the simulation's
// B2 of seed 8023, paged, op 46): a descriptor opened on a signature and
// not read yet, then this mount opens the name O_CREAT|O_TRUNC to write it
// (landed, or refused: a write past MaxWriteBytes): the held descriptor
// reads the version it opened, whole, during the write and after close.
// (A guard: it passed before the reads beside a write changed too, so the
// simulation's 0-byte read was not this order of events.)
func TestHeldUnreadDescriptorAcrossAnOwnTruncatingWrite(t *testing.T) {
	for _, refused := range []bool{false, true} {
		f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
		alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
		old := f.sigs[alice.Key()]
		p := srv.path(alice)
		held, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(bytes.Repeat([]byte("W"), 5)); err != nil {
			t.Fatal(err)
		}
		if refused {
			if _, err := w.WriteAt([]byte{1}, MaxWriteBytes); err == nil {
				t.Fatal("a write past MaxWriteBytes was not refused")
			}
		}
		checkHeldWhole(t, "held unread during own trunc write", held, old)
		err = w.Close()
		if (err != nil) != refused {
			t.Fatalf("close of the write (refused %v): %v", refused, err)
		}
		checkHeldWhole(t, "held unread after own trunc write", held, old)
	}
}
