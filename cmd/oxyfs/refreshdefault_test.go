package main

import (
	"context"
	"strings"
	"testing"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestRefreshIsOnByDefault: mount and serve re-read the store every
// DefaultRefreshInterval unless told otherwise (issue 24 item 3: the
// default was never, so another shell's put stayed hidden until SIGHUP),
// and --help says the interval and what a quiet refresh costs.
//
// testwatch: mounts nothing (flags and usage only).
func TestRefreshIsOnByDefault(t *testing.T) {
	if DefaultRefreshInterval <= 0 {
		t.Fatalf("DefaultRefreshInterval = %v: refreshing is off by default", DefaultRefreshInterval)
	}
	for _, cmd := range []string{"mount", "serve"} {
		help := helpFlags(t, cmd)["refresh-interval"]
		if want := "(default " + DefaultRefreshInterval.String() + ")"; !strings.Contains(help, want) {
			t.Errorf("oxyfs %s --help: %q lacks %q", cmd, help, want)
		}
	}
	var x indexFlags
	f := flag.NewFlagSet("test", flag.ContinueOnError)
	x.register(f)
	if err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if x.refresh != DefaultRefreshInterval {
		t.Errorf("--refresh-interval defaults to %v, want %v", x.refresh, DefaultRefreshInterval)
	}
}

// TestQuietRefreshCostsWhatHelpSays measures what a refresh of a store
// nothing changed sends, folded and not, and checks it is what --help
// says a default-interval refresh costs.
//
// testwatch: mounts nothing (an index and its help text).
func TestQuietRefreshCostsWhatHelpSays(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		fold bool
		want string
	}{
		{"folded", true, quietRefreshFolded},
		{"unfolded", false, quietRefreshUnfolded},
	} {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 200, Seed: 1, Fold: c.fold}); err != nil {
			t.Fatal(err)
		}
		ix, err := index.Open(ctx, st, index.Options{Warn: func(string) {}, ReadAhead: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			d := storefixture.Delta(st, func() {
				if err := ix.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
			})
			if got := costWords(d.List, d.Get); got != c.want {
				t.Errorf("%s: quiet refresh %d sent %v, which is %q; the help says %q", c.name, i, d, got, c.want)
			}
			if d.Put+d.Delete+d.Head != 0 {
				t.Errorf("%s: quiet refresh %d sent %v", c.name, i, d)
			}
		}
		ix.Close()
	}
	help := helpFlags(t, "mount")["refresh-interval"]
	for _, want := range []string{quietRefreshFolded, quietRefreshUnfolded} {
		if !strings.Contains(help, want) {
			t.Errorf("--refresh-interval's help %q does not say %q", help, want)
		}
	}
}
