package mapcopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaybeChild runs the child's loop and exits, when this process is a
// mapcopy child (childEnv set); else it returns at once. Call it first
// thing in main, or in a test package's TestMain.
func MaybeChild() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	os.Exit(childMain())
}

// childMain serves requests on childFD until the socket ends: each is
// 9 bytes (the kind, 's' or 'p', and the size) with the file's
// descriptor; the answer is the mapping's copy or the failure.
func childMain() int {
	sock := os.NewFile(childFD, "mapcopy-socket")
	scratch, err := os.CreateTemp("", "oxyfs-mapcopy-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "mapcopy child: %v\n", err)
		return 1
	}
	os.Remove(scratch.Name())
	defer scratch.Close()
	if _, err := sock.Write([]byte(ready)); err != nil {
		return 1
	}
	for {
		fd, kind, size, err := readRequest(sock)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "mapcopy child: %v\n", err)
			return 1
		}
		out, err := mapAndCopy(fd, kind, size, scratch)
		syscall.Close(fd)
		if err := writeReply(sock, out, err); err != nil {
			return 1
		}
	}
}

// readRequest reads one request and the descriptor that came with it.
func readRequest(sock *os.File) (fd int, kind byte, size int, err error) {
	var req [9]byte
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := syscall.Recvmsg(int(sock.Fd()), req[:], oob, 0)
	if err != nil {
		return -1, 0, 0, fmt.Errorf("receive a request: %w", err)
	}
	if n == 0 {
		return -1, 0, 0, io.EOF
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, 0, 0, fmt.Errorf("a request without one descriptor (%d messages): %w", len(msgs), err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, 0, 0, fmt.Errorf("a request without one descriptor (%d): %w", len(fds), err)
	}
	if n < len(req) {
		if _, err := io.ReadFull(sock, req[n:]); err != nil {
			syscall.Close(fds[0])
			return -1, 0, 0, fmt.Errorf("a request cut short: %w", err)
		}
	}
	return fds[0], req[0], int(binary.BigEndian.Uint64(req[1:])), nil
}

// mapAndCopy maps size bytes of fd and copies them out through scratch.
func mapAndCopy(fd int, kind byte, size int, scratch *os.File) ([]byte, error) {
	flags, what := syscall.MAP_PRIVATE, "MAP_PRIVATE"
	if kind == 's' {
		flags, what = syscall.MAP_SHARED, "MAP_SHARED"
	}
	if size <= 0 || size > maxCopy {
		return nil, fmt.Errorf("mmap %s of %d bytes: %w", what, size, syscall.EINVAL)
	}
	m, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", what, err)
	}
	defer syscall.Munmap(m)
	return out(scratch, m)
}

// writeReply answers a request with its copy or its failure.
func writeReply(w io.Writer, data []byte, failure error) error {
	var head [9]byte
	if failure == nil {
		head[0] = 'o'
		binary.BigEndian.PutUint64(head[1:], uint64(len(data)))
		if _, err := w.Write(head[:]); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
	var errno syscall.Errno
	errors.As(failure, &errno)
	head[0] = 'e'
	binary.BigEndian.PutUint64(head[1:], uint64(errno))
	msg := failure.Error()
	var ml [8]byte
	binary.BigEndian.PutUint64(ml[:], uint64(len(msg)))
	if _, err := w.Write(append(append(head[:], ml[:]...), msg...)); err != nil {
		return err
	}
	return nil
}

// out copies m through scratch (emptied first): the faults on m are
// taken inside write(2), so a mapping cut short is an error, not SIGBUS.
func out(scratch *os.File, m []byte) ([]byte, error) {
	if err := scratch.Truncate(0); err != nil {
		return nil, fmt.Errorf("copy a mapping: empty %s: %w", scratch.Name(), err)
	}
	if _, err := scratch.WriteAt(m, 0); err != nil {
		return nil, fmt.Errorf("copy a mapping: write %s: %w", scratch.Name(), err)
	}
	buf := make([]byte, len(m))
	if _, err := scratch.ReadAt(buf, 0); err != nil {
		return nil, fmt.Errorf("copy a mapping: read %s: %w", scratch.Name(), err)
	}
	return buf, nil
}
