package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// s3At opens an S3 store whose endpoint is addr (a fake server of the test).
func s3At(t *testing.T, addr string, timeout time.Duration) *store.Store {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	u := "s3://bkt?endpoint=http://" + addr + "&use_path_style=true&region=us-east-1&disable_https=true"
	st, err := store.Open(context.Background(), u, store.Options{Layout: store.LayoutBucket, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// s3Errors is an S3 endpoint that answers every request with status code.
func s3Errors(t *testing.T, code int) (addr string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(code)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>injected</Message></Error>", http.StatusText(code))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), requests
}

// TestReadsAreRetriedAndEveryAttemptCounted: a GET, a HEAD and a LIST that
// meet 503 are each sent MaxReadTries times — by the store, not the SDK, so
// the counters equal the requests the server saw — and fail with
// ErrUnavailable naming the store.
func TestReadsAreRetriedAndEveryAttemptCounted(t *testing.T) {
	addr, seen := s3Errors(t, http.StatusServiceUnavailable)
	st := s3At(t, addr, 5*time.Second)
	ctx := context.Background()
	_, err := st.Get(ctx, "sig/ab/cdef/alice")
	checkUnavailable(t, "get", err, st)
	_, err = st.Exists(ctx, "sig/ab/cdef/alice")
	checkUnavailable(t, "head", err, st)
	_, _, err = st.ListPage(ctx, "sig/", "", nil, 0)
	checkUnavailable(t, "list", err, st)
	_, _, err = st.ReadRecord(ctx, format.JournalKey)
	checkUnavailable(t, "read record", err, st)
	want := store.Counts{Get: 2 * store.MaxReadTries, Head: store.MaxReadTries, List: store.MaxReadTries}
	if got := st.Counts(); got != want {
		t.Errorf("counters %v, want %v", got, want)
	}
	if wire, _ := st.WireCounts(); wire != want {
		t.Errorf("on the wire %v, want %v (the SDK must not retry)", wire, want)
	}
	if n := seen.Load(); n != want.Total() {
		t.Errorf("the server saw %d requests, want %d", n, want.Total())
	}
	if r := st.Retries(); r != 4*(store.MaxReadTries-1) {
		t.Errorf("Retries() = %d, want %d", r, 4*(store.MaxReadTries-1))
	}
}

// TestWritesAreSentOnce: a PUT, a DELETE and a create-only write that meet
// 500 (here in the conditions probe each write first sends) are sent once (whether a write whose answer was lost landed is not
// known) and fail with ErrUnavailable.
func TestWritesAreSentOnce(t *testing.T) {
	addr, seen := s3Errors(t, http.StatusInternalServerError)
	st := s3At(t, addr, 5*time.Second)
	ctx := context.Background()
	checkUnavailable(t, "put", st.Put(ctx, "sig/ab/cdef/alice", []byte("sig")), st)
	checkUnavailable(t, "create", st.PutIfAbsent(ctx, "pack-x.entries", []byte("list")), st)
	// Each write's conditions probe (its first, create-only PUT) met
	// the 500: sent once, counted apart, and the write sent nothing more
	// but the probe's removal of a key that may have landed (one DELETE
	// attempt, which s3blob begins with a HEAD: it met the 500 too).
	if got, want := st.Counts(), (store.Counts{}); got != want {
		t.Errorf("counters %v, want %v", got, want)
	}
	if v := st.ConditionsVerdict(); v.Checked {
		t.Errorf("a probe that met 500 was kept: %+v", v)
	}
	if n := seen.Load(); n != 4 {
		t.Errorf("the server saw %d requests, want 4 (a create-only PUT and a removal's first request per write)", n)
	}
}

// TestClientErrorsAreNotRetried: a 403 is final: one request.
func TestClientErrorsAreNotRetried(t *testing.T) {
	addr, seen := s3Errors(t, http.StatusForbidden)
	st := s3At(t, addr, 5*time.Second)
	_, err := st.Get(context.Background(), "sig/ab/cdef/alice")
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("get from a server answering 403: %v, want a failure that is not ErrUnavailable", err)
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("the server saw %d requests, want 1", n)
	}
}

// TestHungServerTimesOut: a server that accepts connections and never
// answers cannot hang a read: each attempt gives up after the request
// timeout, and the read fails after MaxReadTries of them.
func TestHungServerTimesOut(t *testing.T) {
	ln := hungListener(t)
	const timeout = 200 * time.Millisecond
	st := s3At(t, ln.Addr().String(), timeout)
	began := time.Now()
	_, _, err := st.ListPage(context.Background(), "pack-", "", nil, 0)
	took := time.Since(began)
	checkUnavailable(t, "list", err, st)
	if !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("error does not say the request timed out: %v", err)
	}
	// 3 attempts of 200 ms and two waits of at most 100 and 200 ms.
	if limit := store.MaxReadTries*timeout + 300*time.Millisecond + 2*time.Second; took > limit {
		t.Errorf("the listing took %v against a hung server, want under %v", took, limit)
	}
	if got := st.Counts().List; got != store.MaxReadTries {
		t.Errorf("%d LIST attempts, want %d", got, store.MaxReadTries)
	}
	t.Logf("hung server: failed after %v: %v", took.Round(time.Millisecond), err)
}

// TestCallerCancelIsNotRetried: the caller's own deadline ends a read at
// once; it is not a failure of the store to retry.
func TestCallerCancelIsNotRetried(t *testing.T) {
	ln := hungListener(t)
	st := s3At(t, ln.Addr().String(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := st.Get(ctx, "sig/ab/cdef/alice")
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("get cancelled by its caller: %v, want the caller's deadline", err)
	}
	if got := st.Counts().Get; got != 1 {
		t.Errorf("%d GET attempts, want 1", got)
	}
}

// TestRefusedConnectionIsUnavailable: nothing listening: every read fails
// fast with ErrUnavailable.
func TestRefusedConnectionIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	st := s3At(t, addr, 5*time.Second)
	_, err = st.Get(context.Background(), "pack-entries")
	checkUnavailable(t, "get", err, st)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error does not carry ECONNREFUSED: %v", err)
	}
	err = st.Put(context.Background(), "sig/ab/cdef/alice", []byte("x"))
	checkUnavailable(t, "put", err, st)
}

