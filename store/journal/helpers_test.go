package journal

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// t0 is where every test clock starts: a plausible wall time in ms.
const t0 = int64(1_700_000_000_000)

// hour is a folded line's hour (spec §13.4).
const hour = format.GracePeriod

// ms is a duration in milliseconds, as journal lines keep time.
func ms(d time.Duration) int64 { return d.Milliseconds() }

func openStore(t testing.TB, u string, clk store.Clock) *store.Store {
	t.Helper()
	return storefixture.Open(t, u, store.Options{Layout: store.LayoutBucket, Clock: clk})
}

// newMem opens an empty mem store on a fake clock standing at t0.
func newMem(t testing.TB) (*store.Store, *store.FakeClock) {
	clk := store.NewFakeClock(t0)
	return openStore(t, "mem://", clk), clk
}

// forBackends runs a test against a mem and a file store in the bucket
// layout.
func forBackends(t *testing.T, fn func(t *testing.T, st *store.Store, clk *store.FakeClock)) {
	for _, b := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"mem", func(*testing.T) string { return "mem://" }},
		{"file", func(t *testing.T) string { return (&url.URL{Scheme: "file", Path: t.TempDir()}).String() }},
	} {
		t.Run(b.name, func(t *testing.T) {
			clk := store.NewFakeClock(t0)
			fn(t, openStore(t, b.url(t), clk), clk)
		})
	}
}

// ekey formats an entry key.
func ekey(kind format.Kind, object, value string) string {
	return format.Entry{Kind: kind, Object: object, Value: value}.Key()
}

// write writes entries the way a writer does: each key's own object first
// (a signature's bytes, or empty), then one journal append for all of them.
func write(t testing.TB, st *store.Store, keys ...string) AppendResult {
	t.Helper()
	storefixture.PutObjects(t, st, keys...)
	res, err := Append(context.Background(), st, keys)
	if err != nil {
		t.Fatalf("append %v: %v", keys, err)
	}
	return res
}

// putRecord writes a record's raw text.
func putRecord(t testing.TB, st *store.Store, key, text string) {
	t.Helper()
	if err := st.Put(context.Background(), key, []byte(text)); err != nil {
		t.Fatal(err)
	}
}

// readRecordText reads a record as text.
func readRecordText(t testing.TB, st *store.Store, key string) string {
	t.Helper()
	data, _, err := st.ReadRecord(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// errInjected is the failure a fault store injects.
var errInjected = errors.New("injected fault")

// faults picks the requests of a fault store that fail.
type faults struct {
	mu   sync.Mutex // protects the following
	fail func(op, key string) bool
}

// newFaultStore opens a mem store whose requests fail where the returned
// faults says (op: list, get, head, put, delete), seen by the store through
// its ordinary blob.Bucket.
func newFaultStore(t testing.TB, clk store.Clock) (*store.Store, *faults) {
	t.Helper()
	f := &faults{}
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		f.mu.Lock()
		fn := f.fail
		f.mu.Unlock()
		if fn != nil && fn(string(op), key) {
			return errInjected
		}
		return nil
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	return st, f
}

// failIf makes every request for which fn returns true fail; nil fails none.
func (f *faults) failIf(fn func(op, key string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}
