package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestAppendAddsOneUnfoldedLinePerKeyInOneUpdate(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		a, b, c := ekey(format.KindSig, "abcd", "alice"), ekey(format.KindSeal, "abcd", "v 1"), ekey(format.KindCert, "0011", "k")
		before := st.Counts()
		res, err := Append(context.Background(), st, []string{a, b, a, c})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tries != 1 || res.Dropped != 0 || res.PartialList != "" {
			t.Errorf("result %+v, want one try and nothing else", res)
		}
		want := "0 " + a + "\n0 " + b + "\n0 " + c + "\n"
		if got := readRecordText(t, st, format.JournalKey); got != want {
			t.Errorf("journal = %q, want %q (a key given twice in one call gets one line)", got, want)
		}
		if d := st.Counts().Sub(before); d.Put != 1 {
			t.Errorf("append sent %v, want exactly one PUT", d)
		}
	})
}

func TestAppendOfNoKeysSendsNothing(t *testing.T) {
	st, _ := newMem(t)
	before := st.Counts()
	if _, err := Append(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(before); d.Total() != 0 {
		t.Errorf("append of nothing sent %v", d)
	}
}

func TestAppendRefusesMalformedKeysAndWritesNothing(t *testing.T) {
	st, _ := newMem(t)
	good := ekey(format.KindSig, "abcd", "alice")
	for _, bad := range []string{"sig/ab/cd", "sig/AB/cd/x", "nope/ab/cd/x", "sig/ab/cd/a\nb", ""} {
		_, err := Append(context.Background(), st, []string{good, bad})
		if !errors.Is(err, format.ErrBadKey) {
			t.Errorf("Append(%q) = %v, want ErrBadKey", bad, err)
		}
	}
	if got := readRecordText(t, st, format.JournalKey); got != "" {
		t.Errorf("journal = %q, want nothing written", got)
	}
}

func TestAppendDropsFoldedLinesAfterAnHour(t *testing.T) {
	st, clk := newMem(t)
	old, recent, open := ekey(format.KindSig, "abcd", "old"), ekey(format.KindSig, "abcd", "recent"), ekey(format.KindSig, "abcd", "open")
	putRecord(t, st, format.JournalKey, fmt.Sprintf("%d %s\n%d %s\n0 %s\n", t0, old, t0+1, recent, open))

	clk.Set(t0 + ms(hour)) // exactly an hour: kept
	res, err := Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "n1")})
	if err != nil || res.Dropped != 0 {
		t.Fatalf("at one hour: dropped %d, err %v; want nothing dropped", res.Dropped, err)
	}
	clk.Set(t0 + ms(hour) + 1) // more than an hour after the first: it goes
	res, err = Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "n2")})
	if err != nil || res.Dropped != 1 {
		t.Fatalf("past one hour: dropped %d, err %v; want 1", res.Dropped, err)
	}
	clk.Advance(100 * hour) // unfolded lines never expire
	if _, err := Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "n3")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range storefixture.ReadJournal(t, st) {
		got = append(got, fmt.Sprintf("%d %s", l.FoldedAt, strings.TrimPrefix(l.Key, "sig/ab/cd/")))
	}
	want := []string{"0 open", "0 n1", "0 n2", "0 n3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("journal = %v, want %v", got, want)
	}
}

func TestAppendKeepsJournalLinesItCannotParse(t *testing.T) {
	st, _ := newMem(t)
	k := ekey(format.KindSig, "abcd", "alice")
	putRecord(t, st, format.JournalKey, "0 "+k+"\nfuture-format line\n\n0 sig/zz/x/y\n")
	if _, err := Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "bob")}); err != nil {
		t.Fatal(err)
	}
	want := "0 " + k + "\nfuture-format line\n0 sig/zz/x/y\n0 " + ekey(format.KindSig, "abcd", "bob") + "\n"
	if got := readRecordText(t, st, format.JournalKey); got != want {
		t.Errorf("journal = %q, want %q (bad lines kept verbatim, the blank one dropped)", got, want)
	}
}

func TestConcurrentAppendsNeverLoseLines(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		const writers, each = 8, 6
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					k := ekey(format.KindReceipt, "abcd", fmt.Sprintf("w%d-%d", w, i))
					if _, err := Append(context.Background(), st, []string{k}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if n := len(storefixture.ReadJournal(t, st)); n != writers*each {
			t.Errorf("journal has %d lines, want %d", n, writers*each)
		}
	})
}

func TestAppendRefusesTheDirectoryLayout(t *testing.T) {
	st, err := store.Open(context.Background(), "file://"+t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Append(context.Background(), st, []string{ekey(format.KindSig, "abcd", "a")}); !errors.Is(err, ErrDirectoryLayout) {
		t.Errorf("Append on a directory store = %v, want ErrDirectoryLayout", err)
	}
}

func TestAppendReportsAFailedPartialFoldAsLanded(t *testing.T) {
	st, fb := newFaultStore(t, store.NewFakeClock(t0))
	fb.failIf(func(op, key string) bool { return op == "put" && strings.HasSuffix(key, format.PartialListSuffix) })
	var keys []string
	for i := range 5 {
		keys = append(keys, ekey(format.KindSeal, "abcd", fmt.Sprint(i)))
	}
	res, err := AppendThreshold(context.Background(), st, keys, 3)
	if !errors.Is(err, ErrPartialFold) {
		t.Fatalf("err = %v, want ErrPartialFold", err)
	}
	if res.Tries != 1 {
		t.Errorf("tries = %d, want the append's own 1", res.Tries)
	}
	fb.failIf(nil)
	lines := storefixture.ReadJournal(t, st)
	if len(lines) != 5 {
		t.Errorf("journal has %d lines, want the 5 the append landed", len(lines))
	}
	for _, l := range lines {
		if l.Folded() {
			t.Errorf("line %q marked although its partial list was never written", l.Key)
		}
	}
	// The next update folds them.
	res, err = AppendThreshold(context.Background(), st, []string{ekey(format.KindSeal, "abcd", "x")}, 3)
	if err != nil || res.PartialLines != 6 {
		t.Errorf("next append: %+v, %v; want its partial fold to mark all 6 lines", res, err)
	}
}
