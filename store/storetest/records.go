package storetest

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

const recordKey = "pack-conformance-counter"

func testRecordCreate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	must(t, s.WriteRecord(ctx, recordKey, []byte("1"), store.Version{}))
	if err := s.WriteRecord(ctx, recordKey, []byte("2"), store.Version{}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("create-only write of an existing record: %v, want ErrConflict", err)
	}
	data, v, err := s.ReadRecord(ctx, recordKey)
	must(t, err)
	if string(data) != "1" || !v.Exists || v.Token == "" {
		t.Fatalf("ReadRecord = %q, %+v; want \"1\" with a token", data, v)
	}
	must(t, s.WriteRecord(ctx, recordKey, []byte("3"), v))
	data, v2, err := s.ReadRecord(ctx, recordKey)
	must(t, err)
	if string(data) != "3" || v2.Token == v.Token {
		t.Fatalf("after replace: %q token %q (old %q); want \"3\" and a new token", data, v2.Token, v.Token)
	}
	if err := s.PutIfAbsent(ctx, "pack-x.entries", []byte("a")); err != nil {
		t.Fatalf("PutIfAbsent of a new key: %v", err)
	}
	if err := s.PutIfAbsent(ctx, "pack-x.entries", []byte("b")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("PutIfAbsent of an existing key: %v, want ErrConflict", err)
	}
	got, err := s.Get(ctx, "pack-x.entries")
	if err != nil || string(got) != "a" {
		t.Fatalf("create-only key = %q, %v; want the first write \"a\"", got, err)
	}
	checkWire(t, s)
}

func testLostRace(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	a, b := open(t), open(t)
	must(t, a.WriteRecord(ctx, recordKey, []byte("base"), store.Version{}))
	_, va, err := a.ReadRecord(ctx, recordKey)
	must(t, err)
	_, vb, err := b.ReadRecord(ctx, recordKey)
	must(t, err)
	must(t, b.WriteRecord(ctx, recordKey, []byte("b wins"), vb))
	if err := a.WriteRecord(ctx, recordKey, []byte("a loses"), va); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write at a stale version: %v, want ErrConflict", err)
	}
	got, _, err := a.ReadRecord(ctx, recordKey)
	must(t, err)
	if string(got) != "b wins" {
		t.Fatalf("record = %q, want the winner's \"b wins\"", got)
	}
	// A record deleted since it was read: the write must not recreate it blindly.
	must(t, b.Delete(ctx, recordKey))
	if err := a.WriteRecord(ctx, recordKey, []byte("stale"), vb); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write at the version of a deleted record: %v, want ErrConflict", err)
	}
	checkWire(t, a)
	checkWire(t, b)
}

// largeRecord is a record size past every SDK's single-request threshold
// (S3's transfer manager switches to a multipart upload at 5-8 MiB): a
// journal of 100,000 lines within their hour is about 9 MiB.
const largeRecord = 9 << 20

