package fold

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// errInjected is the failure a faultBucket injects.
var errInjected = errors.New("injected fault")

// faultBucket fails the requests a test picks (op: list, get, head, put,
// delete): a real request failing the way a network or a permission error
// makes it fail, seen by the store through its ordinary blob.Bucket.
type faultBucket struct {
	mu   sync.Mutex
	fail func(op, key string) bool
}

// newFaultStore opens a mem store over a faultBucket.
func newFaultStore(t testing.TB, clk store.Clock) (*store.Store, *faultBucket) {
	t.Helper()
	fb := &faultBucket{}
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		fb.mu.Lock()
		fn := fb.fail
		fb.mu.Unlock()
		if fn != nil && fn(string(op), key) {
			return errInjected
		}
		return nil
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	return st, fb
}

// failOn makes every request op on a key with the given prefix fail, until
// cleared with failOn("", "").
func (f *faultBucket) failOn(op, prefix string) {
	if op == "" {
		f.failIf(nil)
		return
	}
	f.failIf(func(o, k string) bool { return o == op && strings.HasPrefix(k, prefix) })
}

// failIf makes every request for which fn returns true fail.
func (f *faultBucket) failIf(fn func(op, key string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}