func checkUnavailable(t *testing.T, what string, err error, st *store.Store) {
	t.Helper()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("%s: %v, want ErrUnavailable", what, err)
		return
	}
	if !strings.Contains(err.Error(), st.URL()) {
		t.Errorf("%s: the error does not name the store %s: %v", what, st.URL(), err)
	}
}

// hungListener accepts connections and never answers on them.
func hungListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln
}

// TestLostWriteThatLandedIsNotRepeated: a compare-and-swap write lands but
// its answer is lost (connection reset). UpdateRecord reads the record
// again, finds exactly the bytes it wrote, and is done: no duplicate line.
func TestLostWriteThatLandedIsNotRepeated(t *testing.T) {
	st, lb := lossyStore(t)
	ctx := context.Background()
	lb.loseNext(format.JournalKey, 1)
	res, err := st.UpdateRecord(ctx, format.JournalKey, appendLine("0 sig/ab/cdef/alice"))
	if err != nil || !res.Wrote {
		t.Fatalf("update whose answer was lost: %+v, %v; want written", res, err)
	}
	got, _, _ := st.ReadRecord(ctx, format.JournalKey)
	if string(got) != "0 sig/ab/cdef/alice\n" {
		t.Errorf("journal %q, want the one line once", got)
	}
	if res.Tries != 2 {
		t.Errorf("%d tries, want 2 (the lost write, the read that found it landed)", res.Tries)
	}
	if s := st.CASStats(); s.Updates != 1 || s.MaxTries != 2 {
		t.Errorf("CASStats %+v, want 1 update of 2 tries", s)
	}
}

