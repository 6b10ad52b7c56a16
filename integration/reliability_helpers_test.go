package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The reliability tests (reliability_*_test.go) run in CI at scale 1, in
// seconds to a minute each. scripts/reliability runs them longer by setting
// OXYFS_RELIABILITY_SCALE (a positive integer multiplying their counts and
// outages); every test logs its figures on lines starting "figure:", which
// the script collects.

// relPoll is how often a reliability test polls for a condition.
const relPoll = 50 * time.Millisecond

// relScale is OXYFS_RELIABILITY_SCALE, 1 when unset.
func relScale(t *testing.T) int {
	t.Helper()
	v := os.Getenv("OXYFS_RELIABILITY_SCALE")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("OXYFS_RELIABILITY_SCALE=%q: want a positive integer", v)
	}
	return n
}

// figure logs one of the figures docs/reliability.md quotes.
func relFigure(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("figure: %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

var casRE = regexp.MustCompile(`(?m)^cas: updates=(\d+) tries=(\d+) max-tries=(\d+) retried-reads=(\d+)$`)

// relCASStats reads the "cas: updates=N tries=N max-tries=N retried-reads=N"
// line --stats prints (all zero when the command made no update).
func relCASStats(stderr string) store.CASStats {
	m := casRE.FindStringSubmatch(stderr)
	if m == nil {
		return store.CASStats{}
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	return store.CASStats{Updates: n(1), Tries: n(2), MaxTries: n(3)}
}

var metricsRE = regexp.MustCompile(`metrics at (http://\S+/metrics)`)

// relMetric reads one unlabelled metric of a mount started with
// --metrics-addr 127.0.0.1:0.
func relMetric(t *testing.T, m *mountProc, name string) int64 {
	t.Helper()
	for l := range strings.Lines(metricsPage(t, m)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("metric %s = %q: %v", name, v, err)
			}
			return n
		}
	}
	t.Fatalf("mount %s: no metric %s", m.dir, name)
	return 0
}

// metricsPage fetches the metrics page of a mount started with
// --metrics-addr.
func metricsPage(t *testing.T, m *mountProc) string {
	t.Helper()
	sub := metricsRE.FindStringSubmatch(m.stderr.first("metrics at "))
	if sub == nil {
		t.Fatalf("mount %s: no \"metrics at\" line (start it with --metrics-addr)\n%s", m.dir, m.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sub[1], nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics of %s: %v", m.dir, err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics of %s: %v", m.dir, err)
	}
	return string(page)
}

// relTempFile writes data to a new file of the test and returns its path.
func relTempFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// relLiveKeys returns the keys of every live list of the store (sorted,
// each once), after checking each list is whole: it decodes, and its name
// is the hash of its content (format.VerifyEntryList).
func relLiveKeys(t *testing.T, st *store.Store) (keys []string, complete int) {
	t.Helper()
	ctx := context.Background()
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range sn.LiveLists() {
		data, err := st.Get(ctx, l.Name)
		if err != nil {
			t.Fatalf("read live list %s: %v", l.Name, err)
		}
		if err := format.VerifyEntryList(l.Name, data); err != nil {
			t.Errorf("live list %s is not whole: %v", l.Name, err)
			continue
		}
		ks, err := format.DecodeEntryListAll(data)
		if err != nil {
			t.Errorf("live list %s: %v", l.Name, err)
			continue
		}
		keys = append(keys, ks...)
		if l.Complete {
			complete++
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), complete
}

// relAck is a write that returned success: its key and its bytes.
type relAck struct {
	key  string
	data []byte
}

// relVerifyAcked checks, after a final fold, that the store has exactly one
// live complete list, that every acknowledged write is in the live lists,
// and that each reads back with its bytes through the mount at mnt (which
// the caller refreshed). It returns how many were found and read back.
func relVerifyAcked(t *testing.T, st *store.Store, mnt string, acked []relAck) (found, readBack int) {
	t.Helper()
	keys, complete := relLiveKeys(t, st)
	if complete != 1 {
		t.Errorf("after the final fold: %d live complete lists, want 1", complete)
	}
	for _, a := range acked {
		if _, ok := slices.BinarySearch(keys, a.key); ok {
			found++
		} else if len(acked)-found <= 10 {
			t.Errorf("acknowledged but not in the live lists: %s", a.key)
		}
		if got, err := os.ReadFile(filepath.Join(mnt, a.key)); err == nil && bytes.Equal(got, a.data) {
			readBack++
		} else if len(acked)-readBack <= 10 {
			t.Errorf("read %s through the mount: %q, %v; want %q", a.key, got, err, a.data)
		}
	}
	return found, readBack
}

// relProxy is a TCP proxy in front of a server that a test can make hang:
// in hang mode it accepts connections and holds every byte, in both
// directions, until the mode changes back — a server that stopped
// answering without closing anything.
type relProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	hang  bool
	cond  *sync.Cond
	conns []net.Conn
}

func newRelProxy(t *testing.T, target string) *relProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &relProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's 127.0.0.1:PORT.
func (p *relProxy) Addr() string { return p.ln.Addr().String() }

// setHang makes the proxy hold (true) or pass (false) every byte.
func (p *relProxy) setHang(h bool) {
	p.mu.Lock()
	p.hang = h
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *relProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *relProxy) forward(c net.Conn) {
	defer c.Close()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	p.mu.Lock()
	p.conns = append(p.conns, s)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(s, c); done <- struct{}{} }()
	go func() { p.pipe(c, s); done <- struct{}{} }()
	<-done
}

// pipe copies src to dst, holding each chunk while the proxy hangs.
func (p *relProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.hang {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			return
		}
	}
}

func (p *relProxy) close() {
	p.ln.Close()
	p.setHang(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}
