package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// Fault modes.
const (
	modeFail      = "fail"        // a final error (a 4xx the store does not retry), from the Nth matching request on
	modeFailOnce  = "fail-once"   // a final error on the Nth matching request only
	modeLost      = "lost"        // a PUT that landed but whose answer was lost
	mode5xxOnce   = "503-once"    // one 503: the store retries a read and it succeeds
	mode5xxAlways = "503-persist" // 503 from the Nth matching request on: reads give up (unavailable)
)

// fault is one injected failure: requests of kind op whose key (a
// listing's prefix) starts with prefix are counted, and the nth of them
// (and, in the persistent modes, every one after) fails. Keys, not a global
// request count, pick the victim, so that requests a goroutine pool sends in
// any order still fail the same way for a seed.
type fault struct {
	op     blobtest.Op
	prefix string
	nth    int
	mode   string
}

func (f fault) String() string {
	return fmt.Sprintf("%s %s %q #%d", f.mode, f.op, f.prefix, f.nth)
}

// errInjected is the final error a fault returns; err503 the retryable one.
var errInjected = errors.New("sim: injected fault")

type err503 struct{}

func (err503) Error() string       { return "sim: injected 503 Service Unavailable" }
func (err503) HTTPStatusCode() int { return 503 }

// injector sits in the blobtest hooks of the faulty store: it arms one fault
// per operation, counts what fired, and watches for a DELETE sent after a
// read or listing failed for good.
type injector struct {
	mu        sync.Mutex
	f         *fault
	seen      int
	fired     int
	readLost  bool     // a read or listing failed for good during this operation
	badDelete []string // DELETEs sent after readLost
	deletes   int
	// deleted are the keys this operation sent a DELETE of. A HEAD of
	// one is the deletion's confirmation (adr-0055 D6), which no later
	// DELETE depends on: its failure fails the collection, but a DELETE
	// of another key already under way (its own plan read whole) is not
	// one sent after a read it needed failed.
	deleted map[string]bool
	// gate: a key whose background GETs (read-ahead's, the concurrent
	// reader's) hold the bytes they found until it opens (opSlowRead).
	// Guarded by mu.
	gate *gate
	// slow: the concurrent reader's slow reads' GETs (concheld.go).
	slow slowFlights
	// written: every key a PUT or DELETE was sent for, through either
	// store under the faults (the operations', the handle's and so the
	// mount's), since the checks last took them (takeWritten). Nothing
	// else writes the bucket, so a key not named here is as the checks
	// last saw it (check.go "Cadence"). Guarded by mu.
	written map[string]bool
	// hurry, when closed, ends the wait of the concurrent reader's own
	// late bodies (lateBody): the operations' goroutine waits for that
	// reader (afterOp), so nothing else can happen before they land.
	// Guarded by mu, as hurried (hurry is closed).
	hurry   chan struct{}
	hurried bool
	// lateOf, per key, ends the wait of every late body of that key made
	// since (hurryKey): a check's read that joined one waits for it, and
	// nothing else happens meanwhile. Guarded by mu.
	lateOf map[string]chan struct{}
}

// lateChan is the channel the late bodies of key made now wait on.
func (in *injector) lateChan(key string) chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.lateOf == nil {
		in.lateOf = map[string]chan struct{}{}
	}
	c := in.lateOf[key]
	if c == nil {
		c = make(chan struct{})
		in.lateOf[key] = c
	}
	return c
}

// hurryKey lets the late bodies of key in flight land at once.
func (in *injector) hurryKey(key string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c := in.lateOf[key]; c != nil {
		close(c)
		delete(in.lateOf, key)
	}
}

// noteWrite records a PUT or DELETE of key (a Before hook).
func (in *injector) noteWrite(op blobtest.Op, key string) {
	if op != blobtest.OpPut && op != blobtest.OpDelete {
		return
	}
	in.mu.Lock()
	if in.written == nil {
		in.written = map[string]bool{}
	}
	in.written[key] = true
	in.mu.Unlock()
}

// takeWritten returns the keys written since the last call, and forgets them.
func (in *injector) takeWritten() map[string]bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	w := in.written
	in.written = map[string]bool{}
	return w
}

// hurryChan is the channel the reader's late bodies made now wait on
// (closed while hurried).
func (in *injector) hurryChan() chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.hurry == nil {
		in.hurry = make(chan struct{})
	}
	return in.hurry
}

