package store

// The HTTP client of the S3, GCS and Azure drivers: what a server answers
// is bounded, and no request follows a redirect to another host.
//
//	error bodies   a non-2xx answer's body is read to at most
//	               maxErrorBody (the SDKs buffer error bodies whole, and
//	               their error keeps the status either way)
//	LIST pages     a LIST answer's body past maxListPage fails the
//	               listing (ErrTooLarge): the SDKs decode a page whole
//	redirects      followed only to the same scheme and host (host:port);
//	               another host, another port or plain http from https is
//	               refused (errRedirectRefused), so no credential goes
//	               with it: the SDKs' transports sign or add a bearer
//	               token to every request they send, redirected ones
//	               included, and net/http forwards Authorization to
//	               another port of the same host

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxErrorBody is how much of an error answer's body is read: an
// error's code and message, never a body a server pads.
const maxErrorBody = 4 << 10

// maxListPage bounds one LIST answer's body: a page of 1000 keys of 1 KiB
// names is under 2 MiB in every backend's format.
const maxListPage = 16 << 20

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

// guardedClient is the HTTP client of a driver: next's transport with
// the answers bounded (isList tells a LIST request), redirects checked.
func guardedClient(next http.RoundTripper, isList func(*http.Request) bool) *http.Client {
	return &http.Client{Transport: &boundedTransport{next: next, isList: isList}, CheckRedirect: checkRedirect}
}

// boundedTransport bounds the bodies of error answers and LIST pages.
type boundedTransport struct {
	next   http.RoundTripper
	isList func(*http.Request) bool
}

func (t *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		resp.Body = &cappedBody{rc: resp.Body, left: maxErrorBody}
		resp.ContentLength = -1
	case t.isList != nil && t.isList(r):
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
