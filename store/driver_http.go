package store

// The HTTP client of the S3, GCS and Azure drivers: what a server answers
// is bounded, and no request follows a redirect to another host.
//
//	error bodies   a non-2xx answer's body is read to at most
//	               maxErrorBody (the SDKs buffer error bodies whole, and
//	               their error keeps the status either way)
//	LIST pages     a LIST answer's body past maxListPage fails the
//	               listing (ErrTooLarge): the SDKs decode a page whole
//	LIST bodies    all LIST answers being read at once hold at most
//	               maxListBodies between them (listBudget): each takes
//	               its Content-Length, or maxListPage when the server
//	               does not say, before its body is read, and gives it
//	               back at its end; a LIST waits for room (its context
//	               ends the wait). 16 MiB × --max-requests was 4 GiB
//	LIST requests  one ListPage sends at most maxPageRequests LISTs, none
//	               with a continuation it sent before: gocloud's ListPage
//	               (and the GCS client's pager) fill a page from as many
//	               server pages as it takes, so a server whose pages are
//	               empty but say "more", or repeat their continuation,
//	               would keep one call asking forever (ErrBadListing)
//	Date           every answer's Date header is a sample of the store's
//	               clock (storeclock.go), with the local monotonic
//	               instants the request was sent and the answer arrived
//	redirects      followed only to the same scheme and host (host:port);
//	               another host, another port or plain http from https is
//	               refused (errRedirectRefused), so no credential goes
//	               with it: the SDKs' transports sign or add a bearer
//	               token to every request they send, redirected ones
//	               included, and net/http forwards Authorization to
//	               another port of the same host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// maxErrorBody is how much of an error answer's body is read: an
// error's code and message, never a body a server pads.
const maxErrorBody = 4 << 10

// maxListPage bounds one LIST answer's body: a page of 1000 keys of 1 KiB
// names is under 2 MiB in every backend's format.
const maxListPage = 16 << 20

// maxListBodies bounds the LIST answers' bodies being read at once by one
// client: 16 pages at their cap, hundreds of ordinary ones (a page of 1000
// keys is 0.2–0.4 MB of XML). Listings beyond that depth gain nothing: a
// server lists no faster from 8 prefixes at a time than from 4
// (docs/performance.md, "Round trips on this machine").
const maxListBodies = 256 << 20

// errRedirectRefused is the error of a redirect the client did not follow.
var errRedirectRefused = errors.New("redirect refused")

// checkRedirect follows a redirect only to the origin (scheme and
// host:port) of the first request; errors otherwise name both.
func checkRedirect(r *http.Request, via []*http.Request) error {
	first := via[0].URL
	if r.URL.Host != first.Host || r.URL.Scheme != first.Scheme {
		return fmt.Errorf("%w: %s://%s sent it to %s://%s (another host, or plain http; no credential follows a redirect)",
			errRedirectRefused, first.Scheme, first.Host, r.URL.Scheme, r.URL.Host)
	}
	if len(via) >= 10 {
		return fmt.Errorf("%w: stopped after 10 redirects", errRedirectRefused)
	}
	return nil
}

// maxPageRequests bounds the LIST requests of one ListPage: a server
// that answers fewer keys than asked for more than maxEmptyRun times in a
// row to fill one page is treated as listcheck.go treats empty pages.
const maxPageRequests = maxEmptyRun + 1

// listToken tells a LIST request and the continuation it carries ("" on
// the first page).
type listToken func(r *http.Request) (token string, isList bool)

// guardedClient is the HTTP client of a driver: next's transport with
// the answers bounded and the LISTs of one page checked (list tells a
// LIST request), redirects checked, and every answer's Date handed to
// dates (nil: not measured).
func guardedClient(next http.RoundTripper, list listToken, dates *storeClock) *http.Client {
	t := &boundedTransport{next: next, list: list, dates: dates, bodies: semaphore.NewWeighted(maxListBodies), bodyCap: maxListBodies}
	return &http.Client{Transport: t, CheckRedirect: checkRedirect}
}

