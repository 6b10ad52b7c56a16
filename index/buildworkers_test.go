package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// sameDecodedList fails unless a and b hold the same list: the same
// entries, values (by text, and the same ids: the tables are built in the
// same order), sources, counts and malformed keys. Capacities may differ.
func sameDecodedList(t *testing.T, a, b *decodedList) {
	t.Helper()
	if a.keys != b.keys || a.text != b.text || a.mal != b.mal || a.src != b.src || a.name != b.name {
		t.Fatalf("keys %d/%d, text %d/%d, malformed %v/%v", a.keys, b.keys, a.text, b.text, a.mal, b.mal)
	}
	sameRun(t, a.r, b.r)
	if a.vt.n() != b.vt.n() || !slices.Equal(a.interned, b.interned) {
		t.Fatalf("%d/%d values, %d/%d interned", a.vt.n(), b.vt.n(), len(a.interned), len(b.interned))
	}
	for id := range uint32(a.vt.n()) {
		if a.vt.str(id) != b.vt.str(id) || a.vt.isHex(id) != b.vt.isHex(id) {
			t.Fatalf("value %d: %q/%q", id, a.vt.str(id), b.vt.str(id))
		}
	}
}

// sameRun fails unless two runs hold the same arrays (lengths and
// contents; value ids compared as ids).
func sameRun(t *testing.T, a, b *run) {
	t.Helper()
	for k := range a.kinds {
		x, y := &a.kinds[k], &b.kinds[k]
		if !bytes.Equal(x.objs, y.objs) || !slices.Equal(x.objOff, y.objOff) || x.objW != y.objW && x.nObj() > 0 ||
			!slices.Equal(x.first, y.first) || !slices.Equal(x.vals, y.vals) || !slices.Equal(x.srcs, y.srcs) || x.hh != y.hh {
			t.Fatalf("kind %s: %d objects, %d entries against %d, %d, or their arrays differ",
				format.Kind(k), x.nObj(), x.nEntries(), y.nObj(), y.nEntries())
		}
	}
}

// decodeBoth decodes data serially and with build workers and returns both
// (or both errors).
func decodeBoth(t *testing.T, data []byte, keys, maxKeys int) (serial, par *decodedList, errS, errP error) {
	t.Helper()
	serial, errS = decodeEntryList(1, "list x", bytes.NewReader(data), keys, maxKeys)
	par, errP = decodeEntryListWith(1, "list x", bytes.NewReader(data), keys, maxKeys, 2)
	return serial, par, errS, errP
}

