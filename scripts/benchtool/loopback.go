package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// loopback measures this machine's floor for one GET of a signature: the
// client CPU of a request and its response over loopback TCP with nothing
// but the Go runtime's netpoller (no net/http, no signing), against a
// server in another process (benchtool loopback-serve) that answers each
// request with a response of a signature's size. It runs n round trips
// for each number of connections in conns, each connection a goroutine
// sending its requests one after another: JSON of the client's CPU and
// wall per round trip. The mount's cold read of a signature costs its
// FUSE requests (a warm `cat`, about the floor's) and one GET; what a GET
// costs over this figure is the HTTP client's and ours.
func loopback(n int, conns []int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "loopback-serve")
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start loopback-serve: %w", err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read loopback-serve's address: %w", err)
	}
	addr = strings.TrimSpace(addr)
	res := map[string]float64{}
	for _, c := range conns {
		cpu, wall, err := loopbackRun(addr, n, c)
		if err != nil {
			return err
		}
		res["client_cpu_us_conns_"+strconv.Itoa(c)] = cpu
		res["wall_us_conns_"+strconv.Itoa(c)] = wall
	}
	return printJSON(res)
}

// loopbackRequest is a signed S3 GET of a signature as oxyfs sends one.
var loopbackRequest = []byte("GET /bucket/sig/ab/cdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789/signer HTTP/1.1\r\n" +
	"Host: 127.0.0.1\r\nX-Amz-Date: 20261207T180000Z\r\n" +
	"X-Amz-Content-Sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n" +
	"Authorization: AWS4-HMAC-SHA256 Credential=k/20261207/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, " +
	"Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n\r\n")

// loopbackResponse is a response of a signature's size (600 bytes).
var loopbackResponse = func() []byte {
	h := "HTTP/1.1 200 OK\r\nContent-Length: 600\r\nETag: \"0123456789abcdef0123456789abcdef\"\r\n" +
		"Last-Modified: Mon, 07 Dec 2026 18:00:00 GMT\r\n\r\n"
	return append([]byte(h), make([]byte, 600)...)
}()

func loopbackRun(addr string, n, conns int) (cpuUS, wallUS float64, err error) {
	per := n / conns
	c0, t0 := processCPU(), time.Now()
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = loopbackConn(addr, per)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	total := float64(per * conns)
	return float64((processCPU() - c0).Microseconds()) / total, float64(time.Since(t0).Microseconds()) / total, nil
}

func loopbackConn(addr string, n int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 4096)
	for range n {
		if _, err := c.Write(loopbackRequest); err != nil {
			return fmt.Errorf("write a request: %w", err)
		}
		if _, err := io.ReadFull(c, buf[:len(loopbackResponse)]); err != nil {
			return fmt.Errorf("read a response: %w", err)
		}
	}
	return nil
}

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopbackServe listens on a free loopback port, prints its address, and
// answers every request (the lines up to an empty one) with
// loopbackResponse, until killed.
func loopbackServe() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				for {
					l, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(l) <= 2 {
						break
					}
				}
				if _, err := c.Write(loopbackResponse); err != nil {
					return
				}
			}
		}()
	}
}
