package fold

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"slices"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// What check finds of writes that failed and took what was acknowledged
// with them (issue 36): a write that failed may leave a key of 0 bytes, or
// a journal cut or emptied, and the entries whose lines it held are then
// missing from every reader of a folded store. The proofs come from the
// format (spec §13.7):
//
//   - A signature is never empty: a 0-byte signature key is a write that
//     failed (emptySigs, from the listing's sizes).
//   - Every journal line ends in "\n" (format.AppendLine): a journal that
//     does not was cut in the middle of a line.
//   - A fold marks the lines it folded and they stay an hour: a partial
//     list (journal.Partial) is written before it marks the unfolded lines
//     it folded out, so the journal holds a line of each of its keys until
//     an update an hour after the marking drops it. A journal last updated
//     less than that after a partial list was written (both times from one
//     listing of the pack prefix, so one clock; ClockMargin spares writers
//     in flight and the list's own write) lacks no line of its keys whose
//     key still exists (a collection that forgets an object deletes its key
//     with its lines). One it lacks was lost.
//   - An unfolded line is never dropped but with its key (a forgotten
//     object): so on a folded store a per-object key that no live list or
//     line names either was never journaled (an older writer, or a put that
//     failed after writing its key) or lost its line. Time tells them apart
//     where it can (unnamedCause).

// packTimes are the modification times (wall ms, 0: none given) of the
// journal and of every entry list, from one listing of the pack prefix.
type packTimes struct {
	journal      int64
	journalThere bool
	marker       int64 // format.LegacyFoldedMarker's, 0 if not listed
	lists        map[string]int64
}

// readPackTimes lists the pack prefix for the times of the journal and the
// lists (the snapshot's listing keeps none): one LIST per page.
func readPackTimes(ctx context.Context, st *store.Store) (packTimes, error) {
	var pt packTimes
	err := list(ctx, st, format.PackPrefix, "", func() { pt = packTimes{lists: map[string]int64{}} }, func(it store.ListItem) error {
		if it.IsDir || it.Irregular != "" {
			return nil
		}
		var ms int64
		if !it.ModTime.IsZero() {
			ms = it.ModTime.UnixMilli()
		}
		if it.Key == format.JournalKey {
			pt.journal, pt.journalThere = ms, true
		} else if it.Key == format.LegacyFoldedMarker {
			pt.marker = ms
		} else if _, _, ok := format.ParseEntryListName(it.Key); ok {
			pt.lists[it.Key] = ms
		}
		return nil
	})
	if err != nil {
		return pt, fmt.Errorf("list %s for the times of the journal and the lists: %w", format.PackPrefix, err)
	}
	return pt, nil
}

// damage is what checkDamage found that the unnamed keys' causes use.
type damage struct {
	times      packTimes
	journalCut bool   // the journal ends in the middle of a line
	lostLines  string // a partial list proves lines lost: its name, else ""
	// lost says what the partial lists prove lost: a problem when a key
	// no list names may have lost its line with them, else a note (Check).
	lost []Problem
	// foldedAt is the modification time of the newest live complete list
	// (0: none), and listsWhole whether every live list decoded: set by
	// listsRead once the lists are checked.
	foldedAt   int64
	listsWhole bool
	// laterKeys are the keys of the journal as read after the listing
	// (sorted, unique): a line added since the snapshot names its key.
	laterKeys []string
}

// listsRead notes what checking the live lists found: the newest complete
// list's time, and whether every live list decoded (if one did not, readers
// list the prefixes instead, and miss no key).
func (d *damage) listsRead(live []store.ListInfo, found []listFindings) {
	d.listsWhole = true
	for i, l := range live {
		if found[i].named == nil {
			d.listsWhole = false
		} else if l.Complete {
			d.foldedAt = max64(d.foldedAt, d.times.lists[l.Name])
		}
	}
}

// named reports whether the journal read after the listing names key.
func (d damage) named(key string) bool {
	_, ok := slices.BinarySearch(d.laterKeys, key)
	return ok
}

