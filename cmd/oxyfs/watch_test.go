package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestWatchQuietPollCostsAQuietRefresh: a poll of a folded store that did
// not change sends what a plain index's refresh sends and prints nothing;
// a poll after a re-sign prints it, in text for no request more than the
// refresh that saw it (a signature's bytes are read only for --json).
func TestWatchQuietPollCostsAQuietRefresh(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	opts := store.Options{Layout: store.LayoutBucket}
	writer := storefixture.Open(t, url, opts)
	obj := strings.Repeat("ab", 32)
	key := storefixture.Ent(format.KindSig, obj, "alice").Key()
	seal := storefixture.Ent(format.KindSeal, obj, "s1").Key()
	storefixture.PutObjects(t, writer, key, seal)
	if _, err := journal.Append(ctx, writer, []string{key, seal}); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, writer, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	open := func() (*index.Index, *store.Store) {
		st := storefixture.Open(t, url, opts)
		ix, err := index.Open(ctx, st, index.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return ix, st
	}
	wix, wst := open()
	wix.WatchRefreshes()
	var out bytes.Buffer
	w := &watcher{e: &env{stderr: io.Discard}, ix: wix, st: wst, out: rowWriter{text: &out, raw: &out}}
	var err error
	if w.prev, err = w.read(ctx); err != nil {
		t.Fatal(err)
	}
	pix, pst := open()
	refresh := func() store.Counts {
		return storefixture.Delta(pst, func() {
			if err := pix.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	poll := func() store.Counts {
		return storefixture.Delta(wst, func() {
			if err := w.poll(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	for i := range 3 {
		want, got := refresh(), poll()
		if got != want || out.Len() != 0 {
			t.Fatalf("quiet poll %d: %v and printed %q; a plain refresh: %v", i, got, out.String(), want)
		}
		t.Logf("quiet poll %d: %v, as a plain refresh", i, got)
	}
	// A re-sign: its key written again, its line appended.
	if err := writer.Put(ctx, key, []byte("signed again")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
		t.Fatal(err)
	}
	want, got := refresh(), poll()
	t.Logf("poll after a re-sign: %v, as a plain refresh", got)
	if got != want || out.String() != "~ "+key+"\n" {
		t.Fatalf("poll after a re-sign: %v and printed %q; a plain refresh: %v; want ~ %s", got, out.String(), want, key)
	}
	out.Reset()
	if want, got := refresh(), poll(); got != want || out.Len() != 0 {
		t.Fatalf("quiet poll after the re-sign: %v and printed %q; a plain refresh: %v", got, out.String(), want)
	}
}

func TestParseKinds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []format.Kind
		bad  bool
	}{
		{"", nil, false},
		{"sig", []format.Kind{format.KindSig}, false},
		{"sig, seal,sig", []format.Kind{format.KindSig, format.KindSeal}, false},
		{"sigs", nil, true},
		{"sig,", nil, true},
	} {
		got, err := parseKinds(c.in)
		if (err != nil) != c.bad || !slicesEqual(got, c.want) {
			t.Errorf("parseKinds(%q) = %v, %v", c.in, got, err)
		}
	}
}

func slicesEqual(a, b []format.Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"", "sig", "sig,seal", " cert , accepted", ",", "sig,,seal", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kinds, err := parseKinds(s)
		if err != nil {
			return
		}
		seen := map[format.Kind]bool{}
		for _, k := range kinds {
			if int(k) >= format.NumKinds || seen[k] {
				t.Fatalf("parseKinds(%q) = %v: a kind out of range or twice", s, kinds)
			}
			seen[k] = true
		}
	})
}

// TestWatchForgetAndPutAgainIsAReplace: between two polls a collection
// forgets an object and a writer puts its signature again with other
// bytes: the key is in both views, its bytes changed, so the watch says ~.
func TestWatchForgetAndPutAgainIsAReplace(t *testing.T) {
	for _, foldFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "folded line", false: "unfolded line"}[foldFirst], func(t *testing.T) {
			ctx := context.Background()
			url := "file://" + t.TempDir()
			opts := store.Options{Layout: store.LayoutBucket}
			writer := storefixture.Open(t, url, opts)
			obj, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
			key := storefixture.Ent(format.KindSig, obj, "alice").Key()
			keep := storefixture.Ent(format.KindSig, other, "bob").Key()
			storefixture.PutObjects(t, writer, keep)
			if _, err := journal.Append(ctx, writer, []string{keep}); err != nil {
				t.Fatal(err)
			}
			if _, err := fold.Complete(ctx, writer, fold.Options{}); err != nil {
				t.Fatal(err)
			}
			storefixture.PutObjects(t, writer, key)
			if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
				t.Fatal(err)
			}
			if foldFirst {
				if _, err := fold.Complete(ctx, writer, fold.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			st := storefixture.Open(t, url, opts)
			ix, err := index.Open(ctx, st, index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			ix.WatchRefreshes()
			var out bytes.Buffer
			w := &watcher{e: &env{stderr: io.Discard}, ix: ix, st: st, out: rowWriter{text: &out, raw: &out}}
			if w.prev, err = w.read(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := fold.Collect(ctx, writer, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{{Object: obj}}, Apply: true}); err != nil {
				t.Fatal(err)
			}
			if err := writer.Put(ctx, key, []byte("put again, other bytes")); err != nil {
				t.Fatal(err)
			}
			if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
				t.Fatal(err)
			}
			if err := w.poll(ctx); err != nil {
				t.Fatal(err)
			}
			if out.String() != "~ "+key+"\n" {
				t.Errorf("watch printed %q, want ~ %s", out.String(), key)
			}
		})
	}
}

// TestWatchUnfoldedStore: a store no fold has folded is followed by
// listing its per-object prefixes: a key written again shows by its size
// and time; the first fold, with a re-sign in the same gap, shows the
// re-sign alone.
func TestWatchUnfoldedStore(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	opts := store.Options{Layout: store.LayoutBucket}
	writer := storefixture.Open(t, url, opts)
	a := storefixture.Ent(format.KindSig, strings.Repeat("ab", 32), "alice").Key()
	b := storefixture.Ent(format.KindSig, strings.Repeat("cd", 32), "bob").Key()
	sign := func(key, data string) {
		t.Helper()
		if err := writer.Put(ctx, key, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
			t.Fatal(err)
		}
	}
	sign(a, "a")
	st := storefixture.Open(t, url, opts)
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.WatchRefreshes()
	var out bytes.Buffer
	w := &watcher{e: &env{stderr: io.Discard}, ix: ix, st: st, out: rowWriter{text: &out, raw: &out, json: false}}
	if w.prev, err = w.read(ctx); err != nil {
		t.Fatal(err)
	}
	if w.prev.mark.Folded() || len(w.prev.list) != 1 {
		t.Fatalf("the store reads as folded, or its listing is %v", w.prev.list)
	}
	step := func(want string) {
		t.Helper()
		out.Reset()
		if err := w.poll(ctx); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("watch printed %q, want %q", out.String(), want)
		}
	}
	sign(b, "b")
	step("+ " + b + "\n")
	sign(a, "a, longer")
	step("~ " + a + "\n")
	step("")
	sign(b, "b again")
	if _, err := fold.Complete(ctx, writer, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	step("~ " + b + "\n")
	if !w.prev.mark.Folded() {
		t.Fatal("the store does not read as folded after its fold")
	}
	step("")
}

// TestWatchEndsWhenReaderGoesOnQuietStore: `oxyfs watch STORE | head -1`
// ends, exit 0, once head has its line and closed the pipe, though the
// store stays quiet and watch has nothing more to write (it would learn
// of the closed pipe only at its next write, an --interval or a day away).
// The test binary runs as oxyfs (TestMain) with its stdout a real pipe.
//
// testwatch: mounts nothing (a subprocess on a file:// store).
func TestWatchEndsWhenReaderGoesOnQuietStore(t *testing.T) {
	dir := t.TempDir()
	writer := storefixture.Open(t, "file://"+dir, store.Options{Layout: store.LayoutBucket})
	key := storefixture.Ent(format.KindSig, strings.Repeat("ab", 32), "alice").Key()
	storefixture.PutObjects(t, writer, key)
	if _, err := journal.Append(context.Background(), writer, []string{key}); err != nil {
		t.Fatal(err)
	}
	_, env := oxyfsOnPath(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// --interval 1h: watch polls (and writes) nothing more during the test.
	cmd := exec.Command(self, "watch", "--initial", "--interval", "1h", "file://"+dir)
	cmd.Env = env
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "+ "+key+"\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("first line %q, %v; want + %s", line, err, key)
	}
	r.Close() // head -1 has its line
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch ended with %v once its reader went (want exit 0); stderr %q", err, errOut.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("watch still running a minute after its reader closed the pipe; stderr %q", errOut.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("watch said on stderr %q; a reader that goes ends it quietly", errOut.String())
	}
}

// TestWatchRefusesAnIntervalThatWouldHammerTheStore: each poll is a
// refresh; --interval 1ns polled as fast as the store answered (some
// 15,000 GETs a second on a file store). Below the floor it is a usage
// error, before the store is opened.
func TestWatchRefusesAnIntervalThatWouldHammerTheStore(t *testing.T) {
	dir := t.TempDir()
	for _, iv := range []string{"1ns", "0", "-1s", "99ms"} {
		_, stderr, code := runCLI(t, "watch", "--interval", iv, "file://"+dir)
		if code != 2 || !strings.Contains(stderr, "must be at least") {
			t.Errorf("watch --interval %s: exit %d, %q; want exit 2 naming the floor", iv, code, stderr)
		}
	}
}