// genList is the one complete list of a generated store.
func genList(t *testing.T, opts storegen.Options) []byte {
	t.Helper()
	ctx := context.Background()
	st := storefixture.NewMem(t)
	opts.Fold, opts.SkipObjects = true, true
	if _, err := storegen.Generate(ctx, st, opts); err != nil {
		t.Fatal(err)
	}
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := st.Get(ctx, sn.LiveLists()[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// With Options.BuildWorkers > 1 a list decodes to exactly what the serial
// decode makes, for generated stores of several sizes and mixes (every
// kind sized from a sample: kindSizer; the last kind: lastKindSizer), the
// same lists with malformed keys among them, and a frame that declares no
// size (nothing sized: grown by doubling).
func TestBuildWorkersDecodeTheSameList(t *testing.T) {
	for _, o := range []storegen.Options{
		{Entries: 1000, Seed: 1},
		{Entries: 60_000, Seed: 2}, // sig past lastKindSizer's sample
		{Entries: 50_000, Seed: 3, Signers: 1},
		{Entries: 40_000, Seed: 4, Signers: 200, Legacy: 50},
	} {
		t.Run(fmt.Sprintf("%d-%d", o.Entries, o.Seed), func(t *testing.T) {
			data := genList(t, o)
			keys, err := format.DecodeEntryListAll(data)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, "accepted/ab/xyz/v", "receipt/00/0/x", "sig/ab/cdef", "sig/ff/Ab/v", "zzz/ab/cd/v")
			slices.Sort(keys)
			_, withMal, err := format.EncodeEntryListSorted(keys)
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string][]byte{"list": data, "malformed": withMal, "no size": withoutDeclaredSize(t, withMal)} {
				s, p, errS, errP := decodeBoth(t, data, 0, 0)
				if errS != nil || errP != nil {
					t.Fatalf("%s: %v / %v", name, errS, errP)
				}
				sameDecodedList(t, s, p)
				if name == "malformed" {
					sameAsKeyByKey(t, p, keys)
				}
				for k := range p.r.kinds {
					if g := &p.r.kinds[k]; cap(g.vals) > len(g.vals)+len(g.vals)/16 {
						t.Errorf("%s: kind %s: %d entries in a capacity of %d", name, format.Kind(k), len(g.vals), cap(g.vals))
					}
				}
			}
		})
	}
}

// The kinds before the last are sized from a sample (kindSizer) whether
// their ids are digests (uniform) or not (all at the start of the id
// space: capped by the text left), and keys out of order past the sample
// are still refused, with the serial decode's error.
func TestBuildWorkersSizeTheKindsBeforeTheLast(t *testing.T) {
	const n = 3 * kindSample
	var keys []string
	for i := range n {
		d := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		h := hex.EncodeToString(d[:])
		keys = append(keys, fmt.Sprintf("seal/%s/%s/%s", h[:2], h[2:], hex.EncodeToString(d[:20])))
		keys = append(keys, fmt.Sprintf("approval/00/%062x/signer-%d", i, i%7)) // not uniform
		if i%3 == 0 {
			keys = append(keys, fmt.Sprintf("sig/%s/%s/alice", h[:2], h[2:]))
		}
	}
	keys = append(keys, "approval/00/zz/v")
	slices.Sort(keys)
	_, data, err := format.EncodeEntryListSorted(keys)
	if err != nil {
		t.Fatal(err)
	}
	pf0 := prefaultedBytes.Load()
	s, p, errS, errP := decodeBoth(t, data, 0, 0)
	if errS != nil || errP != nil {
		t.Fatal(errS, errP)
	}
	sameDecodedList(t, s, p)
	sameAsKeyByKey(t, p, keys)
	if prefaultedBytes.Load() == pf0 && runtime.GOOS == "linux" {
		t.Errorf("no page prefaulted")
	}
	for _, k := range []format.Kind{format.KindSeal, format.KindApproval} {
		g := &p.r.kinds[k]
		if !g.sized {
			t.Errorf("kind %s: not sized from a sample", k)
		}
		if c, n := cap(g.objs), len(g.objs); c > n+n/16 {
			t.Errorf("kind %s: %d bytes of object ids in a capacity of %d", k, n, c)
		}
	}

	var text strings.Builder
	text.WriteString(format.EntryListHeader + "\n")
	for i := range 2 * kindSample {
		j := i
		if i == kindSample+100 {
			j = 5 // before its predecessor
		}
		fmt.Fprintf(&text, "approval/%02x/%060x/v\n", j>>8&0xff, j)
	}
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write([]byte(text.String()))
	enc.Close()
	if _, _, errS, errP := decodeBoth(t, buf.Bytes(), 0, 0); !errors.Is(errP, format.ErrCorrupt) || errS == nil || errS.Error() != errP.Error() {
		t.Fatalf("keys out of order: %v, serially %v; want the same ErrCorrupt", errP, errS)
	}
}

// A list that does not decode fails with build workers as it does
// serially, with the same error, and leaves no goroutine behind: a
// truncated frame, garbage, a bad header, keys out of order in the last
// kind, keys past the cap (of this list, and with keys held before it).
func TestBuildWorkersFailAsTheSerialDecode(t *testing.T) {
	data := genList(t, storegen.Options{Entries: 60_000, Seed: 7})
	keys, err := format.DecodeEntryListAll(data)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	text.WriteString(format.EntryListHeader + "\n")
	for _, k := range keys {
		text.WriteString(k + "\n")
	}
	unsorted := strings.Replace(text.String(), keys[len(keys)-2]+"\n", "", 1) + keys[len(keys)-2] + "\n"
	zst := func(s string) []byte {
		var buf bytes.Buffer
		enc, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		enc.Write([]byte(s))
		enc.Close()
		return buf.Bytes()
	}
	before := runtime.NumGoroutine()
	cases := []struct {
		name          string
		data          []byte
		keys, maxKeys int
	}{
		{"truncated", data[:len(data)*2/3], 0, 0},
		{"garbage", bytes.Repeat([]byte("not zstd"), 1000), 0, 0},
		{"bad header", zst("oxy-entries 9\n" + strings.Join(keys, "\n") + "\n"), 0, 0},
		{"unsorted last kind", zst(unsorted), 0, 0},
		{"over its cap", data, 0, len(keys) - 1000},
		{"over the cap with keys held", data, 1000, len(keys)},
		{"no end of line", zst(strings.TrimSuffix(text.String(), "\n")), 0, 0},
	}
	for _, c := range cases {
		s, p, errS, errP := decodeBoth(t, c.data, c.keys, c.maxKeys)
		if errS == nil || errP == nil || errS.Error() != errP.Error() || s != nil || p != nil {
			t.Errorf("%s: %v; serially %v: want the same error", c.name, errP, errS)
		}
	}
	noGoroutinesLeft(t, before)
}

// noGoroutinesLeft waits a little for the goroutines to be at most before.
func noGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An open with build workers holds what a serial open holds: a complete
// list with partial lists beside it (several lists adopted and merged),
// and a corrupt partial list (the open falls back to prefix listing with
// the same warning).
func TestBuildWorkersOpenTheSameSet(t *testing.T) {
	ctx := context.Background()
	for _, corrupt := range []bool{false, true} {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 50_000, Seed: 9, Fold: true, SkipObjects: true}); err != nil {
			t.Fatal(err)
		}
		storefixture.WriteList(t, st, false, listKeys(40_000, 1)...)
		storefixture.WriteList(t, st, false, listKeys(20_000, 2)...)
		if corrupt {
			sum := sha256.Sum256([]byte("corrupt"))
			if err := st.Put(ctx, format.EntryListName(hex.EncodeToString(sum[:]), false), []byte("not zstd")); err != nil {
				t.Fatal(err)
			}
		}
		open := func(workers int) (*view, []string) {
			w := &warnings{}
			ix, err := Open(ctx, st, Options{Warn: w.add, BuildWorkers: workers})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ix.Close() })
			v, err := ix.current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return v, w.all()
		}
		vs, ws := open(1)
		vp, wp := open(4)
		if !slices.Equal(ws, wp) || vs.mode != vp.mode {
			t.Fatalf("corrupt %v: mode %s, warnings %q; serially %s, %q", corrupt, vp.mode, wp, vs.mode, ws)
		}
		if corrupt {
			if vp.mode != ModePrefixListing {
				t.Fatalf("mode %s with a corrupt list, want %s", vp.mode, ModePrefixListing)
			}
			continue
		}
		a, b := vs.base, vp.base
		sameRun(t, runOf(a), runOf(b))
		if a.vt.n() != b.vt.n() || !slices.Equal(a.srcNames, b.srcNames) || !slices.Equal(a.signers, b.signers) {
			t.Fatalf("%d/%d values, sources %q/%q", a.vt.n(), b.vt.n(), a.srcNames, b.srcNames)
		}
		for id := range uint32(a.vt.n()) {
			if a.vt.str(id) != b.vt.str(id) {
				t.Fatalf("value %d: %q/%q", id, a.vt.str(id), b.vt.str(id))
			}
		}
	}
}

