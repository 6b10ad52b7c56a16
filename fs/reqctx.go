package fs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The context of the store requests a FUSE request makes.
//
// A request that asks the index for what it may have to read from the
// store (a signature's bytes at GETATTR or OPEN, a name's node on a store
// that is not folded) asks under reqCtx: a context done when the kernel
// interrupts the request of a dying caller (FUSE_INTERRUPT: go-fuse
// closes the request's cancel channel, the Done of the context it passes;
// below) or when an unmount cuts short the reads in flight
// (Server.cutReads), whichever comes first.
// The index shares one GET among the readers of a key (index's doc,
// "Shared reads"): a reader whose context is done leaves it, and the GET is
// canceled only once every reader has left, so one reader's interrupt
// fails no other. A request whose context was done answers EINTR
// (errno.go: index.ClassCanceled).
//
// The kernel sends an interrupt for any signal the caller takes while it
// waits, handled or not (fs/fuse/dev.c request_wait_answer), and Go
// programs take SIGURG all the time (preemption), git its progress timer's
// SIGALRM: gcsfuse, which cut a request at each interrupt, failed their
// reads with EINTR ("interrupted system call" in git clone) and came to
// ignore interrupts by default (jacobsa/fuse#122, gcsfuse#1016). So an
// interrupt cuts the request's reads only when its caller is dying
// (callerDying: a fatal signal pending — Ctrl-C on cat, kill): such a
// caller cannot run again before the answer, and used to sit in D state
// until the store's timeout (the kernel waits for an answer to a request
// it sent, even for SIGKILL). A signal the caller handles leaves the read
// to go on, as before; its handler runs once the answer came.

// Cost: reqCtx makes one object, as the context.WithoutCancel it replaces
// did, and nothing else until something asks for Done — which a read
// answered from memory never does; the index's wait for a GET does, and
// then one channel and one goroutine (watch) merge the two causes until
// the request ends (end). An interrupt reads the caller's /proc status
// once. BenchmarkReqCtx measures the first two.

// lifetime is what an unmount cuts short: Done once Server.cutReads ran
// after the request took it (Server.life).
type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newLifetime() *lifetime {
	l := new(lifetime)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// cutReads cancels the store reads of every FUSE request in flight (their
// callers get EINTR), before an unmount and each of its retries: a request
// waiting on a hung store holds the mount busy, and the daemon could not
// exit before the store's timeout. Requests that come after ask under a
// new lifetime, so a mount whose unmount fails serves on.
func (m *Server) cutReads() {
	m.life.Swap(newLifetime()).cancel()
}

// reqContext is the context reqCtx returns; its methods are safe for
// concurrent use. parent gives the values (go-fuse's caller) and the
// interrupt (parent.Done(), nil when there is none).
type reqContext struct {
	parent context.Context
	cancel <-chan struct{} // parent.Done(), taken once
	life   *lifetime       // the lifetime when the request began

	verdict sync.Once // judges an interrupt once: dying
	dying   bool      // written by verdict: the interrupted caller is dying (callerDying)

	mu    sync.Mutex    // guards the following
	done  chan struct{} // made by the first Done; closed when either cause came
	stop  chan struct{} // closed by end: watch returns
	ended bool
}

// reqCtx is the context for the store requests a FUSE request makes under
// ctx (the context go-fuse passes, or viewCtx's): done on the request's
// interrupt or the next cutReads. The caller defers its end.
func (m *Server) reqCtx(ctx context.Context) *reqContext {
	return &reqContext{parent: ctx, cancel: ctx.Done(), life: m.life.Load()}
}

// end releases c once the request is done with it (watch's goroutine, if
// Done started one). A Done asked after end is closed.
func (c *reqContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	if c.stop != nil {
		close(c.stop)
	}
}

func (c *reqContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c *reqContext) Value(key any) any           { return c.parent.Value(key) }

// Done merges the two causes on the first call: the lifetime's channel
// itself when the request has no interrupt, else a channel of its own that
// watch closes.
func (c *reqContext) Done() <-chan struct{} {
	if c.cancel == nil {
		return c.life.ctx.Done()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.ended || c.cause() != nil {
			close(c.done)
		} else {
			c.stop = make(chan struct{})
			go c.watch(c.done, c.stop)
			if hook := testHookReqWaits.Load(); hook != nil {
				(*hook)()
			}
		}
	}
	return c.done
}

// watch closes done when the request's caller is interrupted and dying,
// or the reads are cut, and returns without closing it when the request
// ended first.
func (c *reqContext) watch(done, stop chan struct{}) {
	cancel := c.cancel
	for {
		select {
		case <-cancel:
			if !c.interrupted() {
				cancel = nil // a signal the caller handles: the read goes on
				continue
			}
		case <-c.life.ctx.Done():
		case <-stop:
			return
		}
		close(done)
		return
	}
}

// Err is context.Canceled once Done is closed (or, before anyone asked
// for Done, once either cause came).
func (c *reqContext) Err() error {
	if c.cancel == nil {
		return c.life.ctx.Err()
	}
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return c.cause()
	}
	select {
	case <-done:
		return context.Canceled
	default:
		return nil
	}
}

// cause is context.Canceled when the request's caller was interrupted
// and is dying, or its reads were cut, else nil.
func (c *reqContext) cause() error {
	if c.interrupted() {
		return context.Canceled
	}
	return c.life.ctx.Err()
}

// interrupted reports whether the kernel interrupted the request and its
// caller is dying; judged once, at the first look after the interrupt.
func (c *reqContext) interrupted() bool {
	select {
	case <-c.cancel:
	default:
		return false
	}
	c.verdict.Do(func() {
		c.dying = callerDying(c.parent)
		if hook := testHookInterrupted.Load(); hook != nil {
			(*hook)(c.dying)
		}
	})
	return c.dying
}

var _ context.Context = (*reqContext)(nil)

// testHookReqWaits, when set (tests), runs when a request's context is
// first asked for Done while neither cause has come: the index waits on a
// store read for it (a shared GET's waiter).
var testHookReqWaits atomic.Pointer[func()]

// testHookInterrupted, when set (tests), runs when an interrupted
// request's caller has been judged: dying or not.
var testHookInterrupted atomic.Pointer[func(dying bool)]
