package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/oxyfs/oxyfs/store"
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
	data, v, err := s.ReadRecord(ctx, store.JournalKey)
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
	wantDelete := int64(1)
	wantHead := int64(1)
	if s.Backend() == "s3" {
		wantHead++ // the HEAD s3blob sends before a DELETE
	}
	want := store.Counts{List: 1, Get: 1, Head: wantHead, Put: 2, Delete: wantDelete}
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
		"WriteRecord": ro.WriteRecord(ctx, store.JournalKey, []byte("x"), store.Version{}),
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
