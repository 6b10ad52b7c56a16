package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
)

// Issue 22 item 7: the hour rules are kept on the store's clock, read from
// the Date of its answers. Each subtest runs against versitygw,
// fake-gcs-server and Azurite through testkit/lyingproxy, whose ShiftDate
// makes the store's clock hours off this host's (the other way round from
// a host whose clock is off, which is what the store sees alike), and
// NoDate a store that gives no time.
func TestClockThroughARealServer(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			for _, c := range clockCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newGCLiar(t, kind)) })
			}
		})
	}
}

var clockCases = []struct {
	name string
	run  func(t *testing.T, g *gcLiar)
}{
	// The store's clock 2 h ahead: this host is 2 h behind it. fold and
	// gc exit 1 naming the skew, and change nothing.
	{"host-2h-behind", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.write(t, g.key(format.KindSeal, g.kept, "s2"))
		before := g.state(t)
		for _, args := range [][]string{{"fold", g.url}, {"gc", g.url}} {
			g.p.Set(lyingproxy.ShiftDate(2 * time.Hour)) // g.refused reads the bucket honestly
			r := oxyfs(t, g.srv, args...)
			g.refused(t, r, before)
			skewNamed(t, r, "behind")
		}
	}},
	{"host-2h-ahead", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.write(t, g.key(format.KindSeal, g.kept, "s2"))
		before := g.state(t)
		for _, args := range [][]string{{"fold", g.url}, {"gc", g.url}} {
			g.p.Set(lyingproxy.ShiftDate(-2 * time.Hour)) // g.refused reads the bucket honestly
			r := oxyfs(t, g.srv, args...)
			g.refused(t, r, before)
			skewNamed(t, r, "ahead of")
		}
	}},
	// A store that gives no time: a fold fails closed.
	{"no-date", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.write(t, g.key(format.KindSeal, g.kept, "s2"))
		before := g.state(t)
		for _, args := range [][]string{{"fold", g.url}, {"gc", g.url}} {
			g.p.Set(lyingproxy.NoDate()) // g.refused reads the bucket honestly
			r := oxyfs(t, g.srv, args...)
			g.refused(t, r, before)
			if !strings.Contains(r.stderr, store.ErrNoStoreClock.Error()) {
				t.Errorf("the refusal does not say the store gives no time:\n%s", r)
			}
		}
	}},
	// Within the margin a fold goes ahead.
	{"within-the-margin", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.write(t, g.key(format.KindSeal, g.kept, "s2"))
		g.p.Set(lyingproxy.ShiftDate(store.ClockMargin - 30*time.Second))
		if r := oxyfs(t, g.srv, "fold", g.url); r.code != 0 {
			t.Fatalf("a fold %v off the store's clock (margin %v): %s", store.ClockMargin-30*time.Second, store.ClockMargin, r)
		}
	}},
	// A handle trusts unchanged records on the store's clock: a quiet
	// refresh of a folded store costs the two conditional GETs, the first
	// one after a handle's open too, and measuring the clock adds nothing.
	// A store that gives no time, or a host whose clock is over the margin
	// off the store's, is trusted for nothing: each refresh lists the
	// pack prefix, and the handle says why.
	{"handle", func(t *testing.T, g *gcLiar) {
		ctx := context.Background()
		g.folded(t)
		for _, c := range []struct {
			modes []lyingproxy.Mode
			want  store.Counts
			warn  string // what the handle warns, once
		}{
			{nil, store.Counts{Get: 2}, ""},
			// Within the margin: trusted.
			{[]lyingproxy.Mode{lyingproxy.ShiftDate(store.ClockMargin - 30*time.Second)}, store.Counts{Get: 2}, ""},
			// This host's clock over the margin off the store's: each
			// refresh lists. (Not on S3: its SDK corrects its signing
			// time by the Date it is told, and versitygw, whose clock
			// is right, then refuses the signature.)
			{[]lyingproxy.Mode{lyingproxy.ShiftDate(store.ClockMargin + time.Minute)}, store.Counts{List: 1, Get: 2}, store.ErrClockSkew.Error()},
			{[]lyingproxy.Mode{lyingproxy.NoDate()}, store.Counts{List: 1, Get: 2}, store.ErrNoStoreClock.Error()},
		} {
			if c.warn == store.ErrClockSkew.Error() && g.srv.Kind == "s3" {
				continue
			}
			g.p.Set(c.modes...)
			st, err := store.Open(ctx, g.url, store.Options{Layout: store.LayoutBucket, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var warned []string
			ix, err := index.Open(ctx, st, index.Options{Warn: func(s string) { warned = append(warned, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Load(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				before := st.Counts()
				if err := ix.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				if d := st.Counts().Sub(before); d != c.want {
					t.Errorf("%q: refresh %d sent %v, want %v", c.warn, i, d, c.want)
				}
			}
			if !strings.Contains(strings.Join(warned, "\n"), c.warn) {
				t.Errorf("a handle that trusts nothing does not say why (%q): %q", c.warn, warned)
			}
			ix.Close()
			st.Close()
		}
	}},
}

// skewNamed checks that a refusal names the clock skew, its direction and
// the margin.
func skewNamed(t *testing.T, r result, dir string) {
	t.Helper()
	for _, want := range []string{store.ErrClockSkew.Error(), " " + dir + " the store's", "the margin is " + store.ClockMargin.String()} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, r)
		}
	}
}