// testLargeLostRace: the compare-and-swap rules hold for a record too large
// for one request's default buffer: a create-only write of an existing
// record, a write at a stale version and one at the version of a deleted
// record are all refused and change nothing. Refused is ErrConflict, or
// ErrUnavailable when the server answered before reading the whole body
// and dropped the connection (versitygw sends its 412 early): the writer
// cannot tell that from a lost answer, so UpdateRecord reads the record
// again, as it does after any lost write.
func testLargeLostRace(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	a, b := open(t), open(t)
	big := func(c byte) []byte {
		p := make([]byte, largeRecord)
		for i := range p {
			p[i] = c + byte(i%7)
		}
		return p
	}
	refused := func(what string, err error, key string, want []byte) {
		t.Helper()
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("%s: %v, want ErrConflict (or ErrUnavailable)", what, err)
		}
		got, err := a.Get(ctx, key)
		switch {
		case want == nil && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("%s: the refused write left %d bytes, %v; want no record", what, len(got), err)
		case want != nil && (err != nil || !bytes.Equal(got, want)):
			t.Fatalf("%s: the record holds %d bytes (%v), want the %d bytes it held", what, len(got), err, len(want))
		}
	}
	must(t, a.WriteRecord(ctx, recordKey, big('a'), store.Version{}))
	refused("create-only write of an existing large record", b.WriteRecord(ctx, recordKey, big('b'), store.Version{}), recordKey, big('a'))
	_, va, err := a.ReadRecord(ctx, recordKey)
	must(t, err)
	_, vb, err := b.ReadRecord(ctx, recordKey)
	must(t, err)
	must(t, b.WriteRecord(ctx, recordKey, big('c'), vb))
	refused("large write at a stale version", a.WriteRecord(ctx, recordKey, big('d'), va), recordKey, big('c'))
	must(t, b.Delete(ctx, recordKey))
	refused("large write at the version of a deleted record", a.WriteRecord(ctx, recordKey, big('e'), vb), recordKey, nil)
	if err := a.PutIfAbsent(ctx, "pack-large.entries", big('f')); err != nil {
		t.Fatalf("PutIfAbsent of a new large key: %v", err)
	}
	refused("PutIfAbsent of an existing large key", b.PutIfAbsent(ctx, "pack-large.entries", big('g')), "pack-large.entries", big('f'))
	// UpdateRecord gets through either way: two handles appending to a
	// large record in turn, each from a stale read, lose nothing.
	must(t, a.WriteRecord(ctx, recordKey, big('h'), store.Version{}))
	for i := range 4 {
		w := a
		if i%2 == 1 {
			w = b
		}
		_, stale, err := w.ReadRecord(ctx, recordKey)
		must(t, err)
		_, err = w.UpdateRecord(ctx, recordKey, func(old []byte, _ bool) ([]byte, error) {
			return append(old[:len(old):len(old)], byte('0'+i)), nil
		})
		must(t, err)
		// A stale write from the other handle must not land.
		o := b
		if w == b {
			o = a
		}
		err = o.WriteRecord(ctx, recordKey, big('x'), stale)
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("stale large write %d: %v, want it refused", i, err)
		}
	}
	got, err := a.Get(ctx, recordKey)
	must(t, err)
	if want := append(big('h'), "0123"...); !bytes.Equal(got, want) {
		t.Fatalf("after four updates the record ends %q (%d bytes), want ...0123 (%d bytes)", got[max(0, len(got)-4):], len(got), len(want))
	}
	checkWire(t, a)
	checkWire(t, b)
}

func testCreateRace(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	const racers = 16
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	handles := make([]*store.Store, racers)
	for i := range handles {
		handles[i] = open(t)
	}
	start := make(chan struct{})
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			err := handles[i].PutIfAbsent(ctx, "pack-race.entries", []byte(strconv.Itoa(i)))
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != racers-1 {
		t.Fatalf("create-only race: %d winners, %d conflicts; want 1 and %d", wins.Load(), conflicts.Load(), racers-1)
	}
}

// Increment adds one to the counter record at key by UpdateRecord and
// returns the tries it took. Child processes of a backend test use it too.
func Increment(ctx context.Context, s *store.Store, key string) (int, error) {
	res, err := s.UpdateRecord(ctx, key, func(old []byte, exists bool) ([]byte, error) {
		n := 0
		if exists {
			var err error
			if n, err = strconv.Atoi(string(old)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	})
	return res.Tries, err
}

func testContention(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	var maxTries atomic.Int32
	handles := make([]*store.Store, workers)
	for i := range handles {
		handles[i] = open(t)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(s *store.Store) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				tries, err := Increment(ctx, s, recordKey)
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
				for {
					m := maxTries.Load()
					if int32(tries) <= m || maxTries.CompareAndSwap(m, int32(tries)) {
						break
					}
				}
			}
		}(handles[w])
	}
	wg.Wait()
	got, _, err := handles[0].ReadRecord(ctx, recordKey)
	must(t, err)
	if string(got) != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s after %d×%d increments, want %d", got, workers, each, workers*each)
	}
	t.Logf("%d×%d increments: at most %d tries for one update", workers, each, maxTries.Load())
	for _, s := range handles {
		checkWire(t, s)
	}
}

func testNoChange(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	res, err := s.UpdateRecord(ctx, recordKey, func([]byte, bool) ([]byte, error) { return nil, store.ErrNoChange })
	must(t, err)
	if res.Wrote || res.Tries != 1 {
		t.Fatalf("UpdateRecord with no change = %+v, want 1 try and no write", res)
	}
	if c := s.Counts(); c.Put != 0 {
		t.Fatalf("no-change update sent %d PUTs", c.Put)
	}
}
