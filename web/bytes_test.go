package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// gate holds the first want responses at their first write until opened,
// as slow clients do, and counts them.
type gate struct {
	open    chan struct{}
	mu      sync.Mutex
	waiting int
	all     chan struct{} // closed when want responses wait
	want    int
}

type gatedWriter struct {
	http.ResponseWriter
	g      *gate
	passed bool
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if !w.passed {
		w.passed = true
		w.g.mu.Lock()
		w.g.waiting++
		hold := w.g.waiting <= w.g.want // the first want answers only
		if w.g.waiting == w.g.want {
			close(w.g.all)
		}
		w.g.mu.Unlock()
		if hold {
			<-w.g.open
		}
	}
	return w.ResponseWriter.Write(p)
}

// bytesFixture serves a folded store of the given signatures (bytes by
// entry) through an index opened with opts, behind g when not nil.
func bytesFixture(t *testing.T, opts index.Options, g *gate, sigs map[format.Entry][]byte) (*store.Store, *index.Index, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	st := storefixture.NewMem(t)
	var es []format.Entry
	for e, data := range sigs {
		if err := st.Put(ctx, e.Key(), data); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	storefixture.WriteEntryList(t, st, true, es...)
	opts.Warn, opts.ReadAhead = func(string) {}, -1
	ix, err := index.Open(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	h := Handler(ix, Options{Logf: t.Logf})
	if g != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(&gatedWriter{ResponseWriter: w, g: g}, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return st, ix, srv
}

func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// TestServeAfterAResignServesTheNewBytes (issue 22, item 1): serve read a
// signature; its signer signs again, the old folded line leaves the journal
// as the new one comes, and a fold marks the new one (one folded line
// before and after); after the refresh serve answers the new bytes.
func TestServeAfterAResignServesTheNewBytes(t *testing.T) {
	ctx := context.Background()
	old, resigned := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("n"), 100)
	st, ix, srv := bytesFixture(t, index.Options{}, nil, map[format.Entry][]byte{alice: old})
	storefixture.WriteJournal(t, st, 1_000_000, alice)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if code, got := getBody(t, srv.URL+keyURL(alice)); code != http.StatusOK || !bytes.Equal(got, old) {
		t.Fatalf("GET before: %d, %d bytes", code, len(got))
	}
	if err := st.Put(ctx, alice.Key(), resigned); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteJournal(t, st, 1_000_000+3_600_000, alice)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if code, got := getBody(t, srv.URL+keyURL(alice)); code != http.StatusOK || !bytes.Equal(got, resigned) {
		t.Fatalf("GET after the re-sign and a refresh: %d, %d bytes, want the new %d", code, len(got), len(resigned))
	}
}

// TestSlowClientsOfOneSignatureShareOneCopy (issue 25, item 1): thirty
// clients reading one 4 MiB signature slowly (each answer held at its
// first write) hold one copy of it in serve, not one each; every one then
// gets it whole.
func TestSlowClientsOfOneSignatureShareOneCopy(t *testing.T) {
	const size, clients = 4 << 20, 30
	g := &gate{open: make(chan struct{}), all: make(chan struct{}), want: clients}
	data := bytes.Repeat([]byte("s"), size)
	_, ix, srv := bytesFixture(t, index.Options{}, g, map[format.Entry][]byte{alice: data})
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	bodies := make([][]byte, clients)
	codes := make([]int, clients)
	peak := memtest.Peak(func() {
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(srv.URL + keyURL(alice))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				codes[i] = resp.StatusCode
				bodies[i], _ = io.ReadAll(resp.Body)
			}()
		}
		<-g.all
	})
	close(g.open)
	wg.Wait()
	for i := range clients {
		if codes[i] != http.StatusOK || !bytes.Equal(bodies[i], data) {
			t.Fatalf("client %d: %d, %d bytes", i, codes[i], len(bodies[i]))
		}
	}
	t.Logf("peak heap of %d slow clients of a %d MiB signature: %d MiB", clients, size>>20, peak/memtest.MiB)
	if peak > 3*size {
		t.Errorf("peak heap %d MiB for %d clients of one %d MiB signature, want about one copy", peak/memtest.MiB, clients, size>>20)
	}
}

// TestServePastTheReadersBudgetIs503: with one signature's answer held, a
// GET of another that would pass the readers' budget is 503 with a
// Retry-After; once the first answer is done it is served.
func TestServePastTheReadersBudgetIs503(t *testing.T) {
	const size = 600 << 10
	g := &gate{open: make(chan struct{}), all: make(chan struct{}), want: 1}
	a, b := bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size)
	_, _, srv := bytesFixture(t, index.Options{SigCacheBytes: 64 << 10, ReaderBytes: 1 << 20}, g, map[format.Entry][]byte{alice: a, bob: b})
	done := make(chan []byte)
	go func() {
		resp, err := http.Get(srv.URL + keyURL(alice))
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		done <- got
	}()
	<-g.all // alice's answer holds its bytes
	resp, err := http.Get(srv.URL + keyURL(bob))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET past the budget: %s, Retry-After %q, want 503 with one", resp.Status, resp.Header.Get("Retry-After"))
	}
	close(g.open)
	if got := <-done; !bytes.Equal(got, a) {
		t.Fatalf("the held answer: %d bytes", len(got))
	}
	if code, got := getBody(t, srv.URL+keyURL(bob)); code != http.StatusOK || !bytes.Equal(got, b) {
		t.Fatalf("GET once the first answer is done: %d, %d bytes", code, len(got))
	}
}
