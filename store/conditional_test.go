package store

import (
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestReadRecordIfChangedOnMemAndFile: one GET per call; unchanged exactly
// while the record's bytes are the same (file and mem compare SHA-256
// tokens, so rewriting the same bytes is "unchanged" and any other bytes
// "changed"), a vanished record is changed with the zero Version, and a
// write by another process (a file written under the store's directory)
// is seen.
func TestReadRecordIfChangedOnMemAndFile(t *testing.T) {
	for _, backend := range []string{"mem", "file"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			u := "mem://"
			if backend == "file" {
				u = "file://" + dir
			}
			s, err := Open(ctx, u, Options{Layout: LayoutBucket})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			read := func(v Version) ([]byte, Version, bool) {
				t.Helper()
				before := s.Counts()
				data, nv, changed, err := s.ReadRecordIfChanged(ctx, format.JournalKey, v)
				if err != nil {
					t.Fatal(err)
				}
				if d := s.Counts().Sub(before); d != (Counts{Get: 1}) {
					t.Fatalf("sent %v, want one GET", d)
				}
				return data, nv, changed
			}
			if _, v, changed := read(Version{}); changed || v.Exists {
				t.Fatalf("absent record: changed %v, version %+v", changed, v)
			}
			if err := s.WriteRecord(ctx, format.JournalKey, []byte("0 sig/ab/cdef/alice\n"), Version{}); err != nil {
				t.Fatal(err)
			}
			data, v, changed := read(Version{})
			if !changed || string(data) != "0 sig/ab/cdef/alice\n" || v.Token != contentToken(data) {
				t.Fatalf("created record: %q %+v %v", data, v, changed)
			}
			if data, nv, changed := read(v); changed || data != nil || nv != v {
				t.Fatalf("unchanged record: %q %+v %v", data, nv, changed)
			}
			// The same bytes written again: the same state.
			if err := s.WriteRecord(ctx, format.JournalKey, []byte("0 sig/ab/cdef/alice\n"), v); err != nil {
				t.Fatal(err)
			}
			if _, _, changed := read(v); changed {
				t.Fatal("a record rewritten with the same bytes read as changed")
			}
			next := []byte("0 sig/ab/cdef/alice\n0 sig/ab/cdef/bob\n")
			if backend == "file" {
				// Another process: plain file write, no lock, no counters.
				if err := os.WriteFile(filepath.Join(dir, format.JournalKey), next, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := s.WriteRecord(ctx, format.JournalKey, next, v); err != nil {
				t.Fatal(err)
			}
			data, nv, changed := read(v)
			if !changed || string(data) != string(next) || nv.Token != contentToken(next) {
				t.Fatalf("replaced record: %q %+v %v", data, nv, changed)
			}
			if err := s.Delete(ctx, format.JournalKey); err != nil {
				t.Fatal(err)
			}
			if data, gone, changed := read(nv); !changed || data != nil || gone != (Version{}) {
				t.Fatalf("deleted record: %q %+v %v", data, gone, changed)
			}
		})
	}
}

// TestConditionalReadIsAnsweredNotModified pins down, against the real
// servers, how each backend answers a read of an unchanged record: S3 and
// Azure with 304 Not Modified and no body; GCS (fake-gcs-server, through the
// Go client's default XML-API reads, which drop GenerationNotMatch) with the
// whole record, told unchanged by its generation. All three: one GET, and
// ReadRecordIfChanged says unchanged. Azure runs with a prefix= URL too,
// since its conditional read addresses the blob itself.
func TestConditionalReadIsAnsweredNotModified(t *testing.T) {
	for _, kind := range []string{"s3", "azure", "gcs"} {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			urls := []string{srv.NewBucket(t)}
			if kind == "azure" {
				urls = append(urls, urls[0]+"&prefix=repo/")
			}
			for _, u := range urls {
				ctx := context.Background()
				s, err := Open(ctx, u, Options{Layout: LayoutBucket})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				body := []byte("0 sig/ab/cdef/alice\n")
				if err := s.WriteRecord(ctx, format.JournalKey, body, Version{}); err != nil {
					t.Fatal(err)
				}
				_, v, err := s.ReadRecord(ctx, format.JournalKey)
				if err != nil {
					t.Fatal(err)
				}
				switch kind {
				case "s3":
					_, _, err := s.readWithToken(ctx, format.JournalKey, &blob.ReaderOptions{BeforeRead: s.drv.(*s3Driver).ifNoneMatch(v.Token)})
					if !errors.Is(err, ErrNotModified) || httpStatus(err) != http.StatusNotModified {
						t.Fatalf("S3 GET with If-None-Match of the current ETag: %v, want 304", err)
					}
				case "azure":
					data, tok, ok, err := s.drv.(*azureDriver).readDirect(ctx, format.JournalKey, v.Token)
					if err != nil || !ok || data != nil || tok != v.Token {
						t.Fatalf("Azure download with If-None-Match of the current ETag: %q %q %v %v, want 304 (no body)", data, tok, ok, err)
					}
				case "gcs":
					data, tok, err := s.readWithToken(ctx, format.JournalKey, &blob.ReaderOptions{BeforeRead: s.drv.(*gcsDriver).ifNoneMatch(v.Token)})
					if err != nil || string(data) != string(body) || tok != v.Token {
						t.Fatalf("GCS read with GenerationNotMatch (dropped on XML reads): %q %q %v, want the record in full at the same generation", data, tok, err)
					}
				}
				before := s.Counts()
				data, nv, changed, err := s.ReadRecordIfChanged(ctx, format.JournalKey, v)
				if err != nil || changed || data != nil || nv != v {
					t.Fatalf("ReadRecordIfChanged of an unchanged record: %q %+v %v %v", data, nv, changed, err)
				}
				if d := s.Counts().Sub(before); d != (Counts{Get: 1}) {
					t.Fatalf("sent %v, want one GET", d)
				}
				if w, ok := s.WireCounts(); ok && w != s.Counts() {
					t.Fatalf("wire %v, counters %v", w, s.Counts())
				}
				// The record under the prefix, not beside it.
				if err := s.WriteRecord(ctx, format.JournalKey, []byte("changed\n"), v); err != nil {
					t.Fatal(err)
				}
				data, _, changed, err = s.ReadRecordIfChanged(ctx, format.JournalKey, v)
				if err != nil || !changed || string(data) != "changed\n" {
					t.Fatalf("ReadRecordIfChanged of a changed record: %q %v %v", data, changed, err)
				}
			}
		})
	}
}

