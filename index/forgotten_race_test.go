package index

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// newResignFixtureOn is newResignFixture over a blobtest bucket, so a test
// can step into the collection's requests.
func newResignFixtureOn(t *testing.T) (*resignFixture, *blobtest.Bucket) {
	t.Helper()
	drv := blobtest.New(nil)
	f := &resignFixture{ctx: context.Background(), clk: store.NewFakeClock(1_700_000_000_000)}
	f.wst = store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: f.clk})
	t.Cleanup(func() { f.wst.Close() })
	f.put(t, storefixture.Ent(format.KindSeal, objC, "s1"), nil)
	f.complete(t)
	f.reader, _ = openIndex(t, store.New(f.wst.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: f.clk}))
	return f, drv
}

// TestForgetSeenBeforeItIsDoneIsSeenAgain: a refresh that lands after the
// collection retired its forget record but before it dropped the journal
// line and deleted the key (the record written, or not yet) invalidates the
// object's signatures, and a read then caches the old bytes again, still
// there. The put again then leaves the journal and the retired record as
// that refresh saw them: the next refresh must still not serve the old
// bytes.
func TestForgetSeenBeforeItIsDoneIsSeenAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(key string) bool // the write after which the reader refreshes
	}{
		{"after the record's PUT", format.IsForgottenName},
		{"after its retired line, before its PUT", func(k string) bool { return k == format.RetiredKey }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, drv := newResignFixtureOn(t)
			k := storefixture.Ent(format.KindSig, objA, "alice")
			j := storefixture.Ent(format.KindSig, objB, "bob")
			old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("a"), 16)
			f.put(t, j, old)
			f.complete(t)
			f.put(t, k, old) // k's only line: the last, unfolded
			f.refresh(t)
			f.read(t, k, old, "first read")
			stepped := false
			drv.SetHooks(blobtest.Hooks{AfterPut: func(key string) error {
				if stepped || !tc.at(key) {
					return nil
				}
				stepped = true
				f.refresh(t)
				f.read(t, k, old, "while the collection runs (the key is still there)")
				return nil
			}})
			f.forget(t, k)
			drv.SetHooks(blobtest.Hooks{})
			if !stepped {
				t.Fatal("the reader did not refresh within the collection")
			}
			f.put(t, k, again)
			f.refresh(t)
			f.read(t, k, again, "after the collection, another writer's put again and a refresh")
			f.read(t, j, old, "the other object")
			for _, w := range f.reader.Status().Warnings {
				if strings.Contains(w, "forget record") && tc.name == "after the record's PUT" {
					t.Errorf("warned of a readable forget record: %q", w)
				}
			}
		})
	}
}
