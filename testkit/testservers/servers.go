package testservers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testdeps"
)

// startTimeout bounds how long one server start (or restart) may take before
// it is reported as failed.
const startTimeout = 30 * time.Second

// Server is a running object-store server.
type Server struct {
	// Kind is "s3", "azure" or "gcs".
	Kind string
	// URL is the server's HTTP endpoint, http://127.0.0.1:PORT. It is the
	// base of every blob URL that NewBucket and BucketURL return.
	URL string
	// Env holds the environment variables a client process needs to reach
	// the server through gocloud.dev/blob URLs (credentials, emulator host).
	// Start has already set them in this process's environment.
	Env map[string]string

	backend *backend
	bin     string // absolute path of the server binary
	dir     string // temp root, removed by Shutdown
	dataDir string // the server's storage, kept across Kill/Restart
	port    int
	addr    string // 127.0.0.1:PORT

	mu      sync.Mutex
	proc    *process // nil while killed
	starts  int      // number of process starts, names the log files
	stopped bool     // set by Shutdown

	startTook time.Duration
}

// entry is the state of one kind in this test binary.
type entry struct {
	locateOnce sync.Once
	bin        string // the server program, once located
	missing    string // non-empty: no server program, and why

	startOnce sync.Once
	srv       *Server
	err       error
}

// entryFor returns the entry of a kind, making it on first use.
func entryFor(kind string) *entry {
	registryMu.Lock()
	defer registryMu.Unlock()
	e := registry[kind]
	if e == nil {
		e = &entry{}
		registry[kind] = e
	}
	return e
}

// locate finds (or builds, or installs) the program of b once.
func (e *entry) locate(ctx context.Context, b *backend) {
	e.locateOnce.Do(func() {
		bin, err := locate(ctx, b)
		if err != nil {
			e.missing = fmt.Sprintf("%s server %q unavailable: %v", b.kind, b.binary, err)
			return
		}
		e.bin = bin
	})
}

// Prepare locates the program of every kind now, building or installing
// the pinned ones if need be, so that Start does not: [Run] calls it before
// m.Run. Kinds are prepared concurrently; what cannot be had is reported by
// Start, as a skip or a failure.
//
// The go command kills a test binary that runs a minute past its -timeout
// (10 minutes by default), Prepare included, with a goroutine dump that
// says nothing useful. A first build takes a minute or two, but many more
// on a busy machine, so Prepare stops what it builds or installs at half
// the timeout; the servers it did not get then skip (or fail) with a
// message that says so. The go build cache keeps what was compiled, so the
// next run goes on from there.
func Prepare() {
	ctx, cancel := prepareContext()
	defer cancel()
	var wg sync.WaitGroup
	for kind, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entryFor(kind).locate(ctx, b)
		}()
	}
	wg.Wait()
}

// prepareContext is bounded by half of the test binary's -test.timeout,
// when it has one.
func prepareContext() (context.Context, context.CancelFunc) {
	if !flag.Parsed() {
		flag.Parse() // as m.Run would; TestMain may parse flags before it
	}
	var timeout time.Duration
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			timeout, _ = g.Get().(time.Duration)
		}
	}
	return timeoutContext(timeout)
}

// timeoutContext is done at half of a test timeout (never for 0), with a
// cause that says what to do.
func timeoutContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	budget := timeout / 2
	return context.WithTimeoutCause(context.Background(), budget,
		fmt.Errorf("not done within %v, half of the test timeout (-timeout %v); the go build cache and the tools cache keep what was done: run the tests again, or with a longer -timeout", budget, timeout))
}

var (
	registryMu sync.Mutex
	registry   = map[string]*entry{}
	bucketSeq  atomic.Int64
)

// Start returns the server of the given kind ("s3", "azure" or "gcs"),
// starting it on first use. One server per kind is shared by all tests of the
// test binary. If the server's binary is missing it skips the test, or fails
// it when OXYFS_REQUIRE names the kind or CI=true. A server that fails to
// start fails the test (and every later Start of that kind).
func Start(t testing.TB, kind string) *Server {
	t.Helper()
	b, e := located(t, kind)
	e.startOnce.Do(func() { e.srv, e.err = startServer(b, e.bin) })
	if e.err != nil {
		t.Fatalf("testservers: %v", e.err)
	}
	return e.srv
}

// Program returns the absolute path of the server program of a kind,
// located (built or installed if need be) as Start does, without starting
// it: for a test that runs the program its own way (versitygw on a
// directory it writes into). It skips or fails as Start does when the
// program cannot be had.
func Program(t testing.TB, kind string) string {
	t.Helper()
	_, e := located(t, kind)
	return e.bin
}

// located is the backend and registry entry of a kind whose program was
// found; a program that cannot be had skips or fails t (skipOrFail ends
// the test), as does an unknown kind.
func located(t testing.TB, kind string) (*backend, *entry) {
	t.Helper()
	b, ok := backends[kind]
	if !ok {
		t.Fatalf("testservers: unknown server kind %q (want one of %s)", kind, strings.Join(kinds(), ", "))
	}
	e := entryFor(kind)
	e.locate(context.Background(), b)
	if e.missing != "" {
		skipOrFail(t, kind, e.missing)
	}
	return b, e
}

