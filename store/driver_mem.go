package store

// The mem:// driver, through gocloud's memblob (tests, the demo). As types
// used: none.
//
// Compare-and-swap is a read-compare-write under a mutex per bucket
// (lockedWrites): correct within the process, which is all a mem:// store
// has. The change token is the SHA-256 of the bytes.

import (
	"context"
	"net/url"
	"sync"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob" // mem:// URLs
)

type memDriver struct {
	defaults
	lockedWrites
}

var _ backendDriver = (*memDriver)(nil)

func memDriverOf(b *blob.Bucket) *memDriver {
	return &memDriver{lockedWrites: lockedWrites{lock: memLock(b)}}
}

func (*memDriver) name() string { return "mem" }

// clockSource: a mem:// store lives in this process; its clock is the
// Options.Clock.
func (*memDriver) clockSource() clockSource { return clockOwn }

// memLocks holds the compare-and-swap lock of each mem:// bucket while a
// write holds it or waits for it, and no longer: an entry is made by the
// first Lock and dropped by the last Unlock (refs), so the map holds only
// the buckets being written, however many buckets the process opens.
var memLocks struct {
	mu sync.Mutex                    // protects the following; a leaf, held for no request
	m  map[*blob.Bucket]*memLockRefs // the buckets with a holder or a waiter
}

// memLockRefs is the lock of one mem:// bucket and how many hold it or wait.
type memLockRefs struct {
	mu   sync.Mutex // held from Lock to Unlock: one conditional write of the bucket at a time
	refs int        // guarded by memLocks.mu
}

// memLocker is the compare-and-swap lock of one mem:// bucket (every
// Store on the bucket shares it through memLocks).
type memLocker struct {
	b *blob.Bucket // read-only
}

func (m memLocker) Lock() error {
	memLocks.mu.Lock()
	l := memLocks.m[m.b]
	if l == nil {
		if memLocks.m == nil {
			memLocks.m = map[*blob.Bucket]*memLockRefs{}
		}
		l = &memLockRefs{}
		memLocks.m[m.b] = l
	}
	l.refs++
	memLocks.mu.Unlock()
	l.mu.Lock()
	return nil
}

func (m memLocker) Unlock() {
	memLocks.mu.Lock()
	l := memLocks.m[m.b]
	l.refs--
	if l.refs == 0 {
		delete(memLocks.m, m.b)
	}
	memLocks.mu.Unlock()
	l.mu.Unlock()
}

// memLocksHeld is how many buckets memLocks holds a lock for (tests).
func memLocksHeld() int {
	memLocks.mu.Lock()
	defer memLocks.mu.Unlock()
	return len(memLocks.m)
}

func memLock(b *blob.Bucket) locker { return memLocker{b: b} }

var memBackend = backend{
	name: "mem", scheme: "mem",
	open: func(ctx context.Context, u *url.URL, _ Options) (*blob.Bucket, backendDriver, error) {
		b, err := openGocloud(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		return b, memDriverOf(b), nil
	},
	wrap: func(b *blob.Bucket, _ string) backendDriver { return memDriverOf(b) },
}