// checkDamage reports 0-byte signature keys, a journal cut in the middle of
// a line, and a journal that lacks lines a partial list proves it had.
// keys are the listed per-object keys (sorted), jkeys the journal's keys
// (sorted, unique). Cost: one LIST of the pack prefix (per page), one GET
// of the journal, one GET per partial list written within the hour before
// the journal's last update.
func checkDamage(ctx context.Context, st *store.Store, sn *store.Snapshot, sc *scan, jkeys []string, f *findings) (damage, error) {
	var d damage
	f.rep.EmptySignatures = len(sc.emptySigs)
	if len(sc.emptySigs) > 0 {
		f.add(f.keyed(emptySigProblem(f), sc.emptySigs))
	}

	data, _, err := st.ReadRecord(ctx, format.JournalKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return d, fmt.Errorf("read journal %s: %w", format.JournalKey, err)
	}
	journalRead := err == nil
	later, _ := format.ParseJournal(data)
	for _, l := range later {
		d.laterKeys = append(d.laterKeys, l.Key)
	}
	d.laterKeys = sortedUnique(d.laterKeys)
	if n := len(data); n > 0 && data[n-1] != '\n' {
		d.journalCut = true
		last := string(data[strings.LastIndexByte(string(data), '\n')+1:])
		f.add(Problem{Code: CodeJournalCut, Keys: []string{format.JournalKey}, Count: 1,
			Message: fmt.Sprintf("journal %s is cut: its %d bytes end in the middle of a line (%s; every line a writer adds ends in a newline), so a write that failed left part of it and the lines after the cut are lost; entries whose line was lost are missing from readers of a folded store until a complete fold", format.JournalKey, n, quoteText(last, 80)),
			Fix:     f.dropMalformedFix() + "; it ends the cut line, and its fold lists every entry prefix"})
	}

	if d.times, err = readPackTimes(ctx, st); err != nil {
		return d, err
	}
	if journalRead && !d.times.journalThere {
		// Read, yet not listed (a listing that left it out): its time is
		// not known, which proves nothing.
		d.times.journalThere, d.times.journal = true, 0
	}
	return d, checkPartialLines(ctx, st, sn, sc.keys, jkeys, f, &d)
}

// proofWindow is how long after a partial list was written the journal is
// sure to hold a line of each of its keys: the hour its lines stay once
// marked, less ClockMargin.
const proofWindow = format.GracePeriod - store.ClockMargin

// reportLost puts what the partial lists prove lost into rep: problems if
// a key no list names may have lost its line with them (rep.UnnamedLost),
// else notes, as every existing entry is then in a live list or a line.
func (d damage) reportLost(f *findings) {
	for _, p := range d.lost {
		if f.rep.UnnamedLost == 0 {
			p.Severity = SeverityNote
			p.Message += "; none is missing now: every existing entry is in a live list or a journal line"
		}
		f.add(p)
	}
}

// emptySigProblem is the finding of 0-byte signature keys (its keys added
// by the caller).
func emptySigProblem(f *findings) Problem {
	return Problem{Code: CodeSigEmpty,
		Message: "signature keys of 0 bytes: a signature is never empty, so a write that failed left them; readers get an empty signature, and a fold lists them as they are",
		Fix:     fmt.Sprintf("re-sign: have the signer sign the object again and write the signature over the empty key with `oxyfs put --force %s KEY SIGFILE`", ShellArg(f.url))}
}