func kinds() []string {
	var ks []string
	for k := range backends {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// startServer prepares the directories and environment of a new server and
// starts its process, retrying with another port if the chosen one was taken
// in the meantime.
func startServer(b *backend, bin string) (*Server, error) {
	t0 := time.Now()
	dir, err := b.makeDir()
	if err != nil {
		return nil, fmt.Errorf("create temp dir for %s: %w", b.binary, err)
	}
	s := &Server{Kind: b.kind, backend: b, bin: bin, dir: dir, dataDir: dir + "/data"}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create data dir for %s: %w", b.binary, err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.setPort(port)
		s.Env = b.env(s)
		for k, v := range s.Env {
			if err := os.Setenv(k, v); err != nil {
				os.RemoveAll(dir)
				return nil, fmt.Errorf("set %s: %w", k, err)
			}
		}
		s.mu.Lock()
		err = s.startLocked(time.Now().Add(startTimeout))
		s.mu.Unlock()
		if err == nil {
			s.startTook = time.Since(t0)
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) setPort(port int) {
	s.port = port
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "http://" + s.addr
}

// startLocked starts the process on s.port and waits until it answers HTTP.
// s.mu must be held.
func (s *Server) startLocked(deadline time.Time) error {
	s.starts++
	logPath := fmt.Sprintf("%s/server-%d.log", s.dir, s.starts)
	p, err := spawn(s.bin, s.backend.args(s), s.backend.procEnv(s), s.dataDir, logPath)
	if err != nil {
		return fmt.Errorf("start %s on %s: %w", s.backend.binary, s.addr, err)
	}
	if err := p.waitReady(s.backend.readyURL(s), deadline); err != nil {
		p.kill()
		return fmt.Errorf("start %s on %s: %w\n--- tail of %s ---\n%s", s.backend.binary, s.addr, err, logPath, tail(logPath, 4096))
	}
	s.proc = p
	return nil
}

// StartupTime reports how long the first start of the server took, from
// creating its directories to the first HTTP answer.
func (s *Server) StartupTime() time.Duration { return s.startTook }

// Binary returns the absolute path of the server program that runs.
func (s *Server) Binary() string { return s.bin }

// Addr returns the server's listen address, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.addr }

// Environ returns Env as a sorted list of KEY=VALUE strings, ready to be
// appended to an exec.Cmd's Env.
func (s *Server) Environ() []string {
	var env []string
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// LogTail returns the last n bytes of the current server log, for failure
// messages.
func (s *Server) LogTail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tail(fmt.Sprintf("%s/server-%d.log", s.dir, s.starts), n)
}

// BucketURL returns the blob URL of the bucket or container called name on
// this server. The bucket is not created; see NewBucket.
func (s *Server) BucketURL(name string) string { return s.backend.bucketURL(s, name) }

// NewBucket creates a fresh, empty, uniquely named bucket (container for
// Azure) on the server and returns its blob URL, ready for blob.OpenBucket.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := bucketName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.backend.createBucket(ctx, s, name); err != nil {
		t.Fatalf("testservers: create %s bucket %q on %s: %v\n--- server log tail ---\n%s", s.Kind, name, s.addr, err, s.LogTail(2048))
	}
	return s.BucketURL(name)
}

// Kill stops the server process hard with SIGKILL and waits for it to exit.
// Blob operations fail until Restart. Killing a killed server is a no-op.
//
// Writes acknowledged before Kill is called survive it, as they would with a
// real object store. For "azure" this costs a 6 s wait before the SIGKILL:
// Azurite saves its metadata only every 5 s, so an immediate SIGKILL would
// lose recent writes. The server keeps serving during that wait.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked(t)
}

func (s *Server) killLocked(t testing.TB) {
	t.Helper()
	if s.proc == nil {
		return
	}
	if lag := s.backend.persistLag; lag > 0 {
		time.Sleep(lag)
	}
	if err := s.proc.kill(); err != nil {
		t.Fatalf("testservers: kill %s on %s: %v", s.backend.binary, s.addr, err)
	}
	s.proc = nil
}

// Restart starts the server again on the same port with the same data dir.
// If it is still running it is killed first, as by Kill.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		t.Fatalf("testservers: restart %s after Shutdown", s.Kind)
	}
	s.killLocked(t)
	deadline := time.Now().Add(startTimeout)
	for {
		// The port may still be held briefly by the dying process.
		err := s.startLocked(deadline)
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			t.Fatalf("testservers: restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Main locates the servers' programs ([Prepare]), runs the tests, then stops
// the servers ([Shutdown]), tells the user what was skipped
// ([testdeps.Report]) and exits with m.Run's code. Call it from the TestMain
// of a package that uses this one:
//
//	func TestMain(m *testing.M) { testservers.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is [Main] without the exit, for a TestMain that does more. It calls
// [Prepare] before m.Run.
func Run(m *testing.M) int {
	Prepare()
	code := m.Run()
	Shutdown()
	testdeps.Report()
	return code
}

// Shutdown kills every server started by this test binary and removes their
// temporary directories. Call it from TestMain after m.Run (Main does).
func Shutdown() {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, e := range registry {
		s := e.srv
		if s == nil {
			continue
		}
		s.mu.Lock()
		if s.proc != nil {
			_ = s.proc.kill()
			s.proc = nil
		}
		s.stopped = true
		_ = os.RemoveAll(s.dir)
		s.mu.Unlock()
	}
}

// bucketName derives a unique bucket name valid for S3, Azure and GCS (3-63
// chars of [a-z0-9-], starting and ending alphanumeric, no "--") from a test
// name.
func bucketName(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 30 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" || strings.HasPrefix(slug, "xn-") || strings.HasPrefix(slug, "sthree") {
		slug = "t" + slug
		slug = strings.Trim(slug, "-")
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("%s-%d-%s", slug, bucketSeq.Add(1), hex.EncodeToString(rnd[:]))
}
