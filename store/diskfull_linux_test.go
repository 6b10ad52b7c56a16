package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/fileblob"
	"github.com/oxyfs/oxyfs/store/format"
)

// smallTmpfs mounts a tmpfs of size bytes on a fresh directory (root
// only: the test is skipped for anyone else), unmounted when the test ends.
func smallTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Fatalf("mount a tmpfs of %d bytes on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFileStoreDiskFull fills a real small filesystem (a 512 KiB tmpfs)
// with puts of signature keys and journal updates, as `oxyfs put` does,
// until the disk is full, and goes on past it. Every failed write must wrap
// ENOSPC (so fs and the CLI can say so), leave no key it did not write
// whole (no 0-byte or cut key, no temporary file), and leave the journal
// holding every line an update acknowledged: the journal never shrinks.
func TestFileStoreDiskFull(t *testing.T) {
	dir := smallTmpfs(t, 512<<10)
	ctx := context.Background()
	st, err := Open(ctx, "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	var (
		acked     []string           // journal lines whose update returned nil
		written   = map[string]int{} // keys whose put returned nil, and their size
		putFailed int
		updFailed int
	)
	checkErr := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s failed with %v, want an error wrapping ENOSPC", what, err)
		}
	}
	for i := 0; putFailed+updFailed < 40 && i < 10000; i++ {
		key := fmt.Sprintf("sig/%02x/%02x/k%d", i%7, i%5, i)
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 3000+i%2000)
		if err := st.Put(ctx, key, data); err != nil {
			checkErr("put "+key, err)
			putFailed++
		} else {
			written[key] = len(data)
		}
		line := fmt.Sprintf("%s %s\n", key, strings.Repeat("x", 200))
		_, err := st.UpdateRecord(ctx, format.JournalKey, func(old []byte, _ bool) ([]byte, error) {
			return append(old[:len(old):len(old)], line...), nil
		})
		if err != nil {
			checkErr("update the journal", err)
			updFailed++
		} else {
			acked = append(acked, line)
		}
		journal, err := os.ReadFile(filepath.Join(dir, format.JournalKey))
		if err != nil {
			t.Fatalf("after round %d: %v", i, err)
		}
		if want := strings.Join(acked, ""); string(journal) != want {
			t.Fatalf("after round %d (%d updates acknowledged, %d failed): the journal holds %d bytes, want the %d of its acknowledged lines", i, len(acked), updFailed, len(journal), len(want))
		}
	}
	if putFailed == 0 || updFailed == 0 {
		t.Fatalf("the disk never filled: %d puts and %d journal updates failed", putFailed, updFailed)
	}
	t.Logf("%d keys and %d journal lines written; %d puts and %d updates failed with ENOSPC", len(written), len(acked), putFailed, updFailed)

	// No key but those written whole; no temporary file left behind.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rel == lockFileName:
			// The writers' lock file: empty, and kept (file_lock.go).
		case fileblob.IsTempName(d.Name()):
			t.Errorf("temporary file %s (%d bytes) left behind", rel, fi.Size())
		case rel == format.JournalKey:
		case fi.Size() == 0:
			t.Errorf("0-byte key %s", rel)
		default:
			if want, ok := written[rel]; !ok {
				t.Errorf("key %s (%d bytes) exists, but its put failed", rel, fi.Size())
			} else if fi.Size() != int64(want) {
				t.Errorf("key %s holds %d bytes, its put wrote %d", rel, fi.Size(), want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range written {
		if _, err := os.Stat(filepath.Join(dir, key)); err != nil {
			t.Errorf("key %s was written, now: %v", key, err)
		}
	}
}
