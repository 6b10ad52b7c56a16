package main

import (
	"bufio"
	"net"
	"testing"
)

// The loopback exchange is a whole request and a whole response each
// round trip: the server answers each request once, with the response's
// exact bytes, and a connection carries several in turn.
func TestLoopbackRoundTripsAreWholeExchanges(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	requests := make(chan int, 8)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			n := 0
			for {
				l, err := r.ReadSlice('\n')
				if err != nil {
					close(requests)
					return
				}
				n += len(l)
				if len(l) <= 2 {
					break
				}
			}
			requests <- n
			if _, err := c.Write(loopbackResponse); err != nil {
				return
			}
		}
	}()
	if err := loopbackConn(ln.Addr().String(), 3); err != nil {
		t.Fatal(err)
	}
	var got []int
	for n := range requests {
		got = append(got, n)
	}
	if len(got) != 3 || got[0] != len(loopbackRequest) || got[2] != len(loopbackRequest) {
		t.Fatalf("the server read requests of %v bytes, want 3 of %d", got, len(loopbackRequest))
	}
	if len(loopbackResponse) < 600 || string(loopbackResponse[:12]) != "HTTP/1.1 200" {
		t.Fatalf("the response is %d bytes starting %q; want a 200 with a signature's 600 bytes", len(loopbackResponse), loopbackResponse[:12])
	}
}
