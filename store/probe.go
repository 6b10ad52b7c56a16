package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrConditionsIgnored is wrapped by every write refused because the
// server was found to ignore the conditions compare-and-swap rests on
// (ConditionsVerdict): nothing of the store is written.
var ErrConditionsIgnored = errors.New("the server ignores the conditions of its writes")

// ProbePrefix begins the scratch key a conditions probe writes and
// removes: at the root, outside pack- and every kind's prefix, so no
// reader, fold, gc or check lists it (Presence sees it for the few
// milliseconds it lives). A key left by a probe that was killed holds a
// few bytes and may be deleted.
const ProbePrefix = "oxyfs-conditions-probe-"

// ConditionsVerdict is whether the server honours the conditions of its
// writes, as this process found (Store.ConditionsVerdict): create-only
// (If-None-Match: *, ifGenerationMatch=0) refused over an existing key,
// a replace conditional on a wrong ETag or generation refused and one on
// the right one accepted. Checked is false until the first write asked.
type ConditionsVerdict struct {
	Checked  bool   `json:"checked"`
	Honoured bool   `json:"honoured"`
	How      string `json:"how,omitempty"`   // what was found, or what is missing
	Probe    string `json:"probe,omitempty"` // the scratch key (removed)
	Requests Counts `json:"requests"`        // what the probe sent
	Millis   int64  `json:"ms"`              // how long it took
	Local    bool   `json:"local,omitempty"` // file:// and mem://: a lock, no probe
	At       int64  `json:"at,omitempty"`    // when it was found (Unix ms, this host's clock)
}

// ReprobeAfter is how long a verdict that the server honours conditions
// is kept: the first write after it probes again, so a long-lived process
// (a mount, serve's, a watch) finds a server whose behaviour changed (a
// proxy put in front of it, a failover) within that time instead of never.
// A server that honours conditions while probed and ignores them between
// probes is not found by any probe: `oxyfs check` names the keys whose
// journal lines it lost (docs/reliability.md).
const ReprobeAfter = 10 * time.Minute

// reprobeAfter is ReprobeAfter, which tests shorten.
var reprobeAfter = ReprobeAfter

// verdictCell is the verdict of one store (one bucket URL) in this
// process, shared by every Store opened on it.
type verdictCell struct {
	mu  sync.Mutex        // held across the probe: the first writers wait for it
	v   ConditionsVerdict // guarded by mu
	err error             // guarded by mu: the refusal, when not Honoured
	at  time.Time         // guarded by mu: when v was found (monotonic; ReprobeAfter)
}

// verdicts holds the cells by store URL (redacted, as Store.URL).
var verdicts struct {
	mu sync.Mutex // protects m; a leaf
	m  map[string]*verdictCell
}

// verdictOf is the cell of a store: shared per URL when the URL names one
// (Open), the store's own when wrapped by New (its URL names no bucket).
func verdictOf(url string) *verdictCell {
	if strings.HasSuffix(url, "://") {
		return &verdictCell{}
	}
	verdicts.mu.Lock()
	defer verdicts.mu.Unlock()
	if verdicts.m == nil {
		verdicts.m = map[string]*verdictCell{}
	}
	c := verdicts.m[url]
	if c == nil {
		c = &verdictCell{}
		verdicts.m[url] = c
	}
	return c
}

// ConditionsVerdict is what this process found of the server's
// conditions (the zero value before the first write).
func (s *Store) ConditionsVerdict() ConditionsVerdict {
	if s.cond == nil {
		return ConditionsVerdict{Checked: true, Honoured: true, Local: true, How: "compare-and-swap under a lock held by this host (" + s.drv.name() + ")"}
	}
	s.cond.mu.Lock()
	defer s.cond.mu.Unlock()
	return s.cond.v
}

// writable is asked before every write: nil once the server was found to
// honour conditions (probed once per process and store, and again by the
// first write ReprobeAfter later; a probe that
// failed, say on a network error, is not kept and is tried again by the
// next write), the refusal wrapping ErrConditionsIgnored when it does not.
func (s *Store) writable(ctx context.Context) error {
	if s.cond == nil {
		return nil
	}
	c := s.cond
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v.Checked && (c.err != nil || time.Since(c.at) < reprobeAfter) {
		return c.err
	}
	v, err := s.probeConditions(ctx)
	if err != nil {
		return fmt.Errorf("store %s: check that the server honours conditional writes: %w", s.url, err)
	}
	c.at = time.Now()
	v.At = c.at.UnixMilli()
	c.v = v
	if !v.Honoured {
		c.err = fmt.Errorf("store %s: %s (probe key %s): refusing to write, nothing was written: %w", s.url, v.How, v.Probe, ErrConditionsIgnored)
	}
	return c.err
}

