package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

func TestPosixPlan(t *testing.T) {
	p, err := newPosixPlan(1001, 8, 5)
	if err != nil {
		t.Fatal(err)
	}
	if p.objects() != 126 {
		t.Fatalf("objects = %d, want 126", p.objects())
	}
	entries := 0
	keys := map[string]bool{}
	for i := range p.objects() {
		o, again := p.object(i), p.object(i)
		if fmt.Sprint(o) != fmt.Sprint(again) {
			t.Fatalf("object %d differs when drawn again", i)
		}
		if o.kind != p.drawnKind(i) {
			t.Fatalf("object %d: kind %s, drawnKind says %s", i, o.kind, p.drawnKind(i))
		}
		want := 8
		if i == p.objects()-1 {
			want = 1
		}
		if len(o.values) != want {
			t.Fatalf("object %d has %d entries, want %d", i, len(o.values), want)
		}
		for j := range o.values {
			k := o.key(j)
			if _, err := format.ParseKey(k); err != nil {
				t.Fatalf("object %d: %v", i, err)
			}
			if keys[k] {
				t.Fatalf("key %q twice", k)
			}
			keys[k] = true
			if o.kind == format.KindSig && (len(o.data[j]) < 64 || len(o.data[j]) > 128) {
				t.Fatalf("%q: %d bytes of signature, want 64–128", k, len(o.data[j]))
			}
			if o.kind != format.KindSig && o.data != nil {
				t.Fatalf("%q: an index entry with bytes", k)
			}
		}
		entries += len(o.values)
	}
	if entries != 1001 {
		t.Fatalf("%d entries, want 1001", entries)
	}
	c, err := p.cost(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range c.PerKind {
		sum += n
	}
	if sum != 1001 || c.PerKind["sig"] != c.SigEntries || c.Objects != 126 {
		t.Fatalf("cost %+v: per kind sums to %d, want 1001 entries, %d of them signatures", c, sum, c.SigEntries)
	}
	for _, bad := range [][2]int{{0, 8}, {10, 0}, {10, maxPerObject + 1}} {
		if _, err := newPosixPlan(bad[0], bad[1], 1); err == nil {
			t.Errorf("newPosixPlan(%d, %d) took it", bad[0], bad[1])
		}
	}
}

// TestPosixAttrs compares with what versitygw v1.8.0 stored for a PUT by
// store.Put of the same bytes (read with getxattr from its bucket).
func TestPosixAttrs(t *testing.T) {
	const null = `,"CRC32C":null,"SHA1":null,"SHA256":null,"CRC64NVME":null,"SHA512":null,"MD5":null,"XXHASH64":null,"XXHASH3":null,"XXHASH128":null}`
	for _, c := range []struct {
		data       string
		etag, crc  string
		wantLength int
	}{
		{"hello sig bytes\n", `"98ff50769619de4d4ae70e76f39595b5"`, "Pj7rZA==", 3},
		{"", `"d41d8cd98f00b204e9800998ecf8427e"`, "AAAAAA==", 3},
	} {
		got := posixAttrs([]byte(c.data))
		want := [3][2]string{
			{"user.checksums", `{"Algorithm":"CRC32","Type":"FULL_OBJECT","CRC32":"` + c.crc + `"` + null},
			{"user.etag", c.etag},
			{"user.content-type", "application/octet-stream"},
		}
		if got != want {
			t.Errorf("posixAttrs(%q) = %q, want %q", c.data, got, want)
		}
	}
}

// versitygw starts a versitygw posix server on a fresh directory and
// returns its endpoint and directory. The program is testkit/testservers'
// (the pinned go tool): missing, it skips, unless CI=true or OXYFS_REQUIRE
// names s3.
func versitygw(t *testing.T) (endpoint, dir string) {
	t.Helper()
	bin := testservers.Program(t, "s3")
	dir = t.TempDir()
	if err := unix.Setxattr(dir, "user.oxyfs.probe", []byte("1"), 0); err != nil {
		t.Fatalf("%s has no user extended attributes, which versitygw's posix backend needs: %v", dir, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "benchtooltest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "benchtooltestsecret")
	t.Setenv("AWS_REGION", "us-east-1")
	cmd := exec.Command(bin, "--port", addr, "--region", "us-east-1", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID=benchtooltest", "ROOT_SECRET_ACCESS_KEY=benchtooltestsecret")
	log, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); log.Close() })
	endpoint = "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatalf("versitygw did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return endpoint, dir
}

// TestGenPosixServedAsPut writes a store straight into versitygw's
// directory and reads it back through the server: every key listed, the
// journal, the bytes; and the check catches an attribute that differs.
func TestGenPosixServedAsPut(t *testing.T) {
	endpoint, dir := versitygw(t)
	ctx := context.Background()
	if err := mkbucket(ctx, endpoint, "gen"); err != nil {
		t.Fatal(err)
	}
	url := "s3://gen?endpoint=" + endpoint + "&use_path_style=true&region=us-east-1&disable_https=true"
	p, err := newPosixPlan(300, 8, 9)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.generate(ctx, url, filepath.Join(dir, "gen"), 10)
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, n := range res.PerKind {
		if n > 0 {
			kinds++
		}
	}
	if res.Files != 300 || res.JournalLines != 10 || res.Checked < kinds {
		t.Fatalf("generate: %+v: want 300 files, 10 journal lines, at least a key of each of the %d kinds checked", res, kinds)
	}
	var want []string
	for i := range p.objects() {
		o := p.object(i)
		for j := range o.values {
			want = append(want, o.key(j))
		}
	}
	slices.Sort(want)
	st, err := openStore(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	for _, k := range format.Kinds {
		if err := st.List(ctx, k.Prefix(), "", func(it store.ListItem) error { got = append(got, it.Key); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the server lists %d keys, want the %d written", len(got), len(want))
	}
	if n, err := listEveryKey(ctx, st, 4); err != nil || n != 300 {
		t.Fatalf("listEveryKey = %d, %v; want 300", n, err)
	}
	journal, err := st.Get(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	lines, bad := format.ParseJournal(journal)
	if bad.Count != 0 {
		t.Fatalf("journal: %d bad lines", bad.Count)
	}
	var wantJ, gotJ []string
	for i := p.objects() - 1; len(wantJ) < 10; i-- {
		o := p.object(i)
		for j := range o.values {
			if len(wantJ) < 10 {
				wantJ = append(wantJ, o.key(j))
			}
		}
	}
	for _, l := range lines {
		if l.Folded() {
			t.Fatalf("journal line %q folded", l.Key)
		}
		gotJ = append(gotJ, l.Key)
	}
	if !slices.Equal(gotJ, wantJ) {
		t.Fatalf("journal names %q, want the last 10 keys %q", gotJ, wantJ)
	}
	// A signature reads back with its bytes.
	for i := range p.objects() {
		if o := p.object(i); o.kind == format.KindSig {
			b, err := st.Get(ctx, o.key(0))
			if err != nil || string(b) != string(o.data[0]) {
				t.Fatalf("GET %s: %d bytes, %v; want the %d written", o.key(0), len(b), err, len(o.data[0]))
			}
			// An ETag that is not the server's makes the check fail.
			if err := unix.Setxattr(filepath.Join(dir, "gen", o.key(0)), "user.etag", []byte(`"00000000000000000000000000000000"`), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := p.check(ctx, st, url, filepath.Join(dir, "gen")); err == nil || !strings.Contains(err.Error(), "attributes") {
				t.Fatalf("check of a wrong ETag: %v, want a difference in the attributes", err)
			}
			return
		}
	}
	t.Fatal("no signature in the plan")
}
