package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// mountBig mounts a folded store of two signatures of size bytes each with
// the index options given (read-ahead off).
func mountBig(t *testing.T, size int, opts index.Options) (*Server, []format.Entry, [][]byte) {
	t.Helper()
	ctx := context.Background()
	st := storefixture.NewMem(t)
	es := []format.Entry{storefixture.Ent(format.KindSig, "ab12cd34", "alice"), storefixture.Ent(format.KindSig, "ab12cd34", "bob")}
	var datas [][]byte
	for _, e := range es {
		data := bytes.Repeat([]byte(e.Value[:1]), size)
		if err := st.Put(ctx, e.Key(), data); err != nil {
			t.Fatal(err)
		}
		datas = append(datas, data)
	}
	storefixture.WriteEntryList(t, st, true, es...)
	opts.Warn, opts.ReadAhead = func(string) {}, -1
	ix, err := index.Open(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	srv, _ := testMount(t, ix, Options{})
	return srv, es, datas
}

// TestManyOpensOfOneSignatureHoldOneCopy (issue 25, item 1): forty
// descriptors open on one 4 MiB signature through a mount hold one copy of
// it in the mount, not one per descriptor; each reads it whole.
func TestManyOpensOfOneSignatureHoldOneCopy(t *testing.T) {
	const size, opens = 4 << 20, 40
	srv, es, datas := mountBig(t, size, index.Options{})
	p := srv.path(es[0])
	var fds []*os.File
	defer func() {
		for _, fd := range fds {
			fd.Close()
		}
	}()
	peak := memtest.Peak(func() {
		for range opens {
			fd, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			fds = append(fds, fd)
		}
	})
	for _, fd := range fds[:3] {
		if got, err := io.ReadAll(fd); err != nil || !bytes.Equal(got, datas[0]) {
			t.Fatalf("read of one of the descriptors: %d bytes %v", len(got), err)
		}
	}
	t.Logf("peak heap of %d opens of a %d MiB signature: %d MiB", opens, size>>20, peak/memtest.MiB)
	if peak > 3*size {
		t.Errorf("peak heap %d MiB for %d opens of one %d MiB signature, want about one copy", peak/memtest.MiB, opens, size>>20)
	}
}

// TestOpenPastTheReadersBudgetIsEAGAIN: with one signature held open, an
// open of another that would pass the readers' budget is EAGAIN; once the
// first is closed it opens.
func TestOpenPastTheReadersBudgetIsEAGAIN(t *testing.T) {
	const size = 600 << 10
	srv, es, datas := mountBig(t, size, index.Options{SigCacheBytes: 64 << 10, ReaderBytes: 1 << 20})
	fd, err := os.Open(srv.path(es[0]))
	if err != nil {
		t.Fatal(err)
	}
	if fd2, err := os.Open(srv.path(es[1])); !errors.Is(err, syscall.EAGAIN) {
		if err == nil {
			fd2.Close()
		}
		fd.Close()
		t.Fatalf("open past the budget: %v, want EAGAIN", err)
	}
	if got, err := io.ReadAll(fd); err != nil || !bytes.Equal(got, datas[0]) {
		t.Fatalf("read of the one held: %d bytes %v", len(got), err)
	}
	fd.Close()
	// The release follows the close; a new open waits for nothing else.
	var got []byte
	for range 100 {
		if got, err = os.ReadFile(srv.path(es[1])); !errors.Is(err, syscall.EAGAIN) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !bytes.Equal(got, datas[1]) {
		t.Fatalf("open once the first was closed: %d bytes %v", len(got), err)
	}
}
