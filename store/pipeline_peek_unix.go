//go:build linux || darwin

package store

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// idleAlive reports whether nc, taken from the pool, can carry a request:
// nothing arrived on it while it was idle. A server may answer an idle
// keep-alive connection unasked (a 408 before it closes it) or close it
// (EOF); either, read after the next request, would be taken for its
// answer. A non-blocking MSG_PEEK of one byte on the socket (under TLS,
// the TCP connection's: any record there is unasked too); a connection
// that is not a socket (a test's pipe) is taken as alive.
func idleAlive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	cerr := rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			// EAGAIN: nothing to read, the connection is quiet. A byte,
			// EOF (no error) or any other error: not reusable.
			alive = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
			return true // done: never wait for readability
		}
	})
	return cerr == nil && alive
}
