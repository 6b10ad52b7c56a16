package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/internal/memtest"
	"github.com/oxyfs/oxyfs/store"
)

// putBigList writes a valid complete list of n keys of about 256 bytes each
// (n × 256 bytes of text, a few hundredths of that compressed) and returns
// its name.
func putBigList(t testing.TB, st *store.Store, n int) string {
	t.Helper()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	w := io.MultiWriter(h, enc)
	pad := strings.Repeat("v", 232)
	buf := []byte(store.EntryListHeader + "\n")
	for i := range n {
		buf = fmt.Appendf(buf, "seal/ab/%08x/%s\n", i, pad)
		if len(buf) > 60<<10 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	name := store.EntryListName(hex.EncodeToString(h.Sum(nil)), true)
	if err := st.Put(context.Background(), name, out.Bytes()); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestOxyListIsDecodedAsItIsRead(t *testing.T) {
	st := newMem(t)
	name := putBigList(t, st, 1<<18) // 64 MiB of text
	srv, _ := testMount(t, openIndex(t, st), Options{})
	h := sha256.New()
	var n int64
	var err error
	peak := memtest.Peak(func() {
		var f *os.File
		if f, err = os.Open(filepath.Join(srv.Dir(), ".oxy/lists", name)); err != nil {
			return
		}
		defer f.Close()
		n, err = io.Copy(h, f)
	})
	id, _, _ := store.ParseEntryListName(name)
	if err != nil || hex.EncodeToString(h.Sum(nil)) != id {
		t.Fatalf("cat .oxy/lists/%s: %d bytes, %v; want the text whose SHA-256 is its id", name, n, err)
	}
	// The compressed list and a decoder's window, not the 64 MiB text.
	if peak > 24*memtest.MiB {
		t.Errorf("reading a list of 64 MiB took %d MiB of heap, want < 24", peak/memtest.MiB)
	}
}
