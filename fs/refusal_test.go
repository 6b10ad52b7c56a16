package fs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestARefusalStaysRefused: a write or truncate refused (ENOSPC, EFBIG)
// and then a write that fits: close still reports the refusal and writes
// nothing (issue 22 item 6: the later write used to clear it, and close
// committed a zero-filled gap or a partial signature).
func TestARefusalStaysRefused(t *testing.T) {
	st := storefixture.NewMem(t)
	srv, _ := testMount(t, openIndex(t, st), Options{})
	const budget = 1 << 20
	srv.wbuf.max = budget // MaxWriteBuffers, scaled down
	dir := filepath.Join(srv.Dir(), "sig/ab/cdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		want   syscall.Errno
		refuse func(f *os.File) error
	}{
		{"write-past-the-budget", syscall.ENOSPC, func(f *os.File) error {
			_, err := f.WriteAt([]byte{1}, 2*budget)
			return err
		}},
		{"write-past-the-cap", syscall.EFBIG, func(f *os.File) error {
			_, err := f.WriteAt([]byte("xx"), MaxWriteBytes-1)
			return err
		}},
		{"truncate-past-the-budget", syscall.ENOSPC, func(f *os.File) error { return f.Truncate(2 * budget) }},
	}
	before := st.Counts()
	for _, c := range cases {
		f, err := os.Create(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.refuse(f); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		// A later write that fits is taken into the buffer…
		if _, err := f.WriteAt([]byte("fits"), 0); err != nil {
			t.Errorf("%s: the write after the refusal: %v", c.name, err)
		}
		// …but the file was refused: close says so and writes nothing.
		if err := f.Close(); !errors.Is(err, c.want) {
			t.Errorf("%s: close after a refusal = %v, want %v", c.name, err, c.want)
		}
	}
	if d := st.Counts().Sub(before); d.Put != 0 {
		t.Errorf("refused files sent %v, want no PUT", d)
	}
	if keys := storefixture.JournalKeys(t, st); len(keys) != 0 {
		t.Errorf("journal = %v, want nothing committed", keys)
	}
	for _, c := range cases {
		waitENOENT(t, filepath.Join(dir, c.name))
	}
}