// pageGuard follows the LIST requests of one ListPage attempt; the store
// puts one in the attempt's context (withPageGuard).
type pageGuard struct {
	mu     sync.Mutex          // protects the following; a leaf
	sent   int                 // guarded by mu
	tokens map[string]struct{} // guarded by mu
}

type pageGuardKey struct{}

// withPageGuard is ctx with a fresh pageGuard, for one ListPage attempt.
func withPageGuard(ctx context.Context) context.Context {
	return context.WithValue(ctx, pageGuardKey{}, &pageGuard{tokens: map[string]struct{}{}})
}

// send checks one more LIST request carrying token.
func (g *pageGuard) send(token string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sent++
	if g.sent > maxPageRequests {
		return fmt.Errorf("%w: %d LIST requests for one page: the server's pages come back empty or short but say there is more", ErrBadListing, maxPageRequests)
	}
	if token == "" {
		return nil
	}
	if _, seen := g.tokens[token]; seen {
		return fmt.Errorf("%w: the server gave the same continuation twice while one page was filled: the listing would never end", ErrBadListing)
	}
	g.tokens[token] = struct{}{}
	return nil
}

// boundedTransport bounds the bodies of error answers and LIST pages, and
// the LIST requests of one page; it hands every answer's Date to dates.
type boundedTransport struct {
	next  http.RoundTripper
	list  listToken
	dates *storeClock // nil: Dates not measured
	// bodies is the LIST bodies' budget (maxListBodies, bodyCap bytes):
	// a LIST answer holds its share from before its body is read until
	// the body ends or is closed (listBody). It locks itself.
	bodies  *semaphore.Weighted
	bodyCap int64
}

func (t *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	token, isList := "", false
	if t.list != nil {
		token, isList = t.list(r)
	}
	if g, ok := r.Context().Value(pageGuardKey{}).(*pageGuard); ok && isList {
		if err := g.send(token); err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, err
		}
	}
	sent := time.Now()
	resp, err := t.next.RoundTrip(r)
	if isList && err == nil && resp.Body != nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 && resp.ContentLength <= maxListPage {
		share := resp.ContentLength
		if share < 0 {
			share = maxListPage // the server does not say: the most it may send
		}
		if err := t.bodies.Acquire(r.Context(), share); err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("wait for room to read a LIST page (%d MiB of LIST pages being read): %w", t.bodyCap>>20, err)
		}
		resp.Body = &listBody{ReadCloser: resp.Body, release: func() { t.bodies.Release(share) }}
	}
	if err == nil {
		noteWriteAnswer(r, resp) // confirm.go
	}
	if resp != nil && t.dates != nil {
		t.dates.observeDate(resp.Header, sent, time.Now())
	}
	if err != nil || resp.Body == nil {
		return resp, err
	}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		resp.Body = &cappedBody{rc: resp.Body, left: maxErrorBody}
		resp.ContentLength = -1
	case isList:
		if resp.ContentLength > maxListPage {
			resp.Body.Close()
			return nil, listPageTooLarge(resp.ContentLength)
		}
		resp.Body = &cappedBody{rc: resp.Body, left: maxListPage, fail: true}
	}
	return resp, nil
}

func listPageTooLarge(n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: a LIST page over %d MiB", ErrTooLarge, maxListPage>>20)
	}
	return fmt.Errorf("%w: a LIST page of %d bytes (over %d MiB)", ErrTooLarge, n, maxListPage>>20)
}

// cappedBody reads at most left bytes of rc: then EOF (an error body cut
// short), or with fail an error wrapping ErrTooLarge.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	fail bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if !b.fail {
			return 0, io.EOF
		}
		// One byte more says whether the page ends here.
		var one [1]byte
		if n, err := io.ReadFull(b.rc, one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, listPageTooLarge(-1)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// listBody gives its share of the LIST bodies' budget back once: at the
// end of the body (EOF or an error) or when it is closed, whichever comes
// first.
type listBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *listBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.release)
	}
	return n, err
}

func (b *listBody) Close() error {
	b.once.Do(b.release)
	return b.ReadCloser.Close()
}
