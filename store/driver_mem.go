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

var memLocks sync.Map // *blob.Bucket -> *memLocker; locks itself

// memLocker is the compare-and-swap lock of one mem:// bucket.
type memLocker struct {
	mu sync.Mutex // held from Lock to Unlock: one conditional write of the bucket at a time
}

func (m *memLocker) Lock() error { m.mu.Lock(); return nil }
func (m *memLocker) Unlock()     { m.mu.Unlock() }

func memLock(b *blob.Bucket) locker {
	l, _ := memLocks.LoadOrStore(b, &memLocker{})
	return l.(*memLocker)
}

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