// TestLostWriteThenAnotherWriterDuplicatesHarmlessly: the lost write
// landed and another writer appended before the re-read: the update is
// applied again, so its line appears twice — documented as harmless — and
// nobody's line is lost.
func TestLostWriteThenAnotherWriterDuplicatesHarmlessly(t *testing.T) {
	st, lb := lossyStore(t)
	ctx := context.Background()
	other := store.New(st.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket})
	lb.loseNext(format.JournalKey, 1)
	lb.afterLoss = func() {
		if _, err := other.UpdateRecord(ctx, format.JournalKey, appendLine("0 seal/ab/cdef/v")); err != nil {
			t.Errorf("other writer: %v", err)
		}
	}
	if _, err := st.UpdateRecord(ctx, format.JournalKey, appendLine("0 sig/ab/cdef/alice")); err != nil {
		t.Fatal(err)
	}
	got, _, _ := st.ReadRecord(ctx, format.JournalKey)
	if want := "0 sig/ab/cdef/alice\n0 seal/ab/cdef/v\n0 sig/ab/cdef/alice\n"; string(got) != want {
		t.Errorf("journal %q, want %q", got, want)
	}
}

// TestLostWritesGiveUp: a write that never gets an answer is tried as
// MaxReadTries rounds of compare-and-swap, then the update fails with
// ErrUnavailable.
func TestLostWritesGiveUp(t *testing.T) {
	st, lb := lossyStore(t)
	lb.loseNext(format.JournalKey, 100)
	lb.dropWrites = true
	res, err := st.UpdateRecord(context.Background(), format.JournalKey, appendLine("0 sig/ab/cdef/alice"))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("update against a store that never answers writes: %v, want ErrUnavailable", err)
	}
	if res.Tries != store.MaxReadTries {
		t.Errorf("%d tries, want %d", res.Tries, store.MaxReadTries)
	}
}

// TestLostRacesAreConflicts: versitygw answers a conditional PUT that lost
// its race before reading the body and closes the connection, so the loser
// sees a reset, not a 412. A lost write after which the record is found
// changed by another writer is such a race: the update goes on as after a
// conflict (5 in a row here, more than MaxReadTries) and lands once, after
// every line of the winners.
func TestLostRacesAreConflicts(t *testing.T) {
	st, lb := lossyStore(t)
	ctx := context.Background()
	const races = 5
	lb.loseNext(format.JournalKey, races)
	lb.dropWrites = true
	other := 0
	lb.raced = func() {
		other++
		if _, err := st.UpdateRecord(ctx, format.JournalKey, appendLine(fmt.Sprintf("0 seal/ab/cdef/v%d", other))); err != nil {
			t.Errorf("the winner's write: %v", err)
		}
	}
	res, err := st.UpdateRecord(ctx, format.JournalKey, appendLine("0 sig/ab/cdef/alice"))
	if err != nil {
		t.Fatalf("update that lost %d races: %v", races, err)
	}
	if res.Tries != races+1 || !res.Wrote {
		t.Errorf("%+v, want %d tries and written", res, races+1)
	}
	got, _, _ := st.ReadRecord(ctx, format.JournalKey)
	want := ""
	for i := 1; i <= races; i++ {
		want += fmt.Sprintf("0 seal/ab/cdef/v%d\n", i)
	}
	if want += "0 sig/ab/cdef/alice\n"; string(got) != want {
		t.Errorf("journal %q, want %q", got, want)
	}
}

func appendLine(line string) func([]byte, bool) ([]byte, error) {
	return func(old []byte, _ bool) ([]byte, error) {
		return append(append([]byte(nil), old...), line+"\n"...), nil
	}
}

// lossyBucket is a mem bucket whose writes of chosen keys land (or not,
// with dropWrites) and then fail as a reset connection does.
type lossyBucket struct {
	mu         sync.Mutex
	lose       map[string]int
	dropWrites bool
	afterLoss  func() // runs at the first read after a lost write landed
	pending    func()
	// raced, with dropWrites, runs at the first read after each dropped
	// write: another writer that won the race. Its own writes pass.
	raced  func()
	racing bool
}

func lossyStore(t *testing.T) (*store.Store, *lossyBucket) {
	t.Helper()
	lb := &lossyBucket{lose: map[string]int{}}
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Before: lb.before, AfterPut: lb.afterPut})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st, lb
}

