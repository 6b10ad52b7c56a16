//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
)

// TestMountSaysWhereItsListsCameFrom (issue 38): the log line of a mount's
// open and its .oxy/status say how many entry lists came from the list
// cache and how many from the store, with their bytes, and the cache's
// directory and size: the first mount with an empty cache reads the list
// from the store, the second maps it from the cache.
func TestMountSaysWhereItsListsCameFrom(t *testing.T) {
	dir := genFolded(t, 200)
	cache := filepath.Join(t.TempDir(), "lists")
	mnt := watchedMountDir(t)
	mountOnce := func() (string, index.ListCacheStats) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errb, done := startInProcessMount(t, ctx, "--layout", "bucket", "--cache-dir", cache, "file://"+dir, mnt)
		data, err := os.ReadFile(filepath.Join(mnt, ".oxy", "status"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			ListCache index.ListCacheStats `json:"list_cache"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf(".oxy/status: %v", err)
		}
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("mount exited %d:\n%s", code, errb.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("mount still serving 20s after its context was cancelled:\n%s", errb.String())
		}
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.Contains(l, "oxyfs: mounted ") {
				return l, st.ListCache
			}
		}
		return "", st.ListCache
	}

	first, s1 := mountOnce()
	if s1.Dir != cache || s1.Hits != 0 || s1.Misses != 1 || s1.MissBytes <= 0 || s1.Bound != index.DefaultListCacheBytes {
		t.Errorf("first mount's list_cache %+v: want dir %s, 0 hits, 1 list read from the store", s1, cache)
	}
	if want := fmt.Sprintf("entry lists: 0 mapped from the list cache %s (0 B), 1 read from the store (%s)", cache, byteSize(s1.MissBytes)); !strings.Contains(first, want) {
		t.Errorf("first mount's line %q does not say %q", first, want)
	}
	second, s2 := mountOnce()
	if s2.Dir != cache || s2.Hits != 1 || s2.HitBytes != s1.MissBytes || s2.Misses != 0 || s2.Bytes <= 0 {
		t.Errorf("second mount's list_cache %+v: want the list mapped from %s (%d bytes in the store) and the cache's bytes", s2, cache, s1.MissBytes)
	}
	if want := fmt.Sprintf("entry lists: 1 mapped from the list cache %s (%s), 0 read from the store (0 B); the cache holds %s of 1 GiB", cache, byteSize(s1.MissBytes), byteSize(s2.Bytes)); !strings.Contains(second, want) {
		t.Errorf("second mount's line %q does not say %q", second, want)
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 40 << 20: "40 MiB", 1 << 30: "1 GiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
