package store

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
)

// pageServer answers every request with a LIST page of n bytes, with its
// Content-Length when known is true.
type pageServer struct {
	n     int
	known bool
}

func (s pageServer) RoundTrip(r *http.Request) (*http.Response, error) {
	cl := int64(-1)
	if s.known {
		cl = int64(s.n)
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", s.n))), ContentLength: cl, Request: r}, nil
}

func listRequest(t *testing.T, ctx context.Context) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/bucket?list-type=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestListBodiesShareOneBudget: LIST answers being read hold their
// Content-Length (maxListPage when unknown) of one budget; a LIST past it
// waits until a body ends or is closed, and its context ends the wait.
func TestListBodiesShareOneBudget(t *testing.T) {
	isList := func(*http.Request) (string, bool) { return "", true }
	budget := int64(maxListPage + 1000)
	tr := &boundedTransport{next: pageServer{n: 1000, known: true}, list: isList, bodies: semaphore.NewWeighted(budget), bodyCap: budget}
	chunked := &boundedTransport{next: pageServer{n: 10}, list: isList, bodies: tr.bodies, bodyCap: budget}

	first, err := tr.RoundTrip(listRequest(t, t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	// A page of unknown length takes maxListPage: with 1000 bytes held,
	// exactly that fits.
	second, err := chunked.RoundTrip(listRequest(t, t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	// The budget is full: a third LIST waits, and its context ends the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := tr.RoundTrip(listRequest(t, ctx)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a LIST past the budget: %v, want it to wait until its context ends", err)
	}
	// Reading the first body to its end gives its share back.
	done := make(chan error, 1)
	go func() {
		third, err := tr.RoundTrip(listRequest(t, t.Context()))
		if err == nil {
			third.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a LIST past the budget did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := io.ReadAll(first.Body); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the LIST that waited: %v", err)
	}
	first.Body.Close() // closing after the end gives nothing back twice
	second.Body.Close()
	if !tr.bodies.TryAcquire(budget) {
		t.Fatal("the whole budget is not back once every body ended or closed")
	}
}

// TestListBudgetLeavesOtherRequestsAlone: GETs and error answers take no
// share.
func TestListBudgetLeavesOtherRequestsAlone(t *testing.T) {
	notList := func(*http.Request) (string, bool) { return "", false }
	tr := &boundedTransport{next: pageServer{n: 100, known: true}, list: notList, bodies: semaphore.NewWeighted(1), bodyCap: 1}
	for range 3 {
		resp, err := tr.RoundTrip(listRequest(t, t.Context()))
		if err != nil {
			t.Fatalf("a GET with the LIST budget at 1 byte: %v", err)
		}
		defer resp.Body.Close()
	}
}
