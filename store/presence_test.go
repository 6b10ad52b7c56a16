package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestPresenceTellsAStoreFromAnythingElse: one LIST of the root says
// whether a location holds an oxy store: an empty bucket, a bucket of
// photos and /etc-like names hold none; a journal alone, a list alone,
// per-object keys alone (an older writer's store) or older one-list keys
// alone do.
func TestPresenceTellsAStoreFromAnythingElse(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		keys  []string
		held  bool
		empty bool
	}{
		{"empty", nil, false, true},
		{"photos", []string{"IMG_0001.jpg", "IMG_0002.jpg", "album/IMG_0003.jpg"}, false, false},
		{"etc", []string{"passwd", "hosts", "ssh/sshd_config", "signatures.txt", "sigma/x"}, false, false},
		{"journal", []string{format.JournalKey}, true, false},
		{"retired record", []string{format.RetiredKey}, true, false},
		{"per-object key", []string{"photo.jpg", "sig/ab/cdef/alice"}, true, false},
		{"index entry", []string{"accepted/ab/cdef/main"}, true, false},
		{"older one-list key", []string{"sigs/ab/cdef"}, true, false},
	}
	for _, c := range cases {
		st := storefixture.NewMem(t)
		for _, k := range c.keys {
			if err := st.Put(ctx, k, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		before := st.Counts()
		p, err := st.Presence(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := st.Counts().Sub(before); d != (store.Counts{List: 1}) {
			t.Errorf("%s: Presence sent %v, want one LIST", c.name, d)
		}
		if p.Held != c.held || p.Empty != c.empty || p.Unsure {
			t.Errorf("%s: %+v, want held %v, empty %v", c.name, p, c.held, c.empty)
		}
	}
}

// TestPresenceOfACrowdedRootIsUnsure: a root holding more names than one
// page, all sorting before a store's, cannot be told by one LIST: Presence
// says so rather than call it no store.
func TestPresenceOfACrowdedRootIsUnsure(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	for i := range 1050 {
		if err := st.Put(ctx, fmt.Sprintf("IMG_%04d.jpg", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	p, err := st.Presence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Held || !p.Unsure {
		t.Errorf("1050 photos: %+v, want unsure", p)
	}
	// Past the last name a store may hold, one page is enough.
	st2 := storefixture.NewMem(t)
	for i := range 1050 {
		if err := st2.Put(ctx, fmt.Sprintf("zz/%04d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := st2.Put(ctx, fmt.Sprintf("z%04d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := st2.Presence(ctx); err != nil || p.Held || p.Unsure || p.Empty {
		t.Errorf("2100 names after the store's: %+v, %v; want no store, sure", p, err)
	}
}

// TestPresenceOfAnEtcSizedRootIsSure: /etc holds about 150 names, most
// sorting before a store's (a page of 100 ended at "postgresql", before
// "sig/", and /etc was taken for a store: ls showed an empty tree, mount
// and serve served it). One LIST says all of a root of that size: no store.
func TestPresenceOfAnEtcSizedRootIsSure(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	for i := range 150 {
		if err := st.Put(ctx, fmt.Sprintf("conf%03d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	before := st.Counts()
	p, err := st.Presence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(before); d != (store.Counts{List: 1}) {
		t.Errorf("Presence sent %v, want one LIST", d)
	}
	if p.Held || p.Unsure || p.Empty {
		t.Errorf("150 names of /etc: %+v, want no store, sure", p)
	}
}
