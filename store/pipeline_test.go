package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scripted is an HTTP/1.1 server whose every connection runs serve: the
// tests' misbehaving servers. It answers GET /x with body "x".
type scripted struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn // guarded by mu: closed at cleanup (a client's idle ones too)
}

// scriptConn is one connection of a scripted server: its requests are read
// with next, answered with answer.
type scriptConn struct {
	nc net.Conn
	br *bufio.Reader
	n  int // the connection's number, from 1
}

func (c *scriptConn) next() (*http.Request, error) { return http.ReadRequest(c.br) }

// answer writes the answer to r: its path as the body, with extra headers.
func (c *scriptConn) answer(r *http.Request, extra string) error {
	body := strings.TrimPrefix(r.URL.Path, "/")
	_, err := fmt.Fprintf(c.nc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s", len(body), extra, body)
	return err
}

func startScripted(t *testing.T, serve func(c *scriptConn)) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.open = append(s.open, nc)
			s.mu.Unlock()
			c := &scriptConn{nc: nc, br: bufio.NewReader(nc), n: int(s.conns.Add(1))}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, nc := range s.open {
			nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// testPipeline is a pipeline to s of depth.
func testPipeline(t *testing.T, s *scripted, depth int) *pipeline {
	t.Helper()
	p, why := newPipeline("http", s.ln.Addr().String(), &http.Transport{}, 4, depth)
	if p == nil {
		t.Fatalf("no pipeline: %s", why)
	}
	t.Cleanup(p.close)
	p.depth.Store(int32(depth)) // past the slow start (TestPipelineStartsShallow)
	return p
}

func getReqs(t *testing.T, p *pipeline, names ...string) []*http.Request {
	t.Helper()
	var reqs []*http.Request
	for _, n := range names {
		r, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/"+n, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// sendAll sends reqs and returns the bodies answered, in order.
func sendAll(ctx context.Context, p *pipeline, reqs []*http.Request, timeout time.Duration) (bodies []string, wrote int, err error) {
	_, err = p.send(ctx, reqs, timeout, func(n int, _ bool) { wrote += n }, func(i int, resp *http.Response, _ time.Time) {
		b, _ := io.ReadAll(resp.Body)
		bodies = append(bodies, string(b))
	})
	return bodies, wrote, err
}

// TestPipelineWritesAheadAndReadsInOrder: the server reads all the
// requests before it answers any (it would wait forever for GETs sent one
// at a time), and each answer is handed to its own request.
func TestPipelineWritesAheadAndReadsInOrder(t *testing.T) {
	s := startScripted(t, func(c *scriptConn) {
		var reqs []*http.Request
		for len(reqs) < 6 {
			r, err := c.next()
			if err != nil {
				return
			}
			reqs = append(reqs, r)
		}
		for _, r := range reqs {
			if c.answer(r, "") != nil {
				return
			}
		}
		for { // and one at a time after that
			r, err := c.next()
			if err != nil || c.answer(r, "") != nil {
				return
			}
		}
	})
	p := testPipeline(t, s, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names := []string{"a", "bb", "ccc", "d", "e", "f"}
	got, wrote, err := sendAll(ctx, p, getReqs(t, p, names...), time.Minute)
	if err != nil || strings.Join(got, ",") != strings.Join(names, ",") || wrote != len(names) {
		t.Fatalf("answers %q (%d written), %v; want %q", got, wrote, err, names)
	}
	// The connection is kept and carries the next batch.
	got, _, err = sendAll(ctx, p, getReqs(t, p, "g", "h"), time.Minute)
	if err != nil || strings.Join(got, ",") != "g,h" || s.conns.Load() != 1 {
		t.Fatalf("next batch: %q, %v on %d connections; want g,h on one", got, err, s.conns.Load())
	}
	if st := p.stats(); st.Batches != 2 || st.Depth != 8 || st.Cut != 0 || st.Owed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestPipelineCutWithGETsOwed: a server that closes the connection after
// three answers with five owed (as one that does not take pipelined
// requests may) leaves those five unanswered, named owed, and halves the
// depth; one that says Connection: close in its third answer (a server
// ending a connection politely) leaves them owed too, but the depth is
// kept.
func TestPipelineCutWithGETsOwed(t *testing.T) {
	for _, polite := range []bool{false, true} {
		t.Run(fmt.Sprint("polite=", polite), func(t *testing.T) {
			s := startScripted(t, func(c *scriptConn) {
				for i := 1; ; i++ {
					r, err := c.next()
					if err != nil {
						return
					}
					extra := ""
					if i == 3 && polite {
						extra = "Connection: close\r\n"
					}
					if c.answer(r, extra) != nil || i == 3 {
						return
					}
				}
			})
			p := testPipeline(t, s, 8)
			names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			got, _, err := sendAll(context.Background(), p, getReqs(t, p, names...), time.Minute)
			if strings.Join(got, ",") != "a,b,c" {
				t.Fatalf("answers %q, want a,b,c", got)
			}
			st := p.stats()
			if st.Owed != 5 {
				t.Errorf("owed %d, want 5", st.Owed)
			}
			if polite {
				if err != nil || st.Depth != 8 || st.Cut != 0 {
					t.Errorf("a polite close: %v, stats %+v; want no error, depth 8", err, st)
				}
				return
			}
			if err == nil || st.Depth != 4 || st.Cut != 1 {
				t.Errorf("a silent close: %v, stats %+v; want an error, depth 4, one cut", err, st)
			}
		})
	}
}

// TestPipelineAtDepthTwoGoesToOneForGood: a cut at depth 2 pins the depth
// at 1: batches answered whole never deepen it again.
func TestPipelineAtDepthTwoGoesToOneForGood(t *testing.T) {
	s := startScripted(t, func(c *scriptConn) {
		for {
			r, err := c.next()
			if err != nil || c.answer(r, "") != nil {
				return
			}
		}
	})
	p := testPipeline(t, s, 2)
	p.shallower()
	if p.depth.Load() != 1 {
		t.Fatalf("depth %d after a cut at 2, want 1", p.depth.Load())
	}
	for range 3 * pipeDeeper {
		if _, _, err := sendAll(context.Background(), p, getReqs(t, p, "a"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if d := p.depth.Load(); d != 1 {
		t.Errorf("depth %d after %d whole batches, want 1 (pinned)", d, 3*pipeDeeper)
	}
	// Unpinned, a shallower pipeline deepens back.
	p2 := testPipeline(t, s, 8)
	p2.shallower()
	for range 4 * pipeDeeper {
		if _, _, err := sendAll(context.Background(), p2, getReqs(t, p2, "a"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if d := p2.depth.Load(); d != 8 {
		t.Errorf("depth %d after %d whole batches from 4, want 8", d, 4*pipeDeeper)
	}
}

// TestPipelineNeverReadsAnUnaskedAnswer: an answer the server sends on an
// idle connection (a 408 before it closes it) is never taken for the next
// batch's: the connection is closed when taken (the peek), and the batch
// goes on a fresh one. When the 408 races the batch instead (it arrives
// after the peek), it is the first answer on a reused connection, which
// net/http too takes for the server closing an idle connection: the batch
// is sent again on a fresh one, never answered with it.
func TestPipelineNeverReadsAnUnaskedAnswer(t *testing.T) {
	for _, race := range []bool{false, true} {
		t.Run(fmt.Sprint("race=", race), func(t *testing.T) {
			idle, sent := make(chan struct{}), make(chan struct{})
			s := startScripted(t, func(c *scriptConn) {
				r, err := c.next()
				if err != nil || c.answer(r, "") != nil {
					return
				}
				if c.n == 1 {
					if race {
						// The next batch's requests arrive first.
						c.next()
					} else {
						<-idle
					}
					fmt.Fprintf(c.nc, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 7\r\n\r\nunasked")
					close(sent)
				}
				for {
					r, err := c.next()
					if err != nil || c.answer(r, "") != nil {
						return
					}
				}
			})
			p := testPipeline(t, s, 4)
			if got, _, err := sendAll(context.Background(), p, getReqs(t, p, "a"), time.Minute); err != nil || got[0] != "a" {
				t.Fatalf("first: %q, %v", got, err)
			}
			if !race {
				close(idle)
				<-sent // on loopback, in the client's socket once written
			}
			got, wrote, err := sendAll(context.Background(), p, getReqs(t, p, "b", "c"), time.Minute)
			if err != nil || strings.Join(got, ",") != "b,c" {
				t.Fatalf("after an unasked answer: %q, %v; want b,c", got, err)
			}
			st := p.stats()
			if !race && (st.Stale != 1 || wrote != 2) {
				t.Errorf("stale %d, %d written; want the connection closed when taken, 2 written once", st.Stale, wrote)
			}
			if race && wrote != 4 {
				t.Errorf("%d written, want 2 and the same 2 again on a fresh connection", wrote)
			}
			if s.conns.Load() != 2 {
				t.Errorf("%d connections, want 2", s.conns.Load())
			}
		})
	}
}

// TestPipelineEndsWithItsContext: a batch whose server never answers ends
// as soon as its context does, with the context's error, nothing answered.
func TestPipelineEndsWithItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := startScripted(t, func(c *scriptConn) {
		c.next()
		<-release
	})
	p := testPipeline(t, s, 4)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	got, _, err := sendAll(ctx, p, getReqs(t, p, "a", "b"), time.Hour)
	if !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("a canceled batch: %q, %v; want nothing, context.Canceled", got, err)
	}
	if st := p.stats(); st.Owed != 2 || st.Cut != 0 {
		t.Errorf("stats %+v, want 2 owed and no cut (the caller ended it)", st)
	}
}

// TestPipelineTimesOutASilentServer: a server that takes the first
// request and never answers the second (as one that drops pipelined
// requests does) is timed out per answer; the GET owed is named, and the
// depth halves.
func TestPipelineTimesOutASilentServer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := startScripted(t, func(c *scriptConn) {
		r, err := c.next()
		if err != nil || c.answer(r, "") != nil {
			return
		}
		<-release
	})
	p := testPipeline(t, s, 4)
	got, _, err := sendAll(context.Background(), p, getReqs(t, p, "a", "b"), 200*time.Millisecond)
	if strings.Join(got, ",") != "a" || err == nil || !strings.Contains(err.Error(), "no answer within the request timeout") {
		t.Fatalf("%q, %v; want a, then a timeout", got, err)
	}
	if st := p.stats(); st.Owed != 1 || st.Depth != 2 {
		t.Errorf("stats %+v, want 1 owed, depth 2", st)
	}
}

// TestBatchSendsOwedGETsAgain: a store whose S3 server closes its first
// connection after two answers of a pipelined batch still hands every key
// its bytes: the owed GETs are sent again one at a time, each counted as
// a GET and a retry, and the depth halves.
func TestBatchSendsOwedGETsAgain(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secretsecret")
	s := startScripted(t, func(c *scriptConn) {
		for i := 1; ; i++ {
			r, err := c.next()
			if err != nil {
				return
			}
			key := strings.TrimPrefix(r.URL.Path, "/bkt/")
			if c.answer(&http.Request{URL: &url.URL{Path: "/" + key}}, "") != nil || (c.n == 1 && i == 2) {
				return
			}
		}
	})
	ctx := context.Background()
	st, err := Open(ctx, "s3://bkt?endpoint=http://"+s.ln.Addr().String()+"&use_path_style=true&region=us-east-1", Options{PipelineDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !strings.Contains(st.ReadPath(), "pipelined, depth 2 of 8") {
		t.Fatalf("read path %q, want pipelined from depth 2 (the slow start)", st.ReadPath())
	}
	st.lean.pipe.depth.Store(8) // past the slow start
	keys := []string{"sig/aa/1/x", "sig/aa/2/x", "sig/aa/3/x", "sig/aa/4/x", "sig/aa/5/x", "sig/aa/6/x"}
	before, retries := st.Counts(), st.Retries()
	got := map[string]int{}
	st.GetAdmittedBatch(ctx, keys, nil, func(i int, data []byte, _ time.Time, err error) {
		if err != nil || string(data) != keys[i] {
			t.Errorf("%q: %q, %v", keys[i], data, err)
		}
		got[keys[i]]++
	})
	for _, k := range keys {
		if got[k] != 1 {
			t.Errorf("%q handed %d results, want 1", k, got[k])
		}
	}
	ps, _ := st.Pipeline()
	if ps.Owed != 4 || ps.Cut != 1 || ps.Depth != 4 {
		t.Errorf("pipeline %+v, want 4 owed, one cut, depth 4", ps)
	}
	if d := st.Counts().Sub(before); d.Get != 10 || st.Retries()-retries != 4 {
		t.Errorf("sent %v with %d retries, want 10 GETs (6 + the 4 owed again), 4 retries", d, st.Retries()-retries)
	}
}

// TestPipelineOverTLS: https goes through TLS with the transport's
// configuration (its roots: a test server's own certificate), ALPN
// http/1.1; a batch is answered in order on one connection, and an https
// origin the roots do not trust fails the handshake.
func TestPipelineOverTLS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshake's error
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	tr := srv.Client().Transport.(*http.Transport).Clone()
	p, why := newPipeline("https", host, tr, 2, 8)
	if p == nil {
		t.Fatal(why)
	}
	defer p.close()
	var reqs []*http.Request
	for _, n := range []string{"a", "b", "c", "d"} {
		r, _ := http.NewRequest(http.MethodGet, srv.URL+"/"+n, nil)
		reqs = append(reqs, r)
	}
	for range 2 {
		got, _, err := sendAll(context.Background(), p, reqs, time.Minute)
		if err != nil || strings.Join(got, ",") != "a,b,c,d" {
			t.Fatalf("over TLS: %q, %v", got, err)
		}
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections for two batches, want 1", conns.Load())
	}
	untrusted, _ := newPipeline("https", host, &http.Transport{}, 2, 8)
	defer untrusted.close()
	if _, _, err := sendAll(context.Background(), untrusted, reqs[:1], time.Minute); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Errorf("an untrusted server: %v, want a TLS handshake error", err)
	}
}

// TestPipelineDepthFollowsHowTheServerAnswers: a server that takes a
// connection's GETs one after another, 20 ms each (as a test's latency
// added per request), answers a batch's last GET far later than its first:
// the depth halves (no cut), so deep batches do not queue GETs behind each
// other; a server that answers a whole batch at once keeps the depth.
func TestPipelineDepthFollowsHowTheServerAnswers(t *testing.T) {
	for _, slow := range []bool{true, false} {
		t.Run(fmt.Sprint("slow=", slow), func(t *testing.T) {
			s := startScripted(t, func(c *scriptConn) {
				var reqs []*http.Request
				for {
					r, err := c.next()
					if err != nil {
						return
					}
					if slow {
						time.Sleep(20 * time.Millisecond)
						if c.answer(r, "") != nil {
							return
						}
						continue
					}
					if reqs = append(reqs, r); len(reqs) < 8 {
						continue
					}
					for _, r := range reqs {
						if c.answer(r, "") != nil {
							return
						}
					}
					reqs = nil
				}
			})
			p := testPipeline(t, s, 8)
			got, _, err := sendAll(context.Background(), p, getReqs(t, p, "a", "b", "c", "d", "e", "f", "g", "h"), time.Minute)
			if err != nil || len(got) != 8 {
				t.Fatalf("%q, %v", got, err)
			}
			st := p.stats()
			switch {
			case slow && (st.Depth != 4 || st.Spread != 1 || st.Cut != 0):
				t.Errorf("answers 20 ms apart: %+v, want depth 4, one spread batch, no cut", st)
			case !slow && (st.Depth != 8 || st.Spread != 0):
				t.Errorf("answers at once: %+v, want depth 8", st)
			}
		})
	}
}

// TestPipelineStartsShallow: a pipeline starts at depth 2 and grows by one
// every pipeDeeper batches answered whole and in time; a server that
// never answers pipelined GETs (it reads them and stays silent, as some
// proxies do) costs one timeout at depth 2 on a fresh connection — a cut,
// and the depth pinned at 1 — not one a batch at the full depth.
func TestPipelineStartsShallow(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var mute atomic.Bool
	s := startScripted(t, func(c *scriptConn) {
		for {
			r, err := c.next()
			if err != nil {
				return
			}
			if mute.Load() && c.br.Buffered() > 0 {
				<-release // more than one request at once: never answered
				return
			}
			if c.answer(r, "") != nil {
				return
			}
		}
	})
	p, why := newPipeline("http", s.ln.Addr().String(), &http.Transport{}, 4, 8)
	if p == nil {
		t.Fatal(why)
	}
	defer p.close()
	if d := p.depth.Load(); d != pipeStart {
		t.Fatalf("depth %d at the start, want %d", d, pipeStart)
	}
	for range 2 * pipeDeeper {
		if _, _, err := sendAll(context.Background(), p, getReqs(t, p, "a", "b"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if d := p.depth.Load(); d != pipeStart+2 {
		t.Fatalf("depth %d after %d whole batches, want %d", d, 2*pipeDeeper, pipeStart+2)
	}
	p.close()
	p2, _ := newPipeline("http", s.ln.Addr().String(), &http.Transport{}, 4, 8)
	defer p2.close()
	mute.Store(true)
	got, _, err := sendAll(context.Background(), p2, getReqs(t, p2, "a", "b"), 200*time.Millisecond)
	if len(got) != 0 || err == nil {
		t.Fatalf("a server mute to pipelined GETs: %q, %v; want nothing, an error", got, err)
	}
	if st := p2.stats(); st.Depth != 1 || st.Cut != 1 || !p2.pinned.Load() {
		t.Errorf("after a mute batch at depth 2: %+v, want depth 1 (pinned), one cut", st)
	}
}

// TestPipelineEndsABatchAtAnErrorAnswer: an error answer other than 404 (a
// 503 a server sent unasked would put every answer after it one GET late)
// ends the batch: the GETs after it are owed, never read from that
// connection; a 404 does not.
func TestPipelineEndsABatchAtAnErrorAnswer(t *testing.T) {
	s := startScripted(t, func(c *scriptConn) {
		for {
			r, err := c.next()
			if err != nil {
				return
			}
			switch r.URL.Path {
			case "/gone":
				_, err = fmt.Fprintf(c.nc, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			case "/busy":
				_, err = fmt.Fprintf(c.nc, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy")
			default:
				err = c.answer(r, "")
			}
			if err != nil {
				return
			}
		}
	})
	p := testPipeline(t, s, 8)
	got, _, err := sendAll(context.Background(), p, getReqs(t, p, "a", "gone", "b", "busy", "c", "d"), time.Minute)
	if err != nil || strings.Join(got, ",") != "a,,b,busy" {
		t.Fatalf("answers %q, %v; want a, the 404's, b, the 503's, then none", got, err)
	}
	if st := p.stats(); st.Owed != 2 || st.Cut != 0 || st.Depth != 8 {
		t.Errorf("stats %+v, want 2 owed, no cut, depth 8", st)
	}
}

// TestBatchesNeverWaitHoldingSlots: with fewer request slots than a batch
// is deep (--max-requests 3, depth 8), batches sent at once each take the
// slots that are free and go: none holds slots while it waits for more,
// so all of them end (they waited on each other for ever before).
func TestBatchesNeverWaitHoldingSlots(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secretsecret")
	s := startScripted(t, func(c *scriptConn) {
		for {
			r, err := c.next()
			if err != nil {
				return
			}
			key := strings.TrimPrefix(r.URL.Path, "/bkt/")
			if c.answer(&http.Request{URL: &url.URL{Path: "/" + key}}, "") != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Open(ctx, "s3://bkt?endpoint=http://"+s.ln.Addr().String()+"&use_path_style=true&region=us-east-1", Options{PipelineDepth: 8, MaxRequests: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.lean.pipe.depth.Store(8)
	var wg sync.WaitGroup
	var answered atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keys []string
			for i := range 8 {
				keys = append(keys, fmt.Sprintf("sig/%02x/%d/x", w, i))
			}
			st.GetAdmittedBatch(ctx, keys, nil, func(i int, data []byte, _ time.Time, err error) {
				if err != nil || string(data) != keys[i] {
					t.Errorf("%q: %q, %v", keys[i], data, err)
				}
				answered.Add(1)
			})
		}()
	}
	wg.Wait()
	if ctx.Err() != nil || answered.Load() != 32 {
		t.Fatalf("%d of 32 answered, %v: the batches waited on each other's slots", answered.Load(), ctx.Err())
	}
}

// TestBatchNotSentIsNoRetry: a batch whose requests cannot be made (the
// token for them fails) is sent one at a time, where each GET's error is
// its own; nothing was sent before, so nothing is counted as a retry.
func TestBatchNotSentIsNoRetry(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secretsecret")
	s := startScripted(t, func(c *scriptConn) {
		for {
			r, err := c.next()
			if err != nil {
				return
			}
			key := strings.TrimPrefix(r.URL.Path, "/bkt/")
			if c.answer(&http.Request{URL: &url.URL{Path: "/" + key}}, "") != nil {
				return
			}
		}
	})
	ctx := context.Background()
	st, err := Open(ctx, "s3://bkt?endpoint=http://"+s.ln.Addr().String()+"&use_path_style=true&region=us-east-1", Options{PipelineDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.lean.pipe.depth.Store(4)
	st.lean.authorize = func(*http.Request) error { return errors.New("no token") }
	keys := []string{"sig/aa/1/x", "sig/aa/2/x", "sig/aa/3/x"}
	before, retries := st.Counts(), st.Retries()
	n := 0
	st.GetAdmittedBatch(ctx, keys, nil, func(i int, data []byte, _ time.Time, err error) {
		if err != nil || string(data) != keys[i] {
			t.Errorf("%q: %q, %v", keys[i], data, err)
		}
		n++
	})
	if d := st.Counts().Sub(before); n != len(keys) || d.Get != int64(len(keys)) || st.Retries() != retries {
		t.Errorf("%d results, sent %v, %d retries; want %d, one GET each, no retry", n, d, st.Retries()-retries, len(keys))
	}
	if ps, _ := st.Pipeline(); ps.Batches != 0 {
		t.Errorf("pipeline %+v: nothing should have been written pipelined", ps)
	}
}
