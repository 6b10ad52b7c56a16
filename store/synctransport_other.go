//go:build !unix

package store

import "net"

// idleAlive is true where the transport cannot look at an idle socket
// (synctransport_unix.go): a connection the server closed is then found
// stale when the request is sent, and retried.
func idleAlive(net.Conn) bool { return true }
