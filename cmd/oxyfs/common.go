package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// commonFlags are taken by every command.
type commonFlags struct {
	layout  string
	stats   bool
	json    bool
	timeout time.Duration
	maxReqs int
	depth   int  // --pipeline-depth
	create  bool // --create, where a command takes it (presence.go)

	mu     sync.Mutex
	stores []*store.Store // opened stores, for --stats
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.layout, "layout", "auto", "store layout: bucket (journal and entry lists), directory (a repository's .oxy/objects) or auto (directory for file://, else bucket)")
	fs.BoolVar(&c.stats, "stats", false, "print request counts by kind on stderr at exit (and compare-and-swap tries and retried reads, when there were any)")
	fs.DurationVar(&c.timeout, "timeout", store.DefaultRequestTimeout, "give up on one request to the store after this long (a read is tried up to 3 times)")
	fs.IntVar(&c.maxReqs, "max-requests", store.DefaultMaxRequests, "most requests in flight to the store at once, over everything the command does (read-ahead included)")
	fs.IntVar(&c.depth, "pipeline-depth", store.DefaultPipelineDepth, "read-ahead's GETs one connection carries written ahead of their answers (HTTP/1.1 pipelining, S3/GCS/Azure); halved by itself when a server drops them; 1: none pipelined")
}

func (c *commonFlags) registerJSON(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// printStats prints one line per opened store, exactly
// "requests: list=1 get=4 head=0 put=0 delete=0", summed over the stores.
func (c *commonFlags) printStats(w io.Writer) {
	if !c.stats {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum store.Counts
	var cas store.CASStats
	var retries int64
	for _, s := range c.stores {
		n := s.Counts()
		sum.List += n.List
		sum.Get += n.Get
		sum.Head += n.Head
		sum.Put += n.Put
		sum.Delete += n.Delete
		cs := s.CASStats()
		cas.Updates += cs.Updates
		cas.Tries += cs.Tries
		cas.MaxTries = max(cas.MaxTries, cs.MaxTries)
		retries += s.Retries()
	}
	if cas.Updates > 0 || retries > 0 {
		fmt.Fprintf(w, "cas: updates=%d tries=%d max-tries=%d retried-reads=%d\n", cas.Updates, cas.Tries, cas.MaxTries, retries)
	}
	fmt.Fprintln(w, sum.String())
}

// parse parses flags and checks the number of positional arguments.
// A misspelled flag gets the nearest one suggested (suggestFlag). When
// only the flags are wanted (declareFlags) it stops the command here.
func (e *env) parse(args []string, min, max int) ([]string, error) {
	if e.declaring {
		return nil, errDeclared
	}
	if err := e.flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v%s", err, suggestFlag(err, e.flags))
	}
	pos := e.flags.Args()
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		if min == max {
			return nil, usagef("want %d argument(s), got %d", min, len(pos))
		}
		return nil, usagef("want %d to %d arguments, got %d", min, max, len(pos))
	}
	return pos, nil
}

// openStore opens STORE with the common flags.
func (e *env) openStore(ctx context.Context, url string, opts store.Options) (*store.Store, error) {
	layout, err := store.ParseLayout(e.common.layout)
	if err != nil {
		return nil, usagef("%v", err)
	}
	opts.Layout = layout
	if e.common.timeout <= 0 {
		return nil, usagef("--timeout must be positive")
	}
	opts.RequestTimeout = e.common.timeout
	if e.common.maxReqs <= 0 {
		return nil, usagef("--max-requests must be positive")
	}
	opts.MaxRequests = e.common.maxReqs
	if e.common.depth <= 0 {
		return nil, usagef("--pipeline-depth must be positive")
	}
	opts.PipelineDepth = e.common.depth
	if e.common.create {
		opts.Create = true
	}
	s, err := store.Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if e.common.create && layout == store.LayoutAuto && s.Layout() == store.LayoutDirectory {
		if s, err = startAsBucket(ctx, s, url, opts); err != nil {
			return nil, err
		}
	}
	e.common.mu.Lock()
	e.common.stores = append(e.common.stores, s)
	e.common.mu.Unlock()
	return s, nil
}

// printJSON prints v as indented JSON, with what a terminal would act on
// escaped (termsafe.JSON).
func (e *env) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = e.rawStdout.Write(append(termsafe.JSON(b), '\n'))
	return err
}

// progress draws a one-line progress bar on a terminal and stays quiet in a pipe.
type progress struct {
	w     io.Writer
	on    bool
	label string
	last  time.Time
	began time.Time
}

func (e *env) newProgress(label string) *progress {
	return &progress{w: e.rawStderr, on: isTerminal(e.rawStderr), label: label, began: time.Now()}
}

// update shows done of total (total <= 0: unknown) at most 10 times a second.
func (p *progress) update(done, total int64, phase string) {
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	if total > 0 {
		const width = 30
		n := int(done * width / max(total, 1))
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if i < n {
				bar[i] = '#'
			}
		}
		fmt.Fprintf(p.w, "\r%s %s [%s] %d/%d %.0fs ", p.label, phase, bar, done, total, time.Since(p.began).Seconds())
	} else {
		fmt.Fprintf(p.w, "\r%s %s %d %.0fs ", p.label, phase, done, time.Since(p.began).Seconds())
	}
}

func (p *progress) done() {
	if p.on && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// startAsBucket starts a new store at an empty file:// location that the
// automatic layout took for the directory layout (no journal, no list):
// --create starts a store with an empty journal (requireStore), and a
// journal makes the location a bucket-layout store for every later open.
// Were the journal written after this open, its handle would go on in the
// directory layout — writes landing as keys without their journal lines,
// which every reader of the folded store misses — so the journal is
// written first (one LIST, one PUT if absent) and the store opened again.
// A location that holds anything, or a read-only handle, is left as it is.
func startAsBucket(ctx context.Context, s *store.Store, url string, opts store.Options) (*store.Store, error) {
	p, err := s.Presence(ctx)
	if err != nil || !p.Empty {
		return s, nil //nolint:nilerr // requireStore looks again and says what is there, or why it cannot
	}
	err = s.PutIfAbsent(ctx, format.JournalKey, nil)
	switch {
	case errors.Is(err, store.ErrReadOnly):
		return s, nil // shown empty, left as it is
	case err != nil && !errors.Is(err, store.ErrConflict):
		s.Close()
		return nil, fmt.Errorf("start a new store at %s: %w", s.URL(), err)
	}
	s.Close()
	s, err = store.Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if s.Layout() != store.LayoutBucket {
		s.Close()
		return nil, fmt.Errorf("start a new store at %s: its journal was written, but it opens in the %s layout", url, s.Layout())
	}
	return s, nil
}
