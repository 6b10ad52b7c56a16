package storetest

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

func testPaging(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	var want []string
	for i := 0; i < 7; i++ {
		k := fmt.Sprintf("sig/ab/cd%02d/signer", i)
		must(t, s.Put(ctx, k, []byte{byte(i)}))
		want = append(want, k)
	}
	before := s.Counts()
	seen := map[string]int{}
	var token []byte
	pages := 0
	for {
		items, next, err := s.ListPage(ctx, "sig/", "", token, 2)
		must(t, err)
		pages++
		if len(items) > 2 {
			t.Fatalf("page %d has %d items, page size 2", pages, len(items))
		}
		for _, it := range items {
			seen[it.Key]++
		}
		if next == nil {
			break
		}
		token = next
		if pages > 20 {
			t.Fatal("paging does not end")
		}
	}
	for _, k := range want {
		if seen[k] != 1 {
			t.Errorf("key %s listed %d times, want once", k, seen[k])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("listed %d distinct keys, want %d", len(seen), len(want))
	}
	if d := s.Counts().Sub(before); d.List != int64(pages) || d.Total() != int64(pages) {
		t.Errorf("%d pages counted as %v", pages, d)
	}
	var all []string
	must(t, s.List(ctx, "sig/", "", func(it store.ListItem) error { all = append(all, it.Key); return nil }))
	if !sort.StringsAreSorted(all) || len(all) != len(want) {
		t.Errorf("List = %v, want %d sorted keys", all, len(want))
	}
	checkWire(t, s)
}

func testPrefixIsolation(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	for _, k := range []string{"seal/ab/cdef/a", "seal/ab/cdef0/b", "seal/abc/x/y", "sig/ab/cdef/a", "seals/ab/cdef"} {
		must(t, s.Put(ctx, k, nil))
	}
	var got []string
	must(t, s.List(ctx, "seal/ab/cdef/", "", func(it store.ListItem) error { got = append(got, it.Key); return nil }))
	if len(got) != 1 || got[0] != "seal/ab/cdef/a" {
		t.Errorf("list seal/ab/cdef/ = %v, want only seal/ab/cdef/a", got)
	}
	got = nil
	must(t, s.List(ctx, "seal/", "", func(it store.ListItem) error { got = append(got, it.Key); return nil }))
	if len(got) != 3 {
		t.Errorf("list seal/ = %v, want the 3 seal/ keys and not seals/", got)
	}
	checkWire(t, s)
}

func testDelimiter(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	for _, k := range []string{"sig/ab/cdef/a", "sig/ab/cdef/b", "sig/ab/0123/a", "sig/cd/4567/a"} {
		must(t, s.Put(ctx, k, nil))
	}
	var dirs []string
	must(t, s.List(ctx, "sig/", "/", func(it store.ListItem) error {
		if !it.IsDir {
			t.Errorf("unexpected object %s at the top of sig/", it.Key)
		}
		dirs = append(dirs, it.Key)
		return nil
	}))
	if fmt.Sprint(dirs) != "[sig/ab/ sig/cd/]" {
		t.Errorf("common prefixes of sig/ = %v, want [sig/ab/ sig/cd/]", dirs)
	}
	checkWire(t, s)
}
