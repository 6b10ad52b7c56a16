package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// TestManyHandlesOnOneBucket is how users outgrow one machine: many hosts
// mount one bucket. On one versitygw bucket, five handles, each with its own
// index as a separate host would have:
//
//   - mounts 0, 1 and 2: `oxyfs mount --allow-overwrite --refresh-interval 1s`
//     processes, each written through with cp (signatures re-signed by the
//     same signer with other bytes, so versions move under readers) and touch
//     (index entries);
//   - `oxyfs serve --refresh-interval 1s`, whose host writes with `oxyfs put
//     --force` processes;
//   - a handle in this process (host D), refreshed every second, which
//     writes with PutBatch, folds (journal.Partial and fold.Complete, in turn)
//     and collects (fold.Collect forgetting one object, which is then
//     signed again).
//
// Beside the writers, readers on mounts 0 and 1 open a signature, read its
// first bytes, have host D replace it with other bytes of another length,
// wait until the mount shows the new bytes by name (its refresh), and read
// the rest of the descriptor they held: it must be one whole version.
//
// After the writers stop and one refresh of each handle (SIGHUP, or Refresh),
// every handle equals a fresh reader (index.Open on the bucket) name for
// name and byte for byte — each mount read through the kernel (a ReadDir
// walk, every file read), serve by GET of every listing (?format=json) and
// every file — and every write that returned success is there with its last
// acknowledged bytes, but those of the forgotten object from before the
// collection.
func TestManyHandlesOnOneBucket(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()

	const (
		mounts       = 3
		cpsEach      = 18 // cp per mount writer
		batches      = 12 // host D's PutBatch calls, 3 entries each
		cliPuts      = 6  // `oxyfs put --force` runs
		heldRounds   = 3  // held descriptors per held reader (mounts 0 and 1)
		keysPerOwner = 3  // each writer re-signs its own few keys
		interval     = "1s"
	)
	obj := func(i int) string {
		return fmt.Sprintf("%02x%s%04x", (i*29+7)%256, strings.Repeat("0", 58), i)
	}
	forgotten := obj(99)
	// forgottenName matches the names that vanish with it: its entries,
	// its <hh> directories (no other object has its first byte) and the
	// by-signer directories of its only signers, seed-a and seed-b.
	forgottenName := regexp.MustCompile(`/(` + forgotten[2:] + `|(sig|seal)/` + forgotten[:2] + `|by-signer/seed-[ab])(/|:|$)`)
	srcDir := t.TempDir()
	var srcN int
	var srcMu sync.Mutex
	srcFile := func(data []byte) (string, error) {
		srcMu.Lock()
		srcN++
		p := filepath.Join(srcDir, fmt.Sprintf("src-%d", srcN))
		srcMu.Unlock()
		return p, os.WriteFile(p, data, 0o644)
	}
	// sigBytes are a version's bytes: who wrote it, which write, and a
	// length that moves (longer, shorter, equal) from one re-sign to the next.
	sigBytes := func(who string, i int) []byte {
		head := fmt.Sprintf("%s write %d|", who, i)
		n := 16 + (i*53)%200
		return append([]byte(head), bytes.Repeat([]byte{byte('a' + i%26)}, n)...)
	}

	// Host D: this process's handle. It seeds the bucket (the object to
	// forget among it) and folds it, so the mounts open a folded store.
	stD := openStore(t, url)
	hostD, err := index.Open(ctx, stD, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hostD.Close()
	var (
		mu       sync.Mutex
		acked    = map[string][]byte{}          // key -> its last acknowledged bytes ("" for an index entry)
		tried    = map[string]map[string]bool{} // key -> every version a writer sent
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	ack := func(key string, data []byte) {
		mu.Lock()
		acked[key] = data
		mu.Unlock()
	}
	// try records a version before it is sent: a reader may see it from
	// then on.
	try := func(key string, data []byte) {
		mu.Lock()
		if tried[key] == nil {
			tried[key] = map[string]bool{}
		}
		tried[key][string(data)] = true
		mu.Unlock()
	}
	// checkVersions: every file a reader read while writers ran holds a
	// whole version some writer sent.
	checkVersions := func(who string, tr tree) (files int) {
		mu.Lock()
		defer mu.Unlock()
		for p, v := range tr {
			data, ok := strings.CutPrefix(v, "file:")
			if !ok {
				continue
			}
			files++
			if !tried[p][data] {
				failures = append(failures, fmt.Sprintf("%s read %s as %d bytes %q…, which no writer sent", who, p, len(data), clip(data, 30)))
			}
		}
		return files
	}
	var seed []index.Write
	for i := range 4 {
		e := format.Entry{Kind: format.KindSig, Object: obj(i), Value: "seed"}
		seed = append(seed, index.Write{Entry: e, Data: sigBytes("seed", i)})
	}
	forgetSeed := []index.Write{
		{Entry: format.Entry{Kind: format.KindSig, Object: forgotten, Value: "seed-a"}, Data: sigBytes("seed-a", 1)},
		{Entry: format.Entry{Kind: format.KindSig, Object: forgotten, Value: "seed-b"}, Data: sigBytes("seed-b", 2)},
		{Entry: format.Entry{Kind: format.KindSeal, Object: forgotten, Value: "s1"}},
	}
	if err := hostD.PutBatch(ctx, append(seed, forgetSeed...)); err != nil {
		t.Fatalf("seed: %v", err)
	}
	for _, w := range append(seed, forgetSeed...) {
		try(w.Entry.Key(), w.Data)
	}
	for _, w := range seed {
		ack(w.Entry.Key(), w.Data)
	}
	if _, err := fold.Complete(ctx, stD, fold.Options{}); err != nil {
		t.Fatalf("seed fold: %v", err)
	}

	var ms []*mountProc
	for range mounts {
		ms = append(ms, startMount(t, srv, url, t.TempDir(), "--allow-overwrite", "--refresh-interval", interval))
	}
	sv := startServe(t, srv, url, "--refresh-interval", interval)
	started := time.Since(began)

	stop := make(chan struct{})
	var bg sync.WaitGroup // host D's refresher and folder: until stop
	var counts struct {
		sync.Mutex
		refreshes, partial, partialMarked, complete, collect, held, heldOld int
		scans, scannedFiles, interrupted                                    int
	}
	// Readers walk every mount (through the kernel, so it holds listings
	// and attributes across refreshes) and serve while the writers run. A
	// name of the forgotten object may vanish under a walk: that walk is
	// cut short, not failed (any other name that vanishes fails).
	scan := func(who string, walk func() (tree, error)) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			tr, err := walk()
			counts.Lock()
			counts.scans++
			counts.Unlock()
			if err != nil {
				// A forgotten object's key deleted before the mount's next
				// refresh: the name it still shows stands for nothing, and
				// the kernel gets ESTALE for it (as from NFS for a file
				// deleted under a client) or ENOENT. Any other name's
				// ESTALE fails.
				vanished := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESTALE) || strings.Contains(err.Error(), "404 Not Found")
				if vanished && forgottenName.MatchString(err.Error()) {
					counts.Lock()
					counts.interrupted++
					counts.Unlock()
					continue
				}
				fail("%s, walked while writers ran: %v", who, err)
				continue
			}
			n := checkVersions(who, tr)
			counts.Lock()
			counts.scannedFiles += n
			counts.Unlock()
		}
	}
	for i, m := range ms {
		bg.Go(func() { scan(fmt.Sprintf("mount %d", i), func() (tree, error) { return mountTree(m.dir) }) })
	}
	bg.Go(func() { scan("serve", func() (tree, error) { return serveTree(ctx, "http://"+sv.addr) }) })
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if err := hostD.Refresh(ctx); err != nil {
				fail("host D refresh: %v", err)
			}
			counts.Lock()
			counts.refreshes++
			counts.Unlock()
		}
	})
	reput := format.Entry{Kind: format.KindSig, Object: forgotten, Value: "d"}
	bg.Go(func() {
		for round := 0; ; round++ {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			switch round % 3 {
			case 0:
				res, err := journal.Partial(ctx, stD)
				if err != nil {
					fail("partial fold: %v", err)
					continue
				}
				counts.Lock()
				counts.partial++
				if res.Marked > 0 {
					counts.partialMarked++
				}
				counts.Unlock()
			case 1:
				if _, err := fold.Complete(ctx, stD, fold.Options{}); err != nil {
					fail("complete fold: %v", err)
					continue
				}
				counts.Lock()
				counts.complete++
				counts.Unlock()
			case 2:
				opts := fold.CollectOptions{}
				if round == 2 { // once: forget an object, then sign it again
					opts.ForgetObjects, opts.Apply = []fold.ForgetObject{{Object: forgotten}}, true
				}
				rep, err := fold.Collect(ctx, stD, opts)
				if err != nil {
					fail("gc: %v", err)
					continue
				}
				counts.Lock()
				counts.collect++
				counts.Unlock()
				if round == 2 {
					t.Logf("gc forgetting %s: %d keys forgotten", forgotten[:8], rep.Forget.Deleted)
					data := sigBytes("d-reput", round)
					try(reput.Key(), data)
					if err := hostD.Put(ctx, reput, data); err != nil {
						fail("put %s after the forget: %v", reput.Key(), err)
					} else {
						ack(reput.Key(), data)
					}
				}
			}
		}
	})

	var writers sync.WaitGroup
	for m, mp := range ms {
		writers.Go(func() {
			signer := fmt.Sprintf("m%d", m)
			for i := range cpsEach {
				e := format.Entry{Kind: format.KindSig, Object: obj(i % keysPerOwner), Value: signer}
				data := sigBytes(signer, i)
				try(e.Key(), data)
				if i < keysPerOwner {
					// cp creates the file: while it is open, before its
					// write, the name is listed and reads as empty (what
					// was written so far, as on a local filesystem; no
					// version is in the store yet).
					try(e.Key(), nil)
				}
				src, err := srcFile(data)
				if err != nil {
					fail("%v", err)
					return
				}
				dst := filepath.Join(mp.dir, e.Key())
				if _, errOut, err := runErr("mkdir", "-p", filepath.Dir(dst)); err != nil {
					fail("mkdir -p %s: %v: %s", filepath.Dir(dst), err, errOut)
					continue
				}
				if _, errOut, err := runErr("cp", src, dst); err != nil {
					fail("cp to mount %d %s: %v: %s", m, e.Key(), err, errOut)
					continue
				}
				ack(e.Key(), data)
				if i%4 == 3 { // an index entry too
					se := format.Entry{Kind: format.KindSeal, Object: obj(i % keysPerOwner), Value: fmt.Sprintf("%s-%d", signer, i)}
					p := filepath.Join(mp.dir, se.Key())
					try(se.Key(), nil)
					if _, errOut, err := runErr("mkdir", "-p", filepath.Dir(p)); err != nil {
						fail("mkdir -p %s: %v: %s", filepath.Dir(p), err, errOut)
						continue
					}
					if _, errOut, err := runErr("touch", p); err != nil {
						fail("touch in mount %d %s: %v: %s", m, se.Key(), err, errOut)
						continue
					}
					ack(se.Key(), []byte{})
				}
			}
		})
	}
	writers.Go(func() { // host D's own writer
		for b := range batches {
			var ws []index.Write
			for j := range 3 {
				i := b*3 + j
				e := format.Entry{Kind: format.KindSig, Object: obj(1 + i%keysPerOwner), Value: "d"}
				ws = append(ws, index.Write{Entry: e, Data: sigBytes("d", i)})
				try(e.Key(), ws[len(ws)-1].Data)
			}
			// One batch holds each key once: its bytes are the last.
			if err := hostD.PutBatch(ctx, ws); err != nil {
				fail("PutBatch %d: %v", b, err)
				continue
			}
			for _, w := range ws {
				ack(w.Entry.Key(), w.Data)
			}
			time.Sleep(150 * time.Millisecond)
		}
	})
	writers.Go(func() { // serve's host writes with the CLI
		for i := range cliPuts {
			e := format.Entry{Kind: format.KindSig, Object: obj(2 + i%2), Value: "cli"}
			data := sigBytes("cli", i)
			try(e.Key(), data)
			src, err := srcFile(data)
			if err != nil {
				fail("%v", err)
				return
			}
			r := oxyfs(t, srv, "put", "--force", url, e.Key(), src)
			if r.code != 0 {
				fail("oxyfs put %s:\n%s", e.Key(), r)
				continue
			}
			ack(e.Key(), data)
		}
	})
	for m := range 2 {
		writers.Go(func() {
			for r := range heldRounds {
				_, old, err := heldRead(ctx, hostD, ms[m].dir, obj(5+r), fmt.Sprintf("h%d", m), r, sigBytes, try, ack)
				if err != nil {
					fail("held descriptor on mount %d, round %d: %v", m, r, err)
					return // the rounds after would wait as long
				}
				counts.Lock()
				counts.held++
				if old {
					counts.heldOld++
				}
				counts.Unlock()
			}
		})
	}
	writers.Wait()
	close(stop)
	bg.Wait()
	writing := time.Since(began) - started

	// One refresh on each handle, then a fresh reader.
	for _, m := range ms {
		m.refresh()
	}
	sv.refresh(t)
	if err := hostD.Refresh(ctx); err != nil {
		t.Fatalf("host D final refresh: %v", err)
	}
	fresh, err := index.Open(ctx, openStore(t, url), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, err := indexTree(ctx, fresh)
	if err != nil {
		t.Fatalf("fresh reader: %v", err)
	}
	for _, f := range failures {
		t.Error(f)
	}

	// No acknowledged write is lost; the forgotten object's older entries
	// are gone, its re-signed one is there.
	lost := 0
	for key, data := range acked {
		got, ok := want[key]
		switch {
		case !ok:
			lost++
			t.Errorf("acknowledged write %s is missing from a fresh reader", key)
		case got != "file:"+string(data):
			lost++
			t.Errorf("%s: a fresh reader reads %d bytes %q…, want the last acknowledged %d bytes %q…", key, len(got)-5, clip(strings.TrimPrefix(got, "file:"), 30), len(data), clip(string(data), 30))
		}
	}
	for _, w := range forgetSeed {
		if _, ok := want[w.Entry.Key()]; ok {
			t.Errorf("%s of the forgotten object is still shown by a fresh reader", w.Entry.Key())
		}
	}

	for i, m := range ms {
		got, err := mountTree(m.dir)
		if err != nil {
			t.Errorf("mount %d: %v", i, err)
			continue
		}
		if d := treeDiff(want, got); d != "" {
			t.Errorf("mount %d differs from a fresh reader after its refresh:\n%s", i, d)
		}
	}
	got, err := serveTree(ctx, "http://"+sv.addr)
	if err != nil {
		t.Errorf("serve: %v", err)
	} else if d := treeDiff(want, got); d != "" {
		t.Errorf("serve differs from a fresh reader after its refresh:\n%s", d)
	}
	if got, err := indexTree(ctx, hostD); err != nil {
		t.Errorf("host D: %v", err)
	} else if d := treeDiff(want, got); d != "" {
		t.Errorf("host D differs from a fresh reader after its refresh:\n%s", d)
	}

	counts.Lock()
	defer counts.Unlock()
	if counts.partialMarked == 0 || counts.complete == 0 || counts.collect == 0 {
		t.Errorf("beside the writers ran %d partial folds (%d of them folding lines), %d complete folds, %d collections: want each at least once", counts.partial, counts.partialMarked, counts.complete, counts.collect)
	}
	if counts.held != 2*heldRounds {
		t.Errorf("%d of %d held-descriptor rounds completed", counts.held, 2*heldRounds)
	}
	files := 0
	for _, v := range want {
		if strings.HasPrefix(v, "file:") {
			files++
		}
	}
	t.Logf("%d handles (3 mounts, serve, host D) on one bucket: start %v, writing %v; %d acknowledged keys (%d lost), fresh reader %d names (%d files); beside the writers %d partial folds (%d folding lines), %d complete, %d gc, %d host D refreshes; %d descriptors held across a replacement (%d read the old version whole, the rest the new); %d reader walks beside the writers (%d files read, %d walks cut short by a vanished name); total %v",
		mounts+2, started.Round(time.Millisecond), writing.Round(time.Millisecond), len(acked), lost, len(want), files,
		counts.partial, counts.partialMarked, counts.complete, counts.collect, counts.refreshes, counts.held, counts.heldOld, counts.scans, counts.scannedFiles, counts.interrupted, time.Since(began).Round(time.Millisecond))
}