// hurryReader(true) lets the concurrent reader's late bodies in flight, and
// those it starts until hurryReader(false), land at once.
func (in *injector) hurryReader(on bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case on && !in.hurried:
		if in.hurry == nil {
			in.hurry = make(chan struct{})
		}
		close(in.hurry)
		in.hurried = true
	case !on && in.hurried:
		in.hurry, in.hurried = nil, false
	}
}

// gate holds back the background GETs of one key.
type gate struct {
	key     string
	open    chan struct{} // closed: the bodies give their bytes
	started chan struct{} // closed by the first GET held
	once    sync.Once
}

func (in *injector) hooks() blobtest.Hooks {
	return blobtest.Hooks{Before: in.before, AfterPut: in.afterPut}
}

func (in *injector) arm(f *fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.f, in.seen, in.fired, in.readLost, in.badDelete, in.deletes = f, 0, 0, false, nil, 0
	in.deleted = map[string]bool{}
}

// disarm ends the operation and says what happened in it.
func (in *injector) disarm() (fired int, badDelete []string, deletes int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	fired, badDelete, deletes = in.fired, in.badDelete, in.deletes
	in.f, in.seen, in.fired, in.readLost, in.badDelete, in.deletes = nil, 0, 0, false, nil, 0
	return
}

func (in *injector) match(op blobtest.Op, key string) (hit bool, mode string) {
	f := in.f
	if f == nil || f.op != op || !strings.HasPrefix(key, f.prefix) {
		return false, ""
	}
	in.seen++
	switch f.mode {
	case modeFail, mode5xxAlways:
		hit = in.seen >= f.nth
	default:
		hit = in.seen == f.nth
	}
	return hit, f.mode
}

// handleHooks are the long-lived handle's: its requests count toward the
// armed fault and meet it, but a read of its that fails for good is not one
// the operation needed (the handle never deletes). Read-ahead's GETs, which
// run beside whatever operation follows, neither meet nor spend its fault:
// a once-only fault a background GET took would leave the operation clean
// but counted faulty, its checks relaxed; nor do the concurrent reader's
// (concurrent.go). A share of read-ahead's and the concurrent reader's GETs
// of signatures (lateReadAheadPercent) hold the bytes they found back for
// up to lateReadAheadMax: they land after the operations that follow, a
// re-sign and a refresh among them, as a slow server's would, and a read
// that begins after the refresh must not be given them (the stale flight).
func (in *injector) handleHooks() blobtest.Hooks {
	return blobtest.Hooks{
		Before: func(ctx context.Context, op blobtest.Op, key string) error {
			in.noteWrite(op, key)
			if index.IsReadAhead(ctx) || isConcReader(ctx) {
				return nil // beside the operation, not of it: its fault is not theirs to meet or spend
			}
			return in.request(op, key, false)
		},
		AfterPut: in.afterPut,
		Body: func(ctx context.Context, key string, body io.Reader) io.Reader {
			bg := index.IsReadAhead(ctx) || isConcReader(ctx)
			in.mu.Lock()
			g := in.gate
			in.mu.Unlock()
			if isConcReader(ctx) && strings.HasPrefix(key, format.KindSig.Prefix()) {
				if r := in.slow.body(ctx, key, body); r != nil {
					return r
				}
			}
			if bg && g != nil && g.key == key {
				g.once.Do(func() { close(g.started) })
				return &gatedBody{ctx: ctx, r: body, open: g.open}
			}
			if !(index.IsReadAhead(ctx) || isConcReader(ctx)) || !strings.HasPrefix(key, format.KindSig.Prefix()) || rand.IntN(100) >= lateReadAheadPercent {
				return body
			}
			lb := &lateBody{ctx: ctx, r: body, wait: time.Duration(1 + rand.Int64N(int64(lateReadAheadMax))), hurryKey: in.lateChan(key)}
			if slow, _ := ctx.Value(slowKey{}).(bool); isConcReader(ctx) && !slow && !index.IsReadAhead(ctx) {
				lb.hurry = in.hurryChan()
			}
			return lb
		},
	}
}

// Late read-ahead (handleHooks). The draws are not the run's: read-ahead's
// timing is not the seed's either (Config.ReadAhead).
const (
	lateReadAheadPercent = 30
	lateReadAheadMax     = 30 * time.Millisecond
)

