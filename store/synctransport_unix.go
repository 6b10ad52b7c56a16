//go:build unix

package store

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// idleAlive reports whether an idle connection may be reused: the server
// sent nothing on it while it was idle — no byte (an unasked answer such
// as a 408, or a TLS alert) and no end (it closed it). One recv with
// MSG_PEEK|MSG_DONTWAIT on its socket: EAGAIN says nothing is there.
// net/http's read loop notices such bytes as they come; this transport
// has no loop, so it looks when it takes the connection. A connection it
// cannot look at (not a socket) is taken as alive.
func idleAlive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	alive := true
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK || rerr == unix.EINTR: //nolint:errorlint // raw errnos
			// nothing sent: alive
		case rerr != nil, n >= 0:
			alive = false // an error, a byte, or the end (n == 0)
		}
		return true // done: never wait for the socket to become readable
	})
	return alive && err == nil
}
