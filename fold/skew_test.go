package fold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// bucketKeys is every key of st with its bytes.
func bucketKeys(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	it := st.Bucket().List(nil)
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		data, err := st.Bucket().ReadAll(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[o.Key] = string(data)
	}
	return out
}

// TestFoldRefusesALocalClockOffAFileStoresClock: a file:// store's clock
// is its filesystem's (the mtime of a probe); a fold or a collection on a
// host whose clock is more than store.ClockMargin off it refuses, naming
// the skew, and changes nothing. The skewed local clock is injected
// through store.Options.Clock; the store's is the real filesystem's.
func TestFoldRefusesALocalClockOffAFileStoresClock(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		off  time.Duration // the local clock minus the real one
		dir  string        // what the refusal says
	}{
		{"2h-behind", -2 * time.Hour, "behind"},
		{"2h-ahead", 2 * time.Hour, "ahead of"},
		{"just-over-the-margin", -(store.ClockMargin + 5*time.Second), "behind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := (&url.URL{Scheme: "file", Path: t.TempDir()}).String()
			honest := storefixture.Open(t, u, store.Options{Layout: store.LayoutBucket})
			write(t, honest, ekey(format.KindSig, "abcd", "alice"), ekey(format.KindSeal, "abcd", "s1"))
			before := bucketKeys(t, honest)

			skewed := storefixture.Open(t, u, store.Options{Layout: store.LayoutBucket,
				Clock: store.NewFakeClock(time.Now().Add(c.off).UnixMilli())})
			_, ferr := Complete(ctx, skewed, Options{})
			_, cerr := Collect(ctx, skewed, CollectOptions{})
			for op, err := range map[string]error{"fold": ferr, "collect": cerr} {
				var se *store.SkewError
				if !errors.As(err, &se) || !errors.Is(err, store.ErrClockSkew) {
					t.Fatalf("%s on a clock %v off: %v, want store.ErrClockSkew", op, c.off, err)
				}
				// The skew measured is the one injected, to the probe's
				// resolution and the time the test took.
				if d := se.Skew - c.off; d < -10*time.Second || d > 10*time.Second {
					t.Errorf("%s: skew %v, want about %v", op, se.Skew, c.off)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, op+": ") || !strings.Contains(msg, " "+c.dir+" the store's") || !strings.Contains(msg, store.ClockMargin.String()) {
					t.Errorf("%s: the refusal %q does not name the skew, its direction (%s) and the margin", op, msg, c.dir)
				}
			}
			if after := bucketKeys(t, honest); !maps.Equal(before, after) {
				t.Errorf("a refused fold changed the store:\nbefore %v\nafter  %v", before, after)
			}
			// A dry run writes nothing and is not checked.
			if _, err := Complete(ctx, skewed, Options{DryRun: true}); err != nil {
				t.Errorf("dry run: %v", err)
			}
		})
	}
}

// TestFoldWithinTheMarginStampsTheStoresTime: a fold on a host whose
// clock is within store.ClockMargin of the store's goes ahead, and what it
// stamps (retired-at, folded-at) is the store's time, not the host's, so
// the hour of each change is kept on the one clock every host reads.
func TestFoldWithinTheMarginStampsTheStoresTime(t *testing.T) {
	ctx := context.Background()
	world := store.NewFakeClock(t0)
	st := openStore(t, "mem://", world)
	write(t, st, ekey(format.KindSig, "abcd", "alice"))
	if _, err := Complete(ctx, st, Options{}); err != nil {
		t.Fatal(err)
	}
	world.Advance(time.Minute)
	write(t, st, ekey(format.KindSeal, "abcd", "s1"))

	behind := store.NewFakeClock(t0 - (3 * time.Minute).Milliseconds())
	host := store.New(st.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: behind, StoreClock: world})
	rep, err := Complete(ctx, host, Options{})
	if err != nil {
		t.Fatalf("a fold 3 min behind (within the margin %v): %v", store.ClockMargin, err)
	}
	if len(rep.Retired) != 1 {
		t.Fatalf("fold: %+v", rep)
	}
	want := fmt.Sprintf("%d %s\n", world.NowMs(), rep.Retired[0])
	if got := readRecordText(t, st, format.RetiredKey); got != want {
		t.Errorf("retired record %q, want %q (the store's time)", got, want)
	}
	lines, _ := format.ParseJournal([]byte(readRecordText(t, st, format.JournalKey)))
	for _, l := range lines {
		if l.FoldedAt != world.NowMs() && l.FoldedAt != t0 {
			t.Errorf("journal line %s folded at %d, want the store's time %d", l.Key, l.FoldedAt, world.NowMs())
		}
	}
}
