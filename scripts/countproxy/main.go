// Command countproxy is the wire counter of scripts/bench: a reverse proxy
// in front of an S3 server that counts every request by S3 operation and can
// add a fixed delay to each, so that clients of the same bucket (oxyfs,
// rclone mount, s3fs) are compared on what they actually send.
//
//	countproxy -listen 127.0.0.1:9100 -target http://127.0.0.1:9000 [-control 127.0.0.1:9101] [-delay 20ms]
//
// Requests are classified on the server side of the wire, from the method
// and the URL (path-style and virtual-host-style both work):
//
//	LIST    GET of a bucket (no key): ListObjects, ListObjectsV2, with or without prefix/delimiter
//	GET     GET of an object
//	HEAD    HEAD of an object or a bucket
//	PUT     PUT of an object, or the completion of a multipart upload (one
//	        object written either way; the journal's own are also counted
//	        as JOURNAL_PUT)
//	DELETE  DELETE of an object
//	MULTIPART  the other requests of a multipart upload (initiate, parts):
//	        an SDK sends a body past its buffer (5-8 MiB) that way
//	OTHER   anything else (bucket creation, other POSTs)
//
// UPSTREAM_DROPPED counts requests whose server connection failed; the
// client's connection is then dropped as the server dropped it.
//
// The control address serves:
//
//	GET  /counts            {"LIST":n,"GET":n,...} since the last reset
//	POST /reset             zero the counts
//	POST /delay?ms=20       delay every request by 20 ms from now on (before it is forwarded)
//
// The delay is on the wire (delayconn.go): every byte a client sends
// reaches the proxy the delay after it arrived, so a client that sends
// requests one after another sees it on every one, a client that sends
// them in parallel sees it once per wave, and one that pipelines them on
// a connection once per batch, as with a real round trip. -delay-model
// request sleeps it inside each request instead, as the proxy first did
// (a connection's pipelined requests then see it one after another).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// journalKey is the store's journal (DESIGN §3): its PUTs are journal updates.
const journalKey = "pack-entries"

var kinds = []string{"LIST", "GET", "HEAD", "PUT", "DELETE", "MULTIPART", "OTHER", "JOURNAL_PUT", "UPSTREAM_DROPPED"}

type counters struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *counters) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(kinds))
	for _, k := range kinds {
		out[k] = c.n[k]
	}
	return out
}

func (c *counters) reset() {
	c.mu.Lock()
	c.n = map[string]int64{}
	c.mu.Unlock()
}

// classify names the S3 operation of a request. The bucket is the first
// path segment (path style) unless the host names it (virtual-host style:
// bucket.host:port), so the key is what follows.
func classify(r *http.Request, hostBase string) (kind, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	virtual := hostBase != "" && strings.HasSuffix(hostOnly(r.Host), "."+hostBase)
	if !virtual {
		if i := strings.IndexByte(p, '/'); i >= 0 {
			key = p[i+1:]
		} else {
			key = ""
		}
	} else {
		key = p
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		if key == "" {
			if q.Has("uploads") || q.Has("location") || q.Has("versioning") || q.Has("acl") || q.Has("policy") {
				return "OTHER", key
			}
			return "LIST", key
		}
		if q.Has("uploadId") || q.Has("acl") || q.Has("tagging") {
			return "OTHER", key
		}
		return "GET", key
	case http.MethodHead:
		return "HEAD", key
	case http.MethodPost:
		switch {
		case key != "" && q.Has("uploads"):
			return "MULTIPART", key
		case key != "" && q.Has("uploadId"):
			return "PUT", key // CompleteMultipartUpload: the object is written
		}
		return "OTHER", key
	case http.MethodPut:
		if key != "" && q.Has("uploadId") {
			return "MULTIPART", key
		}
		if key == "" || q.Has("acl") || q.Has("tagging") {
			return "OTHER", key
		}
		return "PUT", key
	case http.MethodDelete:
		if key != "" && q.Has("uploadId") {
			return "MULTIPART", key // AbortMultipartUpload
		}
		if key == "" {
			return "OTHER", key
		}
		return "DELETE", key
	}
	return "OTHER", key
}

func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve the proxy on")
	control := flag.String("control", "", "address to serve /counts, /reset and /delay on (default: none)")
	target := flag.String("target", "", "the S3 server, e.g. http://127.0.0.1:9000")
	delay := flag.Duration("delay", 0, "delay added to every request")
	model := flag.String("delay-model", "wire", "where the delay is added: wire (to the bytes a client sends, as a link's latency) or request (slept inside each request)")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "countproxy: -target must be an http URL")
		os.Exit(2)
	}
	var d atomic.Int64
	d.Store(int64(*delay))
	c := &counters{n: map[string]int64{}}

	rp := &httputil.ReverseProxy{
		// The Host header is kept as the client sent it: the signature of
		// an S3 request covers it.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
	}
	rp.Transport = &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	rp.ErrorLog = log.New(os.Stderr, "countproxy: ", 0)
	// When the server drops a connection (versitygw answers a conditional
	// PUT that fails, 412, before reading its body, and closes: the body
	// still in flight gets a reset), the client must see what it would see
	// without the proxy, a dropped connection, not a 502 the server never
	// sent: its retry rules differ. So the client's connection is dropped
	// too, and the event counted (UPSTREAM_DROPPED).
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		c.add("UPSTREAM_DROPPED")
		log.Printf("countproxy: %s %s: %v (client connection dropped)", r.Method, r.URL.Path, err)
		panic(http.ErrAbortHandler)
	}
	hostBase := hostOnly(*listen)
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, key := classify(r, hostBase)
		c.add(kind)
		if kind == "PUT" && (key == journalKey || strings.HasSuffix(key, "/"+journalKey)) {
			c.add("JOURNAL_PUT")
		}
		if dl := time.Duration(d.Load()); dl > 0 && *model == "request" {
			time.Sleep(dl)
		}
		rp.ServeHTTP(w, r)
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("countproxy: %v", err)
	}
	fmt.Printf("countproxy: listening on %s, forwarding to %s\n", ln.Addr(), u)
	switch *model {
	case "wire":
		ln = &delayListener{Listener: ln, d: &d}
	case "request":
	default:
		fmt.Fprintln(os.Stderr, "countproxy: -delay-model must be wire or request")
		os.Exit(2)
	}
	go func() { log.Fatal(http.Serve(ln, proxy)) }()

	if *control != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/counts", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(c.snapshot())
		})
		mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
			c.reset()
			fmt.Fprintln(w, "ok")
		})
		mux.HandleFunc("/delay", func(w http.ResponseWriter, r *http.Request) {
			ms, err := strconv.ParseFloat(r.URL.Query().Get("ms"), 64)
			if err != nil || ms < 0 {
				http.Error(w, "want ?ms=N", http.StatusBadRequest)
				return
			}
			d.Store(int64(ms * float64(time.Millisecond)))
			fmt.Fprintln(w, "ok")
		})
		cl, err := net.Listen("tcp", *control)
		if err != nil {
			log.Fatalf("countproxy: control: %v", err)
		}
		fmt.Printf("countproxy: control on %s\n", cl.Addr())
		go func() { log.Fatal(http.Serve(cl, mux)) }()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	json.NewEncoder(os.Stderr).Encode(c.snapshot())
}
