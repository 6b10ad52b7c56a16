package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// Cadence (doc.go "Checks"): a full check lists the bucket, reads the
// records and opens a fresh index; in between, the checks read only what
// an operation can have changed. Every PUT and DELETE reaches the bucket
// through the fault injector's hooks (injector.written), and nothing else
// writes it, so a key no request named is as the last check saw it.
const fullCheckEvery = 8

// isFullCheck reports whether this operation's check is a full one: every
// fullCheckEvery operations, the run's last, and after a fault fired.
func (s *sim) isFullCheck() bool {
	return s.op%fullCheckEvery == 0 || s.op >= s.cfg.Ops || s.opFired > 0
}

// checkTime adds the time since *t to the check's part name (Result.OpTime
// "check/<name>") and restarts *t.
func (s *sim) checkTime(name string, t *time.Time) {
	now := time.Now()
	s.res.OpTime["check/"+name] += now.Sub(*t)
	*t = now
}

// isEntryKey reports whether key is under one of the six kinds' prefixes.
func isEntryKey(key string) bool {
	for _, kind := range format.Kinds {
		if strings.HasPrefix(key, kind.Prefix()) {
			return true
		}
	}
	return false
}

// checkEntryKeys lists the per-object keys in the bucket: exactly the
// model's E.
func (s *sim) checkEntryKeys() {
	var entryKeys []string
	for _, kind := range format.Kinds {
		ks, err := s.listInner(kind.Prefix())
		if err != nil {
			s.violate("observe", "%v", err)
			return
		}
		entryKeys = append(entryKeys, ks...)
	}
	if missing, extra := diff(setOf(slices.Collect(maps.Keys(s.m.e))), setOf(entryKeys)); len(missing)+len(extra) > 0 {
		s.violate("entry-keys", "per-object keys in the store differ from the model: %s", describeDiff(missing, extra))
	}
	s.lastE = setOf(slices.Collect(maps.Keys(s.m.e)))
}

// checkEntryKeysOf holds the bucket to E on the keys that can differ since
// the last check: those a request wrote or deleted, and those the model
// added or dropped (a HEAD of each).
func (s *sim) checkEntryKeysOf(written []string) {
	keys := setOf(written)
	for k := range s.m.e {
		if !s.lastE[k] {
			keys[k] = true
		}
	}
	for k := range s.lastE {
		if s.m.e[k] == nil {
			keys[k] = true
		}
	}
	var missing, extra []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ok, err := s.inner.Exists(s.ctx, k)
		if err != nil {
			s.violate("observe", "exists %q: %v", k, err)
			return
		}
		switch {
		case ok && s.m.e[k] == nil:
			extra = append(extra, k)
		case !ok && s.m.e[k] != nil:
			missing = append(missing, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		s.violate("entry-keys", "per-object keys in the store differ from the model: %s", describeDiff(missing, extra))
	}
	s.lastE = setOf(slices.Collect(maps.Keys(s.m.e)))
}

// observeSnapshot is observe from a snapshot just read: its journal and
// retired record, and (list) the entry lists listed in the bucket itself,
// else those the last observation saw.
func (s *sim) observeSnapshot(sn *store.Snapshot, list bool) (observed, error) {
	o := observed{now: s.clk.NowMs(), journal: map[string]*jcount{}, retired: map[string]int64{}, lists: s.obs.lists}
	if sn.JournalBad.Count > 0 {
		return o, fmt.Errorf("journal has %d lines that do not parse: %w", sn.JournalBad.Count, sn.JournalBad.First[0])
	}
	for _, l := range sn.Journal {
		c := o.journal[l.Key]
		if c == nil {
			c = &jcount{folded: map[int64]int{}}
			o.journal[l.Key] = c
		}
		if l.FoldedAt == 0 {
			c.unfolded++
		} else {
			c.folded[l.FoldedAt]++
		}
	}
	for _, r := range sn.Retired {
		if at, ok := o.retired[r.Key]; !ok || r.RetiredAt > at {
			o.retired[r.Key] = r.RetiredAt
		}
	}
	if !list {
		return o, nil
	}
	names, err := s.listInner(format.PackPrefix)
	if err != nil {
		return o, err
	}
	o.lists = map[string]bool{}
	for _, n := range names {
		if _, _, ok := format.ParseEntryListName(n); ok {
			o.lists[n] = true
		}
	}
	return o, nil
}

// freshDraws draws what checkFresh draws, when it is not run: a seed's
// operations stay those it drew before the cadence (its repro lines hold).
func (s *sim) freshDraws() {
	for range 4 {
		s.randomKey()
	}
	s.existingKey()
}