// heldRead holds a signature open on a mount across its replacement: host D
// puts version 1 of sig/<obj>/<signer>, the mount shows it, a descriptor is
// opened and its first 8 bytes read, host D puts version 2 (another length),
// the mount shows version 2 by name (a refresh came), and the descriptor is
// read to its end. It returns what the descriptor read, which must be one
// whole version, and whether it was the old one.
func heldRead(ctx context.Context, ix *index.Index, mnt, obj, signer string, round int, sigBytes func(string, int) []byte, try, ack func(string, []byte)) (whole []byte, old bool, err error) {
	e := format.Entry{Kind: format.KindSig, Object: obj, Value: signer}
	v1, v2 := sigBytes(signer, 2*round+1), sigBytes(signer, 2*round+2)
	if len(v1) == len(v2) {
		v2 = append(v2, "+"...)
	}
	p := filepath.Join(mnt, e.Key())
	try(e.Key(), v1)
	try(e.Key(), v2)
	if err := ix.Put(ctx, e, v1); err != nil {
		return nil, false, fmt.Errorf("put version 1: %w", err)
	}
	ack(e.Key(), v1)
	if err := waitBytes(p, v1); err != nil {
		return nil, false, fmt.Errorf("version 1: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, false, fmt.Errorf("read the first 8 bytes: %w", err)
	}
	if err := ix.Put(ctx, e, v2); err != nil {
		return nil, false, fmt.Errorf("put version 2: %w", err)
	}
	ack(e.Key(), v2)
	if err := waitBytes(p, v2); err != nil {
		return nil, false, fmt.Errorf("version 2: %w", err)
	}
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read the held descriptor to its end: %w", err)
	}
	whole = slices.Concat(head, rest)
	switch {
	case bytes.Equal(whole, v1):
		return whole, true, nil
	case bytes.Equal(whole, v2):
		return whole, false, nil
	}
	return whole, false, fmt.Errorf("the descriptor held across a replacement read %d bytes %q…, neither version 1 (%d bytes) nor version 2 (%d bytes) whole", len(whole), clip(string(whole), 40), len(v1), len(v2))
}

