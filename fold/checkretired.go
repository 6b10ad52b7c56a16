package fold

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// checkRetired notes retired keys that are gone already, forget records
// that do not parse (readers trust no cached signature while one is
// named), and how many keys are due for deletion.
func checkRetired(ctx context.Context, st *store.Store, sn *store.Snapshot, prog *progress, f *findings) error {
	c := &retiredCheck{ctx: ctx, st: st, sn: sn, prog: prog, f: f, now: st.Clock().NowMs()}
	c.retiredKeys()
	if err := c.lookUp(); err != nil {
		return fmt.Errorf("retired keys: %w", err)
	}
	c.report()
	return nil
}

// retiredCheck is checkRetired as it goes, each field set by the step
// named.
type retiredCheck struct {
	ctx  context.Context
	st   *store.Store
	sn   *store.Snapshot
	prog *progress
	f    *findings
	now  int64            // the store's clock, read once
	last map[string]int64 // retiredKeys: each retired key's latest retirement
	keys []string         // retiredKeys: the retired keys, sorted
	due  int              // retiredKeys: retired lines over an hour old
	// lookUp: per key, whether it is gone, and why a forget record does
	// not parse ("" if it does, or is no forget record). Each worker sets
	// only its own index.
	gone []bool
	bad  []string
}

// retiredKeys takes the retired keys from the snapshot's record, and counts
// the lines due for deletion.
func (c *retiredCheck) retiredKeys() {
	c.last = c.sn.RetiredSet()
	c.keys = make([]string, 0, len(c.last))
	for k := range c.last {
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	for _, r := range c.sn.Retired {
		if format.RetiredOverAnHourAgo(r.RetiredAt, c.now) {
			c.due++
		}
	}
}

// lookUp finds which retired keys are gone: a list by the snapshot's pack
// listing, a forget record by reading it whole (at most 16 MiB: readers
// that cannot parse it trust no cached signature), any other key by a HEAD.
func (c *retiredCheck) lookUp() error {
	listed := make(map[string]bool, len(c.sn.Lists))
	for _, l := range c.sn.Lists {
		listed[l.Name] = true
	}
	keys := c.keys
	c.gone, c.bad = make([]bool, len(keys)), make([]string, len(keys))
	return forEach(c.ctx, len(keys), func(ctx context.Context, i int) error {
		if _, _, isList := format.ParseEntryListName(keys[i]); isList {
			c.gone[i] = !listed[keys[i]]
			return nil
		}
		defer c.prog.report(int64(i+1), int64(len(keys)), "retired")
		if format.IsForgottenName(keys[i]) {
			data, err := c.st.Get(ctx, keys[i])
			switch {
			case errors.Is(err, store.ErrNotFound):
				c.gone[i] = true
			case errors.Is(err, store.ErrTooLarge):
				c.bad[i] = err.Error()
			case err != nil:
				return err
			default:
				if _, err := format.ParseForgottenRecord(keys[i], data); err != nil {
					c.bad[i] = err.Error()
				}
			}
			return nil
		}
		ok, err := c.st.Exists(ctx, keys[i])
		c.gone[i] = !ok
		return err
	})
}

// report notes, each cause once: forget records gone within their hour,
// other retired keys gone, forget records that do not parse, and the lines
// due for deletion.
func (c *retiredCheck) report() {
	f := c.f
	var missing, young []string
	var unparsed, why []string
	for i, k := range c.keys {
		switch {
		case c.gone[i] && format.IsForgottenName(k) && !format.RetiredOverAnHourAgo(c.last[k], c.now):
			young = append(young, k)
		case c.gone[i]:
			missing = append(missing, k)
		case c.bad[i] != "":
			unparsed = append(unparsed, k)
			why = append(why, c.bad[i])
		}
	}
	if len(young) > 0 {
		f.add(f.keyed(Problem{Code: CodeForgetRecordGone, Severity: SeverityNote,
			Message: "forget records retired within the hour are gone (their collection failed before writing them?): until a collection drops their lines after their hour, readers trust no cached signature",
			Fix:     "wait for the hour, then " + f.cmd("gc")}, young))
	}
	if len(missing) > 0 {
		f.add(f.keyed(Problem{Code: CodeRetiredKeyGone, Severity: SeverityNote,
			Message: "retired keys are gone already; the next collection drops their lines",
			Fix:     f.cmd("gc")}, missing))
	}
	if len(unparsed) > 0 {
		f.add(f.keyed(Problem{Code: CodeForgetRecordBad, Severity: SeverityNote, Details: why[:min(len(why), f.max)],
			Message: "forget records that do not parse: readers trust no cached signature while they are named (within their hour), and a collection deletes them after",
			Fix:     "wait for the hour, then " + f.cmd("gc")}, unparsed))
	}
	if c.due > 0 {
		f.add(Problem{Code: CodeRetiredDue, Severity: SeverityNote,
			Message: fmt.Sprintf("%d retired lines are over %v old: the next collection deletes their keys", c.due, format.GracePeriod),
			Fix:     f.cmd("gc")})
	}
}

// heldByRetired returns, of keys (sorted), those a retired list that still
// exists holds, each with the list's name: entries a folded store held and a
// fold then left out although their key exists — a gap, where an older
// writer's key that no list ever held is only waiting. Each retired list is
// streamed once; one that is gone is skipped, one that does not decode is
// skipped (check reports corrupt lists elsewhere), a failed read is an error.
func heldByRetired(ctx context.Context, st *store.Store, sn *store.Snapshot, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	for _, l := range sn.Lists {
		if !l.Retired {
			continue
		}
		data, err := st.Get(ctx, l.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read retired list %s: %w", l.Name, err)
		}
		j := 0
		// A retired list that does not decode proves nothing: its keys read
		// so far count, the rest are only waiting.
		_, _ = format.DecodeEntryList(data, func(key []byte) error {
			for j < len(keys) && keys[j] < string(key) {
				j++
			}
			if j < len(keys) && keys[j] == string(key) {
				if _, ok := out[keys[j]]; !ok {
					out[keys[j]] = l.Name
				}
			}
			return nil
		})
	}
	return out, nil
}
