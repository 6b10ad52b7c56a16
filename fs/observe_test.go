package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestObserveReportsEveryCountedOp checks Options.Observe: one call per
// operation Ops counts, under the same name.
func TestObserveReportsEveryCountedOp(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int64{}
	f, _, srv, _ := mountFixture(t, Options{Observe: func(op string, d time.Duration) {
		if d < 0 {
			t.Errorf("op %s took %v", op, d)
		}
		mu.Lock()
		seen[op]++
		mu.Unlock()
	}})
	if _, err := os.ReadDir(srv.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(srv.path(f.all()[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(srv.Dir(), "no-such-name")); !os.IsNotExist(err) {
		t.Fatalf("lstat of a missing name: %v", err)
	}
	// An operation is counted when it starts and observed when it ends:
	// one the kernel sends on its own (a RELEASE) may be in flight.
	var diff []string
	for range 200 {
		diff = nil
		mu.Lock()
		for op, n := range srv.Ops() {
			if seen[op] != n {
				diff = append(diff, fmt.Sprintf("%s: observed %d, counted %d", op, seen[op], n))
			}
		}
		mu.Unlock()
		if diff == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if diff != nil {
		t.Errorf("Observe and Ops differ: %v", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["lookup"] == 0 || seen["read"] == 0 {
		t.Errorf("no lookup or read observed: %v", seen)
	}
}