// heldWait bounds how long a mount refreshing every second may take to show
// a write of another handle.
const heldWait = 15 * time.Second

// waitBytes reads p by name until it holds want, within heldWait.
func waitBytes(p string, want []byte) error {
	deadline := time.Now().Add(heldWait)
	var got []byte
	var err error
	for time.Now().Before(deadline) {
		if got, err = os.ReadFile(p); err == nil && bytes.Equal(got, want) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	//nolint:errorlint // err is nil when the bytes differ (shown as <nil>); a message, nothing matches it
	return fmt.Errorf("%s still reads %d bytes %q… (%v) after %v, want %d bytes %q…", p, len(got), clip(string(got), 30), err, heldWait, len(want), clip(string(want), 30))
}

// refresh sends SIGHUP to serve and waits for it to log that it refreshed.
func (s *serveProc) refresh(t *testing.T) {
	t.Helper()
	n, _ := s.log.count("refreshed (SIGHUP)")
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP to oxyfs serve: %v", err)
	}
	deadline := time.NewTimer(cmdTimeout)
	defer deadline.Stop()
	for {
		got, changed := s.log.count("refreshed (SIGHUP)")
		if got > n {
			return
		}
		select {
		case <-changed:
		case <-s.exited:
			t.Fatalf("oxyfs serve exited:\n%s", s.log)
		case <-deadline.C:
			t.Fatalf("oxyfs serve did not refresh within %v:\n%s", cmdTimeout, s.log)
		}
	}
}