// An open with build workers whose context ends while a list's body is
// still on the wire fails with the context's error and leaves no
// goroutine of the decode (nor its prefaulter) behind.
func TestBuildWorkersOpenCanceledLeavesNoGoroutine(t *testing.T) {
	var held, ended atomic.Bool
	release := make(chan struct{}) // never closed: only the context frees the body
	st := bodyHookStore(t, func(ctx context.Context, r io.Reader) io.Reader {
		return &heldBody{ctx: ctx, r: r, part: 32 << 10, release: release, held: &held, ended: &ended}
	})
	storefixture.WriteList(t, st, true, listKeys(200_000, 0)...) // 98 KB of list
	before := runtime.NumGoroutine()
	ix, err := Open(context.Background(), st, Options{Warn: func(string) {}, BuildWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !held.Load() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := ix.Load(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load: %v, want context.Canceled", err)
	}
	ix.Close()
	noGoroutinesLeft(t, before)
}

// The prefaulter is handed an array's pages in a window ahead of its
// length, never more: a reservation the build does not fill is not
// faulted in past prefaultAhead.
func TestPrefaultWindowIsBounded(t *testing.T) {
	p := &prefaulter{ranges: make(chan []byte, prefaultQueue), handed: make(map[uintptr]int)}
	s := make([]uint32, 0, 32<<20) // 128 MiB reserved, none of it filled
	var got []int
	take := func() {
		for {
			select {
			case r := <-p.ranges:
				got = append(got, len(r))
			default:
				return
			}
		}
	}
	ahead(p, s)
	ahead(p, s) // nothing new: far enough ahead
	take()
	if !slices.Equal(got, []int{prefaultAhead}) {
		t.Fatalf("ranges %v for an empty array, want one of %d", got, prefaultAhead)
	}
	s = s[:5<<20] // 20 MiB filled: within half the window of its end
	ahead(p, s)
	take()
	if !slices.Equal(got, []int{prefaultAhead, 20 << 20}) {
		t.Fatalf("ranges %v, want the window moved to 20 MiB past the length: %d more", got, 20<<20)
	}
	s = s[:cap(s)-1000]
	ahead(p, s)
	take()
	if len(got) != 2 {
		t.Fatalf("ranges %v: a range of less than %d handed", got, prefaultMin)
	}
}

// Options.BuildWorkers left 0 is the sized decode wherever two goroutines
// can run at once, and the serial one on one CPU; 1 is always serial.
func TestBuildWorkersDefaultToTheSizedDecodeOnTwoCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, n, want int }{{2, 0, 2}, {8, 0, 2}, {1, 0, 1}, {4, 1, 1}, {1, 3, 3}} {
		runtime.GOMAXPROCS(c.procs)
		if got := buildWorkers(c.n); got != c.want {
			t.Errorf("GOMAXPROCS %d, BuildWorkers %d: decoded with %d, want %d", c.procs, c.n, got, c.want)
		}
	}
}
