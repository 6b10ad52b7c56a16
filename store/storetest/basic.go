package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func testMissingKeys(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	if _, err := s.Get(ctx, "sig/ab/cdef/nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
	if ok, err := s.Exists(ctx, "sig/ab/cdef/nobody"); err != nil || ok {
		t.Errorf("Exists of a missing key = %v, %v; want false, nil", ok, err)
	}
	if err := s.Delete(ctx, "sig/ab/cdef/nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of a missing key: err = %v, want ErrNotFound", err)
	}
	data, v, err := s.ReadRecord(ctx, format.JournalKey)
	if err != nil || data != nil || v.Exists {
		t.Errorf("ReadRecord of a missing record = %q, %+v, %v; want empty, absent, nil", data, v, err)
	}
	checkWire(t, s)
}

func testPutGetDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	key := "sig/ab/cdef/alice"
	for _, body := range [][]byte{[]byte("first signature"), []byte("replaced"), {}} {
		if err := s.Put(ctx, key, body); err != nil {
			t.Fatalf("Put: %v", err)
		}
		got, err := s.Get(ctx, key)
		if err != nil || string(got) != string(body) {
			t.Fatalf("Get = %q, %v; want %q", got, err, body)
		}
		if n, err := s.Size(ctx, key); err != nil || n != int64(len(body)) {
			t.Fatalf("Size = %d, %v; want %d", n, err, len(body))
		}
	}
	if ok, err := s.Exists(ctx, key); err != nil || !ok {
		t.Fatalf("Exists = %v, %v; want true", ok, err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	checkWire(t, s)
}

// testLongestValue: keys whose last component is 255 bytes, DESIGN §3's
// longest value (ASCII, and UTF-8 of two-byte characters), write, read,
// list, HEAD, create-only and delete like any other; or as long as the
// harness's server takes (LimitValues).
func testLongestValue(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	const dir = "sig/ab/cdef/"
	n := 255
	if l, ok := h.(valueLimit); ok {
		n = l.maxValue
	}
	for _, val := range []string{strings.Repeat("v", n), strings.Repeat("é", (n-1)/2) + "v"} {
		if len(val) != n {
			t.Fatalf("value of %d bytes", len(val))
		}
		key := dir + val
		must(t, s.Put(ctx, key, []byte("signature")))
		if got, err := s.Get(ctx, key); err != nil || string(got) != "signature" {
			t.Fatalf("Get of a %d-byte value = %q, %v", n, got, err)
		}
		if ok, err := s.Exists(ctx, key); err != nil || !ok {
			t.Fatalf("Exists of a %d-byte value = %v, %v", n, ok, err)
		}
		if size, err := s.Size(ctx, key); err != nil || size != int64(len("signature")) {
			t.Fatalf("Size of a %d-byte value = %d, %v", n, size, err)
		}
		var listed []string
		must(t, s.List(ctx, dir, "/", func(it store.ListItem) error { listed = append(listed, it.Key); return nil }))
		if len(listed) != 1 || listed[0] != key {
			t.Fatalf("listing of a %d-byte value = %q, want exactly it", n, listed)
		}
		if err := s.PutIfAbsent(ctx, key, nil); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("PutIfAbsent of an existing %d-byte value: %v, want ErrConflict", n, err)
		}
		must(t, s.Delete(ctx, key))
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after Delete of a %d-byte value: %v, want ErrNotFound", n, err)
		}
	}
	checkWire(t, s)
}

func testCounters(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.NewStore(t)(t)
	before := s.Counts()
	if before != (store.Counts{}) {
		t.Fatalf("a fresh handle counts %v, want zero", before)
	}
	must(t, s.Put(ctx, "seal/ab/cdef/v1", nil))
	must(t, s.Put(ctx, "seal/ab/cdef/v2", nil))
	_, err := s.Get(ctx, "seal/ab/cdef/v1")
	must(t, err)
	_, err = s.Exists(ctx, "seal/ab/cdef/v2")
	must(t, err)
	_, _, err = s.ListPage(ctx, "seal/", "", nil, 1)
	must(t, err)
	must(t, s.Delete(ctx, "seal/ab/cdef/v2"))
	got := s.Counts()
	// A Delete is one DELETE, and on S3 also the HEAD s3blob sends first
	// (checkWire holds the store to what the wire saw).
	del := s.DeleteRequests()
	if want := (store.Counts{Delete: 1}); del != want && del != (store.Counts{Head: 1, Delete: 1}) {
		t.Fatalf("DeleteRequests = %v, want %v or one HEAD more", del, want)
	}
	wantHead := 1 + del.Head
	want := store.Counts{List: 1, Get: 1, Head: wantHead, Put: 2, Delete: del.Delete}
	if got != want {
		t.Errorf("counts = %v, want %v", got, want)
	}
	if got.String() != fmt.Sprintf("requests: list=1 get=1 head=%d put=2 delete=1", wantHead) {
		t.Errorf("String() = %q", got.String())
	}
	checkWire(t, s)
}

func testReadOnly(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	rw := open(t)
	must(t, rw.Put(ctx, "cert/ab/cdef/x", nil))
	ro := store.New(rw.Bucket(), rw.Backend(), "", store.Options{ReadOnly: true, Layout: store.LayoutBucket})
	for name, err := range map[string]error{
		"Put":         ro.Put(ctx, "cert/ab/cdef/y", nil),
		"PutIfAbsent": ro.PutIfAbsent(ctx, "cert/ab/cdef/y", nil),
		"Delete":      ro.Delete(ctx, "cert/ab/cdef/x"),
		"WriteRecord": ro.WriteRecord(ctx, format.JournalKey, []byte("x"), store.Version{}),
	} {
		if !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
	if c := ro.Counts(); c.Put+c.Delete != 0 {
		t.Errorf("a read-only store sent writes: %v", c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