// lateBody gives its bytes (those the GET found) only after wait, or an
// error once ctx is done (read-ahead closed).
type lateBody struct {
	ctx  context.Context
	r    io.Reader
	wait time.Duration // 0 once waited
	// hurry, closed, ends the wait (the concurrent reader's own GETs:
	// injector.hurry); nil for read-ahead's. hurryKey, closed, ends it
	// too (injector.hurryKey).
	hurry, hurryKey chan struct{}
}

func (b *lateBody) Read(p []byte) (int, error) {
	if b.wait > 0 {
		t := time.NewTimer(b.wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.hurry:
		case <-b.hurryKey:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
		b.wait = 0
	}
	return b.r.Read(p)
}

// gatedBody gives its bytes (those the GET found) once open is closed, or
// an error once ctx is done.
type gatedBody struct {
	ctx  context.Context
	r    io.Reader
	open chan struct{}
}

func (b *gatedBody) Read(p []byte) (int, error) {
	select {
	case <-b.open:
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	return b.r.Read(p)
}

func (in *injector) before(_ context.Context, op blobtest.Op, key string) error {
	in.noteWrite(op, key)
	return in.request(op, key, true)
}

// request counts one request toward the armed fault and fails it if it is
// the one; the operation's own (ops) failed reads are remembered.
func (in *injector) request(op blobtest.Op, key string, ops bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if op == blobtest.OpDelete {
		in.deletes++
		if in.readLost {
			in.badDelete = append(in.badDelete, key)
		}
		if in.deleted != nil {
			in.deleted[key] = true
		}
	}
	if in.f != nil && in.f.mode == modeLost {
		return nil
	}
	hit, mode := in.match(op, key)
	if !hit {
		return nil
	}
	in.fired++
	read := ops && (op == blobtest.OpGet || op == blobtest.OpHead || op == blobtest.OpList)
	if op == blobtest.OpHead && in.deleted[key] {
		read = false // a deletion's confirmation (see deleted)
	}
	switch mode {
	case modeFail, modeFailOnce:
		if read {
			in.readLost = true
		}
		return fmt.Errorf("%w: %s %s", errInjected, op, key)
	case mode5xxAlways:
		if read && in.seen >= in.f.nth+2 { // the store's last try (MaxReadTries = 3)
			in.readLost = true
		}
		return err503{}
	}
	return err503{}
}

func (in *injector) afterPut(key string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil || in.f.mode != modeLost {
		return nil
	}
	if hit, _ := in.match(blobtest.OpPut, key); hit {
		in.fired++
		return fmt.Errorf("%w: response lost after PUT %s landed", errInjected, key)
	}
	return nil
}

// randomFault draws a fault for the next operation: what kind of request,
// which keys, which occurrence, which failure.
func randomFault(rng *rand.Rand) *fault {
	ops := []blobtest.Op{blobtest.OpList, blobtest.OpList, blobtest.OpGet, blobtest.OpGet, blobtest.OpHead,
		blobtest.OpPut, blobtest.OpPut, blobtest.OpPut, blobtest.OpDelete}
	f := &fault{op: ops[rng.IntN(len(ops))], nth: 1 + rng.IntN(3)}
	var prefixes []string
	sig, seal := format.KindSig.Prefix(), format.KindSeal.Prefix()
	switch f.op {
	case blobtest.OpList:
		prefixes = []string{"", "pack-", sig, seal, format.KindReceipt.Prefix(), sig + "aa/", "cd"}
	case blobtest.OpGet:
		prefixes = []string{"", "pack-entries", "pack-retired", "pack-", sig}
	case blobtest.OpHead:
		prefixes = []string{"", format.LegacyLists()[format.KindSig].Prefix, "pack-legacy"}
	case blobtest.OpPut:
		prefixes = []string{"", "pack-entries", "pack-retired", "pack-", sig, seal, "pack-legacy-folded"}
	case blobtest.OpDelete:
		prefixes = []string{"", "pack-", sig, seal}
	}
	f.prefix = prefixes[rng.IntN(len(prefixes))]
	switch r := rng.IntN(100); {
	case f.op == blobtest.OpPut && r < 35:
		f.mode = modeLost
	case r < 45:
		f.mode = modeFailOnce
	case r < 96:
		f.mode = modeFail
	case r < 98:
		f.mode = mode5xxOnce
	default:
		f.mode = mode5xxAlways
	}
	return f
}