// probeConditions writes a scratch key (ProbePrefix + 16 hex) and asks
// the server the three questions compare-and-swap rests on, then removes
// the key and confirms it is gone: create-only over it (must be refused),
// a replace on a wrong token (must be refused), a replace on its token
// (must land, and read back). Cost: 4 PUTs, 2 GETs, the DELETE (S3: and
// its HEAD) and a HEAD, once per process and store.
func (s *Store) probeConditions(ctx context.Context) (v ConditionsVerdict, err error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	key := ProbePrefix + hex.EncodeToString(rnd[:])
	v.Probe = key
	ctx = context.WithValue(ctx, probing{}, true) // counted in probeN, not in Counts
	before, began := s.probeN.snapshot(), time.Now()
	created := false
	defer func() {
		if created {
			if derr := s.removeProbe(ctx, key); derr != nil && err == nil {
				err = derr
			}
		}
		v.Requests, v.Millis = s.probeN.snapshot().Sub(before), time.Since(began).Milliseconds()
	}()
	create, replace := s.drv.conditionNames()
	// Removed whatever the create answers: a create whose answer was lost,
	// or whose confirmation failed, may have landed (a delete of a key
	// that is not there is not an error).
	created = true
	if err := s.drv.createOnly(ctx, key, []byte("probe 1")); err != nil {
		return v, fmt.Errorf("create probe key %s: %w", key, err)
	}
	_, tok, err := s.readWithToken(ctx, key, nil)
	if err != nil {
		return v, fmt.Errorf("read probe key %s: %w", key, err)
	}
	v.Checked = true
	switch err := s.drv.createOnly(ctx, key, []byte("probe 2")); {
	case err == nil:
		v.How = "the server ignored " + create + " on a create-only write"
		return v, nil
	case !errors.Is(err, ErrConflict):
		return v, fmt.Errorf("create-only write over probe key %s: %w", key, err)
	}
	switch err := s.drv.replaceIfUnchanged(ctx, key, []byte("probe 3"), s.drv.wrongToken(tok)); {
	case err == nil:
		v.How = "the server ignored " + replace + " on a write conditional on a wrong version"
		return v, nil
	case !errors.Is(err, ErrConflict):
		return v, fmt.Errorf("conditional write on a wrong version of probe key %s: %w", key, err)
	}
	switch err := s.drv.replaceIfUnchanged(ctx, key, []byte("probe 4"), tok); {
	case errors.Is(err, ErrConflict):
		v.How = "the server refused a write conditional on " + replace + " of the version it holds"
		return v, nil
	case err != nil:
		return v, fmt.Errorf("conditional write on the version of probe key %s: %w", key, err)
	}
	data, _, err := s.readWithToken(ctx, key, nil)
	switch {
	case err != nil:
		return v, fmt.Errorf("read probe key %s: %w", key, err)
	case string(data) != "probe 4":
		v.How = fmt.Sprintf("a conditional write the server accepted is not what it holds (%q)", data)
		return v, nil
	}
	v.Honoured = true
	v.How = "the server refused " + create + " over an existing key and " + replace + " on a wrong version, and took " + replace + " on the right one"
	return v, nil
}

// probing marks the context of the probe's requests: attempt counts them
// in Store.probeN, so Counts stays what the caller's operations sent.
type probing struct{}

// removeProbe deletes the probe key and confirms it is gone.
func (s *Store) removeProbe(ctx context.Context, key string) error {
	err := s.sendOnce(ctx, nil, func(ctx context.Context) error {
		err := s.drv.mapErr(s.bucket.Delete(ctx, key))
		s.probeN.add(s.drv.deleteRequests(errors.Is(err, ErrNotFound)))
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("remove probe key %s: %w", key, err)
	}
	ok, err := s.Exists(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("remove probe key %s: confirm it is gone: %w", key, err)
	case ok:
		return fmt.Errorf("remove probe key %s: still there after its delete", key)
	}
	return nil
}

// wrongToken is a token no version of a key has: for ETags a quoted MD5
// of nothing any key holds.
func etagWrongToken(tok string) string {
	if tok == `"00000000000000000000000000000001"` {
		return `"00000000000000000000000000000002"`
	}
	return `"00000000000000000000000000000001"`
}

// generationWrongToken is another generation than tok.
func generationWrongToken(tok string) string {
	g, _ := strconv.ParseInt(tok, 10, 64)
	return strconv.FormatInt(g+1_000_003, 10)
}
