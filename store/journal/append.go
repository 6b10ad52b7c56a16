package journal

import (
	"bytes"
	"context"
	"fmt"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// AppendResult says what one journal append did.
type AppendResult struct {
	Tries        int    // compare-and-swap attempts of the append itself
	Dropped      int    // folded lines older than format.GracePeriod that the update dropped
	PartialList  string // name of the partial list written, "" if none
	PartialLines int    // lines the partial fold marked
	// Before and After are store.RecordSum of the journal as the update
	// that landed read it and as it wrote it (0 when nothing was written).
	// A reader whose journal read summed to Before and now sums to After
	// knows that this append, and nothing else, changed it in between
	// (index: own lines). A partial fold after it changes the journal
	// again, so a reader then sees neither sum.
	Before, After uint64
}

// Append adds one journal line per key in ONE compare-and-swap update of
// pack-entries (spec §13.7 "The journal"), retried up to store.MaxCASTries.
// The same update drops folded lines older than format.GracePeriod. If the
// update leaves more than format.PartialFoldThreshold unfolded lines, Append
// then folds them into a partial list and marks them (Partial).
//
// A writer calls Append after the keys' own objects were written; the index
// calls it once with every key waiting to be journaled (a write batch, §13.4).
// Every key must be a valid entry key (format.ParseKey); otherwise Append
// writes nothing and says which key is wrong. A key given twice in one call
// gets one line. No keys: nothing is sent.
//
// When the journal update landed but the partial fold after it failed, Append
// returns the result and an error wrapping ErrPartialFold: the lines are in
// the journal, and the next update retries the fold.
func Append(ctx context.Context, st *store.Store, keys []string) (AppendResult, error) {
	return AppendThreshold(ctx, st, keys, format.PartialFoldThreshold)
}

// AppendThreshold is Append with the partial-fold threshold as a parameter,
// so that a test reaches partial folds with a handful of lines. Every other
// caller calls Append, which passes format.PartialFoldThreshold.
func AppendThreshold(ctx context.Context, st *store.Store, keys []string, threshold int) (AppendResult, error) {
	var res AppendResult
	if err := CheckLayout(st); err != nil {
		return res, fmt.Errorf("append to journal: %w", err)
	}
	add := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if _, err := format.ParseKey(k); err != nil {
			return res, fmt.Errorf("append %q to journal: %w", k, err)
		}
		if !seen[k] {
			seen[k] = true
			add = append(add, k)
		}
	}
	if len(add) == 0 {
		return res, nil
	}
	var written []byte
	var unfoldedN int
	var before uint64
	up, err := st.UpdateRecord(ctx, format.JournalKey, func(old []byte, _ bool) ([]byte, error) {
		written, res.Dropped, unfoldedN = appendJournal(old, add, st.Clock().NowMs())
		before = store.RecordSum(old) // the last call's is the update that landed
		return written, nil
	})
	res.Tries = up.Tries
	if err != nil {
		res.Dropped = 0
		return res, fmt.Errorf("append %d keys to journal: %w", len(add), err)
	}
	res.Before, res.After = before, store.RecordSum(written)
	if unfoldedN <= threshold {
		return res, nil
	}
	lines, _ := format.ParseJournal(written)
	if unfolded(lines) <= threshold {
		return res, nil // lines that do not parse counted above
	}
	p, err := partialFrom(ctx, st, lines)
	res.PartialList, res.PartialLines = p.List, p.Marked
	if err != nil {
		return res, fmt.Errorf("append %d keys to journal: %w: %w", len(add), ErrPartialFold, err)
	}
	return res, nil
}

// appendJournal is the journal update of an append: every line of old kept
// as it is, but blank lines and folded lines past their hour
// (format.JournalLineExpired), and a line "0 <key>" added for each key. It
// reads only the folded-at field of a line (format.LineTime), not its key:
// an update of a journal of n lines costs a copy of n lines, not n key
// parses (which made appends to a journal of 10,000 lines spend most of
// their CPU validating keys they keep unchanged). A line that does not
// parse is never dropped, as in a fold's rewrite: a line past its hour by
// the field is dropped only if the whole line parses. It returns the
// record, the lines dropped, and the unfolded lines, counting lines whose
// key may not parse.
func appendJournal(old []byte, add []string, now int64) (out []byte, dropped, unfoldedN int) {
	n := len(old) + 1
	for _, k := range add {
		n += len(k) + 3
	}
	out = make([]byte, 0, n)
	for text := range bytes.Lines(old) {
		l := bytes.TrimSuffix(text, []byte("\n"))
		if len(l) == 0 {
			continue // a blank line carries nothing
		}
		if ms, ok := format.LineTime(l); ok {
			if ms == 0 {
				unfoldedN++
			} else if format.JournalLineExpired(ms, now) {
				if _, err := format.ParseJournalLine(string(l)); err == nil {
					dropped++
					continue
				}
			}
		}
		out = append(append(out, l...), '\n')
	}
	for _, k := range add {
		out = format.AppendLine(out, 0, k)
	}
	return out, dropped, unfoldedN + len(add)
}