// checkPartialLines finds, for each partial list written less than
// proofWindow before the journal's last update (or with the journal gone),
// the keys it holds that exist and that no journal line names (d.lostMsg).
func checkPartialLines(ctx context.Context, st *store.Store, sn *store.Snapshot, keys, jkeys []string, f *findings, d *damage) error {
	max := f.max
	for _, l := range sn.Lists {
		written, there := d.times.lists[l.Name]
		if l.Complete || !there || written == 0 {
			continue
		}
		if d.times.journalThere && (d.times.journal == 0 || d.times.journal-written >= proofWindow.Milliseconds()) {
			continue
		}
		data, err := st.Get(ctx, l.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue // collected since the listing
		}
		if err != nil {
			return fmt.Errorf("read partial list %s: %w", l.Name, err)
		}
		var lacking []string
		n := 0
		// A list that does not decode proves only what it decoded (its
		// corruption is reported by checkList, when live).
		_, _ = format.DecodeEntryList(data, func(key []byte) error {
			k := string(key)
			if _, ok := slices.BinarySearch(keys, k); !ok {
				return nil // gone: a forgotten object's key goes with its lines
			}
			if _, ok := slices.BinarySearch(jkeys, k); ok || d.named(k) {
				return nil
			}
			if n < max {
				lacking = append(lacking, k)
			}
			n++
			return nil
		})
		if n == 0 {
			continue
		}
		d.lostLines = l.Name
		since := "the journal is gone"
		if d.times.journalThere {
			since = fmt.Sprintf("the journal was last updated %v after it was written", time.Duration(d.times.journal-written)*time.Millisecond)
		}
		d.lost = append(d.lost, Problem{Code: CodeJournalLostLines, Keys: append([]string{format.JournalKey, l.Name}, lacking...), Count: n + 2,
			Message: fmt.Sprintf("journal %s lost lines: it names none of %d keys that partial list %s folded out (%s%s), yet a fold's lines stay in the journal for an hour after it marks them and %s; the journal was cut or emptied (a write that failed?), and entries whose unfolded lines went with them are missing from readers of a folded store until a complete fold",
				format.JournalKey, n, l.Name, strings.Join(lacking, ", "), more(n-len(lacking)), since),
			Fix: f.foldFix()})
	}
	return nil
}

// unnamedWhy is why a per-object key of a folded store that no live list
// or journal line names is a problem (unnamedCause).
type unnamedWhy int

const (
	notLost unnamedWhy = iota // it may be only waiting for a fold
	lostListingMissed
	lostJournalLines
	lostJournalRewritten
)

func (w unnamedWhy) String() string {
	switch w {
	case lostListingMissed:
		return "they were written before the newest complete list (by more than the clock margin), whose fold listed every entry prefix, yet that list does not hold them: the fold's listing missed them"
	case lostJournalLines:
		return "the journal lost lines (journal-cut, journal-lost-lines), and their lines may have been among them"
	case lostJournalRewritten:
		return "the journal was rewritten after they were written (by more than the clock margin), without a line for them: the journal lost their lines (cut or emptied by a write that failed?), or their put failed after writing the key, or a writer that predates the journal wrote them"
	}
	return "they may be only waiting for a fold"
}

// unnamedCause says why a per-object key of a folded store that no live
// list or journal line names (and no retired list held) is a problem, or
// notLost when it may be only waiting for a fold: an older writer's key, or
// one whose writer is adding its line now. written is the key's
// modification time (wall ms, 0: none given).
func (d damage) unnamedCause(written int64) unnamedWhy {
	margin := store.ClockMargin.Milliseconds()
	switch {
	case !d.listsWhole:
		return notLost // readers do not trust the lists: they list the prefixes
	case written != 0 && d.foldedAt != 0 && written < d.foldedAt-margin:
		return lostListingMissed
	case d.journalCut || d.lostLines != "":
		return lostJournalLines
	case written != 0 && d.times.journalThere && d.times.journal != 0 && written < d.times.journal-margin:
		return lostJournalRewritten
	}
	return notLost
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// clipText is s, cut to at most n bytes with "…" after a cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// quoteText is s clipped to n bytes (clipText) and quoted as every output
// of oxyfs quotes a value: a control byte as \xHH (termsafe.DoubleQuote;
// %q writes BEL as \a).
func quoteText(s string, n int) string { return termsafe.DoubleQuote(clipText(s, n)) }
