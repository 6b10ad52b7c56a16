package keylock

import (
	"sync"
	"testing"
)

// TestOneHolderPerKey: many goroutines increment a counter per key without
// a lock of their own, under Lock; every increment is kept (the race
// detector and the sums show two never held one key at once), and no lock
// is left once all returned.
func TestOneHolderPerKey(t *testing.T) {
	var k Map
	keys := []string{"a", "b", "c"}
	counts := make(map[string]*int)
	for _, key := range keys {
		counts[key] = new(int)
	}
	const n = 200
	var wg sync.WaitGroup
	for i := range n * len(keys) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := keys[i%len(keys)]
			unlock := k.Lock(key)
			v := *counts[key]
			*counts[key] = v + 1
			unlock()
		}()
	}
	wg.Wait()
	for _, key := range keys {
		if *counts[key] != n {
			t.Errorf("key %q: %d increments kept, want %d", key, *counts[key], n)
		}
	}
	if l := k.Len(); l != 0 {
		t.Errorf("%d locks kept after every holder returned", l)
	}
}

// TestKeysDoNotWaitForEachOther: a held key does not stop another's Lock.
func TestKeysDoNotWaitForEachOther(t *testing.T) {
	var k Map
	unlockA := k.Lock("a")
	done := make(chan struct{})
	go func() {
		k.Lock("b")()
		close(done)
	}()
	<-done // hangs (the test's timeout) if "b" waited for "a"
	if l := k.Len(); l != 1 {
		t.Errorf("%d locks while one key is held, want 1", l)
	}
	unlockA()
}
