//go:build unix

package store_test

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// BenchmarkGetPath measures one GetAdmitted of a 2 KiB signature, as the
// mount reads one, on the SDK path and on the lean path (leanget.go) of
// each backend, against the local test servers: this process's CPU per
// GET (user + system, from getrusage; the server is another process) and
// its allocations per GET. versitygw closes every connection unless told
// to keep them (--keep-alive, VGW_KEEP_ALIVE): S3 keeps them, so the
// benchmark asks it to when it starts the server (a test that started it
// first leaves it closing them, a TCP handshake per GET).
//
//	go test -run '^$' -bench BenchmarkGetPath -benchtime 2000x ./store
func BenchmarkGetPath(b *testing.B) {
	b.Setenv("VGW_KEEP_ALIVE", "true")
	for _, kind := range leanKinds {
		b.Run(kind, func(b *testing.B) {
			srv := testservers.Start(b, kind)
			lean, sdk := leanPair(b, kind, srv.NewBucket(b))
			ctx := context.Background()
			const key = "sig/ab/cdef0123456789/alice@example.org"
			sig := bytes.Repeat([]byte("S"), 2048)
			if err := lean.Put(ctx, key, sig); err != nil {
				b.Fatal(err)
			}
			for _, p := range []struct {
				name string
				st   *store.Store
			}{{"sdk", sdk}, {"lean", lean}} {
				b.Run(p.name, func(b *testing.B) {
					admit := func(int64) (func(), error) { return func() {}, nil }
					get := func() {
						data, _, err := p.st.GetAdmitted(ctx, key, admit)
						if err != nil || len(data) != len(sig) {
							b.Fatalf("%s: %d bytes, %v", p.st.ReadPath(), len(data), err)
						}
					}
					get() // a connection, credentials, the signing key: set up once
					sent := p.st.LeanGets()
					b.ReportAllocs()
					before := cpuTime(b)
					b.ResetTimer()
					for range b.N {
						get()
					}
					b.StopTimer()
					used := cpuTime(b) - before
					b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/GET")
					if lean := p.st.LeanGets() - sent; (p.name == "lean") != (lean == int64(b.N)) || (p.name == "sdk" && lean != 0) {
						b.Fatalf("%s: %d of %d GETs on the lean path", p.st.ReadPath(), lean, b.N)
					}
				})
			}
			// Read-ahead's way: GetAdmittedBatch of the store's pipeline
			// depth (pipeline.go), a batch's GETs written at once.
			b.Run("pipelined", func(b *testing.B) {
				ps, ok := lean.Pipeline()
				if !ok {
					b.Fatalf("%s: no pipeline", lean.ReadPath())
				}
				keys := make([]string, ps.MaxDepth)
				for i := range keys {
					keys[i] = key
				}
				admit := func(int64) (func(), error) { return func() {}, nil }
				batch := func(n int) {
					lean.GetAdmittedBatch(ctx, keys[:n], admit, func(_ int, data []byte, _ time.Time, err error) {
						if err != nil || len(data) != len(sig) {
							b.Fatalf("%s: %d bytes, %v", lean.ReadPath(), len(data), err)
						}
					})
				}
				batch(len(keys))
				before, cut := lean.Counts(), ps.Cut
				b.ReportAllocs()
				t0 := cpuTime(b)
				b.ResetTimer()
				for left := b.N; left > 0; left -= len(keys) {
					batch(min(left, len(keys)))
				}
				b.StopTimer()
				used := cpuTime(b) - t0
				b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/GET")
				ps, _ = lean.Pipeline()
				if d := lean.Counts().Sub(before); d.Get != int64(b.N) || ps.Cut != cut {
					b.Fatalf("%s: %v for %d GETs, %+v", lean.ReadPath(), d, b.N, ps)
				}
			})
		})
	}
}

// cpuTime is this process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
