package fs

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestReqCtxCutAndEnd: a request's context is done by cutReads (the
// lifetime it took), not a later request's; a context ended before its
// Done is asked is done; an interrupt of a caller that is not dying (this
// process) leaves it running.
func TestReqCtxCutAndEnd(t *testing.T) {
	m := newMount(t.TempDir(), nil, Options{})
	cancel := make(chan struct{})
	rc := m.reqCtx(&fuse.Context{Caller: fuse.Caller{Pid: uint32(os.Getpid())}, Cancel: cancel})
	defer rc.end()
	if err := rc.Err(); err != nil {
		t.Fatalf("a fresh request's Err: %v", err)
	}
	judged := make(chan bool, 1)
	fn := func(dying bool) {
		select {
		case judged <- dying:
		default: // a test's hook never blocks a request
		}
	}
	testHookInterrupted.Store(&fn)
	defer testHookInterrupted.Store(nil)
	done := rc.Done()
	close(cancel) // the kernel's interrupt, this process not dying
	select {
	case dying := <-judged:
		if dying {
			t.Fatal("this process judged dying")
		}
	case <-time.After(time.Minute):
		t.Fatal("the interrupt was never judged")
	}
	if err := rc.Err(); err != nil {
		t.Fatalf("Err after a living caller's interrupt: %v", err)
	}
	m.cutReads()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Done not closed by cutReads")
	}
	if err := rc.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err after cutReads: %v", err)
	}
	later := m.reqCtx(context.Background()) // no interrupt: Done is the lifetime's
	defer later.end()
	if later.Err() != nil || isClosed(later.Done()) {
		t.Error("a request after cutReads is done")
	}
	ended := m.reqCtx(&fuse.Context{Cancel: make(chan struct{})})
	ended.end()
	ended.end() // twice: nothing
	if !isClosed(ended.Done()) {
		t.Error("Done asked after end is not closed")
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
