package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestWatchUnfoldedSameSecondReSign: on a store that is not folded, watch
// compares listings; S3's Last-Modified has whole seconds, so a signature
// written again within the second of its last version, with as many
// bytes, lists with the same size and time. Its ETag (the bytes' MD5)
// differs: the watch says ~ (found by a trial on a fresh clone: two
// re-signs of a signer within one second, a poll between, showed one ~).
// versitygw through testkit/testservers.
//
// testwatch: mounts nothing.
func TestWatchUnfoldedSameSecondReSign(t *testing.T) {
	ctx := context.Background()
	srv := testservers.Start(t, "s3")
	url := srv.NewBucket(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	writer := open()
	key := storefixture.Ent(format.KindSig, strings.Repeat("ab", 32), "alice").Key()
	// Two versions of as many bytes within one second of the server's
	// clock; a second that rolls over between them is tried again.
	for try := 0; ; try++ {
		if try == 10 {
			t.Fatal("10 tries and no two writes within one second of the server's clock")
		}
		if sameSecondReSign(t, ctx, writer, open(), key, try) {
			return
		}
	}
}

// sameSecondReSign writes key twice, a watcher's read between, and checks
// the poll that follows; false when the two versions' listed times differ
// (not the case under test).
func sameSecondReSign(t *testing.T, ctx context.Context, writer, st *store.Store, key string, try int) bool {
	t.Helper()
	if err := writer.Put(ctx, key, []byte("version-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ix.WatchRefreshes()
	var out bytes.Buffer
	w := &watcher{e: &env{stderr: io.Discard}, ix: ix, st: st, out: rowWriter{text: &out, raw: &out}}
	if w.prev, err = w.read(ctx); err != nil {
		t.Fatal(err)
	}
	if w.prev.mark.Folded() || len(w.prev.list) != 1 {
		t.Fatalf("want an unfolded store listing one key, got folded=%v %d keys", w.prev.mark.Folded(), len(w.prev.list))
	}
	if err := writer.Put(ctx, key, []byte("version-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
		t.Fatal(err)
	}
	cur, err := w.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !cur.list[0].mod.Equal(w.prev.list[0].mod) {
		return false // the second rolled over: not the case under test
	}
	if err := w.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if want := "~ " + key + "\n"; out.String() != want {
		t.Fatalf("after a re-sign within the second (listed time %v both), watch printed %q; want %q", cur.list[0].mod, out.String(), want)
	}
	t.Logf("try %d: re-sign within %v reported", try, cur.list[0].mod.Truncate(time.Second))
	return true
}
