package fs

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv names the file a child process (this test binary re-run) maps:
// a mapping of the mount is read in a process that does not serve it. A
// page fault on a mapping of the test's own mount is served by the test's
// own FUSE server, and a goroutine in such a fault cannot stop for the
// garbage collector while the server waits for it (testkit/mapcopy).
const childEnv = "OXYFS_FS_TEST_CHILD"

// childPrivateEnv set makes the child's mapping MAP_PRIVATE.
const childPrivateEnv = "OXYFS_FS_TEST_CHILD_PRIVATE"

// childMain maps the file named by childEnv with mmap(MAP_SHARED,
// PROT_READ) of the size fstat reports — Python's mmap.mmap(fd, 0,
// access=ACCESS_READ) does just that — and prints "mapped SIZE" (or
// "error: …"); then, for every line on its standard input, it writes the
// mapping out: 8 bytes of length and the bytes, straight from the mapping
// through write(2). It exits at the end of its input.
func childMain() int {
	p := os.Getenv(childEnv)
	fail := func(err error) int {
		fmt.Printf("error: %v\n", err)
		return 0
	}
	fd, err := os.Open(p)
	if err != nil {
		return fail(err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return fail(err)
	}
	var m []byte // an empty file cannot be mapped: it shows nothing
	if fi.Size() > 0 {
		if m, err = mapFile(fd, fi.Size()); err != nil {
			return fail(fmt.Errorf("%s: %w", p, err))
		}
		defer syscall.Munmap(m)
	}
	fmt.Printf("mapped %d\n", len(m))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(m)))
		if _, err := os.Stdout.Write(n[:]); err != nil {
			return 1
		}
		if _, err := os.Stdout.Write(m); err != nil {
			return 1
		}
	}
	return 0
}

// mapFile maps size bytes of fd read-only, shared or (childPrivateEnv)
// private.
func mapFile(fd *os.File, size int64) ([]byte, error) {
	flags, what := syscall.MAP_SHARED, "MAP_SHARED"
	if os.Getenv(childPrivateEnv) != "" {
		flags, what = syscall.MAP_PRIVATE, "MAP_PRIVATE"
	}
	m, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", what, err)
	}
	return m, nil
}

// sharedMap is a child process holding a shared mapping of a file.
type sharedMap struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	// closed: the child was ended (close runs once)
	closed bool
}

// mapShared starts a child that maps p with MAP_SHARED; err is the
// mapping's failure (ENODEV with direct I/O and no
// FUSE_DIRECT_IO_ALLOW_MMAP). The child ends at cleanup.
func mapShared(t *testing.T, p string) (*sharedMap, error) {
	t.Helper()
	return mapIn(t, p, false)
}

// mapIn starts a child that maps p, MAP_PRIVATE if private, else
// MAP_SHARED.
func mapIn(t *testing.T, p string, private bool) (*sharedMap, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+p)
	if private {
		cmd.Env = append(cmd.Env, childPrivateEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the mapping child: %v", err)
	}
	s := &sharedMap{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(s.close)
	line, err := s.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the mapping child of %s: %v", p, err)
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return nil, fmt.Errorf("%s", msg)
	}
	if n, ok := strings.CutPrefix(line, "mapped "); !ok {
		t.Fatalf("the mapping child of %s said %q", p, line)
	} else if _, err := strconv.Atoi(n); err != nil {
		t.Fatalf("the mapping child of %s said %q", p, line)
	}
	return s, nil
}

// read is what the mapping shows now, whole.
func (s *sharedMap) read() []byte {
	s.t.Helper()
	if _, err := io.WriteString(s.in, "read\n"); err != nil {
		s.t.Fatalf("ask the mapping child: %v", err)
	}
	var n [8]byte
	if _, err := io.ReadFull(s.out, n[:]); err != nil {
		s.t.Fatalf("the mapping child's length: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint64(n[:]))
	if _, err := io.ReadFull(s.out, b); err != nil {
		s.t.Fatalf("the mapping child's bytes: %v", err)
	}
	return b
}

func (s *sharedMap) close() {
	if s.closed {
		return
	}
	s.closed = true
	s.in.Close()
	done := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		s.t.Errorf("the mapping child did not exit 30 s after its input closed")
	}
}

// dupCloexec duplicates f's descriptor close-on-exec: a plain dup(2) is
// inherited by every mapping child started while it is open, and the
// child then holds a mount busy (testkit/sim met it).
func dupCloexec(f *os.File) (int, error) {
	return unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
}
