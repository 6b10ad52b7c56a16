// Package keylock is a lock per key: writers of one key take turns, writers
// of different keys do not wait for each other.
//
// A key's lock exists only while someone holds it or waits for it, so the
// memory is per writer in flight, not per key ever locked. Map.mu is a
// leaf, held only to find or drop a key's lock, never while one is waited
// for; a key's lock itself is held for as long as the caller's write runs.
package keylock

import "sync"

// Map is a lock per key. The zero value is ready to use; it must not be
// copied after first use.
type Map struct {
	mu sync.Mutex      // protects the following; a leaf
	m  map[string]*ref // guarded by mu
}

type ref struct {
	mu   sync.Mutex // held by the one holder of the key
	refs int        // the holder and the waiters; guarded by Map.mu
}

// Lock takes key's lock, waiting while another holds it, and returns the
// function that releases it (call it once).
func (k *Map) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*ref)
	}
	r := k.m[key]
	if r == nil {
		r = &ref{}
		k.m[key] = r
	}
	r.refs++
	k.mu.Unlock()
	r.mu.Lock()
	return func() {
		r.mu.Unlock()
		k.mu.Lock()
		if r.refs--; r.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// Len returns how many keys are held or waited for.
func (k *Map) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
