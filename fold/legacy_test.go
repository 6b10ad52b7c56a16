package fold

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestLegacyFoldKeepsExistingPerObjectBytes(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		putRecord(t, st, "sigs/ab/cdef", string(format.LegacySigs([]format.LegacySig{
			{Signer: "alice", Sig: []byte("alice-old")},
			{Signer: "bob", Sig: []byte("bob-first")},
			{Signer: "bob", Sig: []byte("bob-second")}, // a signer listed twice: the later line wins
		})))
		putRecord(t, st, "sig/ab/cdef/alice", "alice-new") // already a per-object key: kept
		putRecord(t, st, "seals/ab/cdef", "v1\nv 2\n")
		rep := mustComplete(t, st)
		if rep.Legacy.Lists != 2 || rep.Legacy.Copied != 3 || rep.Legacy.Kept != 1 || !rep.Legacy.Marker {
			t.Errorf("legacy report %+v, want 2 lists, 3 copied, 1 kept, marker written", rep.Legacy)
		}
		for key, want := range map[string]string{
			"sig/ab/cdef/alice": "alice-new",
			"sig/ab/cdef/bob":   "bob-second",
			"seal/ab/cdef/v1":   "",
			"seal/ab/cdef/v 2":  "",
		} {
			got, err := st.Get(ctx, key)
			if err != nil || string(got) != want {
				t.Errorf("%s = %q, %v; want %q", key, got, err, want)
			}
		}
		want := []string{"seal/ab/cdef/v 2", "seal/ab/cdef/v1", "sig/ab/cdef/alice", "sig/ab/cdef/bob"}
		if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, want) {
			t.Errorf("list = %v, want %v", got, want)
		}
	})
}

func TestLegacyFoldRunsOnceThenTheMarkerSkipsIt(t *testing.T) {
	st, _ := newMem(t)
	putRecord(t, st, "approvals/ab/cdef", "yes\n")
	first := mustComplete(t, st)
	if !first.Legacy.Marker || first.Legacy.Copied != 1 {
		t.Fatalf("first fold legacy: %+v", first.Legacy)
	}
	putRecord(t, st, "approvals/ab/cdef", "yes\nlater\n") // nothing writes older lists any more; ignored now
	second := mustComplete(t, st)
	if !second.Legacy.Skipped || second.Legacy.Lists != 0 {
		t.Errorf("second fold legacy: %+v, want skipped", second.Legacy)
	}
	if exists(t, st, "approval/ab/cdef/later") {
		t.Errorf("an older list was folded again after the marker")
	}
}

func TestLegacyFoldReportsWhatItCannotRead(t *testing.T) {
	st, _ := newMem(t)
	putRecord(t, st, "sigs/ab/cdef", "alice !!notbase64\ncarol Y2Fyb2w=\n")
	putRecord(t, st, "sigs/zz/odd", "x eA==\n")
	putRecord(t, st, "certs/ab/cdef", "good\nbad/value\n")
	var warned []string
	rep, err := Complete(context.Background(), st, Options{Warn: func(s string) { warned = append(warned, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Legacy.Malformed, []string{"sigs/zz/odd"}) {
		t.Errorf("malformed older keys = %v", rep.Legacy.Malformed)
	}
	if len(rep.Legacy.BadLines) != 2 {
		t.Errorf("bad lines = %v, want 2", rep.Legacy.BadLines)
	}
	if rep.Legacy.Copied != 2 {
		t.Errorf("copied %d, want carol and good", rep.Legacy.Copied)
	}
	if len(warned) < 3 || !strings.Contains(strings.Join(warned, "\n"), "sigs/zz/odd") {
		t.Errorf("warnings %v, want each bad key and line", warned)
	}
}

func TestLegacyFoldThatFailsWritesNoMarker(t *testing.T) {
	st, fb := newFaultStore(t, store.NewFakeClock(t0))
	putRecord(t, st, "sigs/ab/cdef", "alice YQ==\n")
	putRecord(t, st, "receipts/ab/cdef", "r\n")
	fb.failOn("get", "receipts/")
	if _, err := Complete(context.Background(), st, Options{}); err == nil {
		t.Fatal("fold succeeded although an older list could not be read")
	}
	fb.failOn("", "")
	if exists(t, st, format.LegacyFoldedMarker) {
		t.Fatal("marker written although an older list was not folded")
	}
	if len(liveLists(t, st)) != 0 {
		t.Fatal("a list was written although the fold failed before listing")
	}
	rep := mustComplete(t, st)
	if !rep.Legacy.Marker || !exists(t, st, "receipt/ab/cdef/r") {
		t.Errorf("the fold run again: %+v", rep.Legacy)
	}
}
