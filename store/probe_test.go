package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestConditionsProbe: before its first write a process asks the server,
// on a scratch key it then removes, whether it honours the conditions of
// its writes. An honest server (versitygw, fake-gcs-server, Azurite) is
// written normally; the same server behind a proxy that strips the
// conditions is refused every write with one error wrapping
// ErrConditionsIgnored that names what is missing, nothing of the store
// written, and reads keep working. The verdict is kept: a second write
// sends nothing before its refusal.
func TestConditionsProbe(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			p := lyingproxy.Start(t, srv.Kind, srv.URL)
			ctx := context.Background()
			open := func(t *testing.T) *store.Store {
				st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{Layout: store.LayoutBucket})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			appendLine := func(old []byte, _ bool) ([]byte, error) {
				return append(old[:len(old):len(old)], "sig/ab/cd/x\n"...), nil
			}
			rootKeys := func(st *store.Store) []string {
				var keys []string
				it := st.Bucket().List(nil)
				for {
					o, err := it.Next(ctx)
					if err != nil {
						break
					}
					keys = append(keys, o.Key)
				}
				return keys
			}

			p.Set()
			honest := open(t)
			if v := honest.ConditionsVerdict(); v.Checked {
				t.Fatalf("verdict before any write: %+v", v)
			}
			if _, err := honest.UpdateRecord(ctx, format.JournalKey, appendLine); err != nil {
				t.Fatalf("honest server: %v", err)
			}
			v := honest.ConditionsVerdict()
			t.Logf("%s: honest server: %+v", kind, v)
			if !v.Checked || !v.Honoured || v.Requests.Put != 4 || !strings.HasPrefix(v.Probe, store.ProbePrefix) {
				t.Fatalf("honest server: verdict %+v, want honoured after 4 PUTs on a probe key", v)
			}
			if keys := rootKeys(honest); len(keys) != 1 || keys[0] != format.JournalKey {
				t.Fatalf("honest server: the bucket holds %q, want only the journal (the probe key removed)", keys)
			}

			p.Set(lyingproxy.StripConditions())
			st := open(t)
			_, err := st.UpdateRecord(ctx, format.JournalKey, appendLine)
			if !errors.Is(err, store.ErrConditionsIgnored) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("stripping proxy: the first update: %v, want ErrConditionsIgnored saying nothing was written", err)
			}
			t.Logf("%s: %v", kind, err)
			v = st.ConditionsVerdict()
			if !v.Checked || v.Honoured || v.How == "" {
				t.Fatalf("stripping proxy: verdict %+v, want checked, not honoured, saying what is missing", v)
			}
			before := st.Counts()
			for _, w := range []func() error{
				func() error { return st.Put(ctx, "sig/ab/cd/y", []byte("y")) },
				func() error { return st.PutIfAbsent(ctx, format.JournalKey, nil) },
				func() error { _, err := st.UpdateRecord(ctx, format.JournalKey, appendLine); return err },
			} {
				if err := w(); !errors.Is(err, store.ErrConditionsIgnored) {
					t.Errorf("stripping proxy: a later write: %v, want ErrConditionsIgnored", err)
				}
			}
			if d := st.Counts().Sub(before); d != (store.Counts{}) {
				t.Errorf("refused writes sent %v, want nothing (the verdict is kept)", d)
			}
			if keys := rootKeys(st); len(keys) != 0 {
				t.Errorf("stripping proxy: the bucket holds %q, want nothing", keys)
			}
			if data, _, err := st.ReadRecord(ctx, format.JournalKey); err != nil || data != nil {
				t.Errorf("stripping proxy: a read: %q, %v; want the absent journal, no error", data, err)
			}
		})
	}
}

// TestConditionsProbedAgain: a verdict that the server honours conditions
// is kept ReprobeAfter, then the next write probes again, so a long-lived
// process (a mount) finds a server that began to ignore them (a proxy put
// in front of it) instead of losing journal lines for as long as it runs.
func TestConditionsProbedAgain(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			p := lyingproxy.Start(t, srv.Kind, srv.URL)
			ctx := context.Background()
			st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{Layout: store.LayoutBucket})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			appendLine := func(old []byte, _ bool) ([]byte, error) {
				return append(old[:len(old):len(old)], "sig/ab/cd/x\n"...), nil
			}
			if _, err := st.UpdateRecord(ctx, format.JournalKey, appendLine); err != nil {
				t.Fatalf("honest server: %v", err)
			}
			first := st.ConditionsVerdict()
			if !first.Honoured {
				t.Fatalf("honest server: %+v", first)
			}
			p.Set(lyingproxy.StripConditions())
			store.SetReprobeAfter(t, 0)
			_, err = st.UpdateRecord(ctx, format.JournalKey, appendLine)
			if !errors.Is(err, store.ErrConditionsIgnored) {
				t.Fatalf("a write past ReprobeAfter to a server that now ignores conditions: %v, want ErrConditionsIgnored", err)
			}
			if v := st.ConditionsVerdict(); v.Honoured || v.Probe == first.Probe {
				t.Fatalf("verdict after the second probe: %+v (first %+v)", v, first)
			}
		})
	}
}