func (b *lossyBucket) loseNext(key string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lose[key] = n
}

var errReset = fmt.Errorf("write %w", syscall.ECONNRESET)

// before drops a write to lose (with dropWrites) and runs afterLoss at the
// first read after a lost write landed.
func (b *lossyBucket) before(_ context.Context, op blobtest.Op, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch op {
	case blobtest.OpPut:
		if b.dropWrites && b.lose[key] > 0 && !b.racing {
			b.lose[key]--
			if b.raced != nil {
				b.pending = func() {
					b.mu.Lock()
					b.racing = true
					b.mu.Unlock()
					b.raced()
					b.mu.Lock()
					b.racing = false
					b.mu.Unlock()
				}
			}
			return errReset
		}
	case blobtest.OpGet:
		if f := b.pending; f != nil {
			b.pending = nil
			b.mu.Unlock()
			f()
			b.mu.Lock()
		}
	}
	return nil
}

// afterPut loses the response of a write that landed.
func (b *lossyBucket) afterPut(key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lose[key] == 0 || b.racing {
		return nil
	}
	b.lose[key]--
	b.pending, b.afterLoss = b.afterLoss, nil
	return errReset
}

// burstWidth is read-ahead's GETs in flight, under DefaultMaxRequests.
const burstWidth = 48

// connsOfBursts serves handler and sends 4 bursts of burstWidth concurrent
// GETs through the get that client makes for the server's address (i: the
// request's number in its burst); it returns the connections the server
// accepted.
func connsOfBursts(t *testing.T, handler http.HandlerFunc, client func(addr string) func(i int) error) int64 {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	get := client(srv.Listener.Addr().String())
	for range 4 {
		var wg sync.WaitGroup
		for i := range burstWidth {
			wg.Go(func() {
				if err := get(i); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		time.Sleep(100 * time.Millisecond) // the last connections go back to the pool after their bodies
	}
	return conns.Load()
}

// checkConnsOfBursts: a request that finds no idle connection dials one,
// and uses whichever comes first, the dial or a connection another request
// gives back, so a busy machine may open a few more than burstWidth.
// Keeping 10 idle (the SDK's default) or 2 (net/http's), 4 bursts opened
// 96–132 and 184 here.
func checkConnsOfBursts(t *testing.T, n int64) {
	t.Helper()
	if limit := int64(burstWidth + burstWidth/2); n == 0 || n > limit {
		t.Errorf("4 bursts of %d GETs opened %d connections; want at most %d", burstWidth, n, limit)
	}
}

// TestS3ClientKeepsItsConnections: bursts of GETs as wide as read-ahead
// sends reuse the connections of the first burst: the client keeps as many
// idle as the store may have requests in flight (net/http keeps 2 a host,
// the AWS SDK 10), so a burst costs no TCP handshake and no new connection
// on the server.
func TestS3ClientKeepsItsConnections(t *testing.T) {
	n := connsOfBursts(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "9")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Unix(1e9, 0).UTC().Format(http.TimeFormat))
		io.WriteString(w, "signature")
	}, func(addr string) func(int) error {
		st := s3At(t, addr, 5*time.Second)
		return func(i int) error {
			_, err := st.Get(context.Background(), fmt.Sprintf("sig/ab/%04d/alice", i))
			return err
		}
	})
	checkConnsOfBursts(t, n)
}

// TestIdleTransportKeepsItsConnections: the GCS client's transport keeps
// as many idle connections as the store may have requests in flight, so
// bursts of GETs as wide as read-ahead's reuse the first burst's
// connections (net/http's default keeps 2 a host and reconnects the rest).
func TestIdleTransportKeepsItsConnections(t *testing.T) {
	n := connsOfBursts(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "signature")
	}, func(addr string) func(int) error {
		client := &http.Client{Transport: store.IdleTransport(store.DefaultMaxRequests)}
		return func(int) error {
			resp, err := client.Get("http://" + addr + "/")
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
	})
	checkConnsOfBursts(t, n)
}