// TestReadSnapshotSinceListsOnlyWhenARecordChanged: 2 GETs and no LIST
// while neither record changed (prev itself comes back); a changed record
// is read from the conditional GET, the other one kept, and the pack
// prefix listed once; list=true lists even when nothing changed.
func TestReadSnapshotSinceListsOnlyWhenARecordChanged(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "mem://", Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.WriteRecord(ctx, format.JournalKey, []byte("0 sig/ab/cdef/alice\n"), Version{}))
	must(s.WriteRecord(ctx, format.RetiredKey, []byte("1 pack-old.entries\n"), Version{}))
	must(s.Put(ctx, "pack-"+strings.Repeat("ab", 32)+".entries", nil))
	sn, err := s.ReadSnapshot(ctx)
	must(err)

	since := func(prev *Snapshot, list bool, want Counts) (*Snapshot, bool) {
		t.Helper()
		before := s.Counts()
		got, changed, err := s.ReadSnapshotSince(ctx, prev, list)
		must(err)
		if d := s.Counts().Sub(before); d != want {
			t.Fatalf("sent %v, want %v", d, want)
		}
		return got, changed
	}
	if got, changed := since(sn, false, Counts{Get: 2}); changed || got != sn {
		t.Fatalf("unchanged: changed %v, same snapshot %v", changed, got == sn)
	}
	if got, changed := since(sn, true, Counts{Get: 2, List: 1}); changed || got == sn || len(got.Lists) != 1 || len(got.Journal) != 1 {
		t.Fatalf("unchanged, listed: changed %v, %+v", changed, got)
	}
	must(s.WriteRecord(ctx, format.JournalKey, []byte("0 sig/ab/cdef/alice\n0 sig/ab/cdef/bob\n"), sn.JournalVersion))
	got, changed := since(sn, false, Counts{Get: 2, List: 1})
	if !changed || len(got.Journal) != 2 || got.JournalVersion == sn.JournalVersion ||
		got.RetiredVersion != sn.RetiredVersion || len(got.Retired) != 1 || len(got.Lists) != 1 {
		t.Fatalf("journal changed: %v %+v", changed, got)
	}
	must(s.WriteRecord(ctx, format.RetiredKey, []byte("1 pack-old.entries\n2 "+got.Lists[0].Name+"\n"), got.RetiredVersion))
	got2, changed := since(got, false, Counts{Get: 2, List: 1})
	if !changed || len(got2.Retired) != 2 || !got2.Lists[0].Retired || got2.Folded() || len(got2.Journal) != 2 {
		t.Fatalf("retired changed: %v %+v", changed, got2)
	}
}
