package fold

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// checkListsParallel bounds the live lists Check holds at once: each costs
// its compressed bytes (at most format.MaxEntryListBytes) and a decoder's
// window (at most format.MaxEntryListWindow).
const checkListsParallel = 2

// keyBits is a set of indexes into the sorted listing of per-object keys.
type keyBits []uint64

func newKeyBits(n int) keyBits   { return make(keyBits, (n+63)/64) }
func (b keyBits) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b keyBits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b keyBits) or(o keyBits) {
	for i := range b {
		b[i] |= o[i]
	}
}
func (b keyBits) count() (n int) {
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// listFindings is what checking one live list found.
type listFindings struct {
	named       keyBits  // the listed keys it names (nil: it did not decode, or vanished)
	missing     int      // keys it names that the listing did not show
	missingEx   []string // the first max of them
	malformed   int      // keys it holds that do not parse
	malformedEx []string // the first max of them (clipped), with why
	corrupt     error    // why it does not decode; nil if it does
	vanished    bool     // gone since the snapshot's listing
	sum         string   // its text's SHA-256, when that is not its id
}

// checkLists checks the live lists against the listing keys (sorted,
// unique), streaming: a list's keys are decoded once, checked against its
// name's id, parsed, and merged with the listing as they come, so a list's
// decompressed text is never held, however large (the decode stops at
// format.MaxEntryListSize or format.MaxEntryListKeys). What one list names is
// a bit per listing key; what it names that does not exist is counted, and
// the first max kept.
func checkLists(ctx context.Context, st *store.Store, live []store.ListInfo, keys []string, max int) ([]listFindings, error) {
	found := make([]listFindings, len(live))
	sem := make(chan struct{}, checkListsParallel)
	err := forEach(ctx, len(live), func(ctx context.Context, i int) error {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-sem }()
		f, err := checkList(ctx, st, live[i].Name, keys, max)
		found[i] = f
		return err
	})
	return found, err
}

func checkList(ctx context.Context, st *store.Store, name string, keys []string, max int) (f listFindings, err error) {
	data, err := st.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		f.vanished = true
		return f, nil
	}
	if err != nil {
		return f, err
	}
	id, _, _ := format.ParseEntryListName(name)
	named := newKeyBits(len(keys))
	j := 0
	_, sum, derr := format.DecodeEntryListHashed(data, func(key []byte) error {
		k := string(key)
		if _, err := format.ParseKey(k); err != nil {
			if f.malformed < max {
				f.malformedEx = append(f.malformedEx, fmt.Sprintf("%s: %v", quoteText(k, 120), err))
			}
			f.malformed++
			return nil
		}
		for j < len(keys) && keys[j] < k {
			j++
		}
		if j < len(keys) && keys[j] == k {
			named.set(j)
			return nil
		}
		if f.missing < max {
			f.missingEx = append(f.missingEx, k)
		}
		f.missing++
		return nil
	})
	if derr != nil {
		// The list is corrupt: what it named does not count.
		return listFindings{corrupt: derr}, nil
	}
	if sum != id {
		f.sum = sum
	}
	f.named = named
	return f, nil
}

// checkListFindings puts what checkLists found into the report, and returns
// the listing keys the lists name. A list's keys the listing did not show
// are reported missing only if gone says a HEAD found every example gone
// (confirmMissing); otherwise the listing was wrong, which is reported once.
// The first problem it adds is a list that does not decode or vanished, if
// any (Check hangs the keys that follow from it under it).
//
// A key a list names that does not exist and that the journal names too
// (jkeys: sorted, unique) is left to the journal's finding, when the list's
// missing keys are all known (at most MaxItems).
func checkListFindings(f *findings, live []store.ListInfo, found []listFindings, keys, jkeys []string, gone func(string) bool) keyBits {
	for i, fd := range found {
		name := live[i].Name
		switch {
		case fd.corrupt != nil:
			f.add(Problem{Code: CodeListCorrupt, Keys: []string{name}, Count: 1,
				Message: fmt.Sprintf("live list %s does not decode (cut, unsorted, or not an entry list): %v; readers of the store list the entry prefixes instead while it is live (slower; they miss nothing)", name, fd.corrupt),
				Fix:     f.foldFix() + " (retires it and writes a complete list of the listing and the journal)"})
		case fd.vanished:
			f.add(Problem{Code: CodeListVanished, Keys: []string{name}, Count: 1,
				Message: fmt.Sprintf("live list %s vanished while checking (a collection deleted it?)", name),
				Fix:     "run " + f.cmd("check") + " again"})
		}
	}
	for i, fd := range found {
		name := live[i].Name
		if fd.sum != "" {
			f.add(Problem{Code: CodeListIDMismatch, Keys: []string{name}, Count: 1,
				Message: fmt.Sprintf("verify entry list %s: %v: its uncompressed text has SHA-256 %s, not the id its name gives: it was replaced or damaged after its fold wrote it; readers still read what it holds", name, format.ErrCorrupt, fd.sum),
				Fix:     f.foldFix() + " (retires it and writes a complete list of the listing and the journal)"})
		}
		if fd.malformed > 0 && fd.named != nil {
			f.add(Problem{Code: CodeListKeyMalformed, Keys: []string{name}, Count: 1, Details: fd.malformedEx,
				Message: fmt.Sprintf("list %s holds %d malformed keys (not entry keys; malformed, not gone): readers and folds skip them", name, fd.malformed),
				Fix:     f.foldFix() + " (its list leaves them out, and it retires this one)"})
		}
	}
	named := newKeyBits(len(keys))
	missing := 0
	for i, fd := range found {
		if fd.named == nil {
			continue
		}
		named.or(fd.named)
		missing += fd.missing
		if fd.missing == 0 || slices.ContainsFunc(fd.missingEx, func(k string) bool { return !gone(k) }) {
			continue
		}
		if fd.missing == len(fd.missingEx) {
			// Every missing key is known: those the journal names too are
			// the journal's finding (one cause, one fix), not this list's.
			fd.missingEx = slices.DeleteFunc(slices.Clone(fd.missingEx), func(k string) bool {
				_, ok := slices.BinarySearch(jkeys, k)
				return ok
			})
			if fd.missing = len(fd.missingEx); fd.missing == 0 {
				continue
			}
		}
		p := f.keyed(Problem{Code: CodeEntryMissingKey,
			Message: fmt.Sprintf("list %s names keys that do not exist: readers show such an entry, and reading it fails (not found)", live[i].Name),
			Fix:     f.foldFix() + " (a complete fold lists the entry prefixes and leaves out keys that are gone; a key a journal line names too stays until its line is folded and past its hour: then " + f.cmd("gc") + ")"}, fd.missingEx)
		p.Count = fd.missing
		f.add(p)
	}
	f.rep.ListEntries = named.count() + missing
	disagree(f, live, found, keys)
	return named
}

// disagree names, for each two live complete lists that decoded, the
// existing entries one holds and the other lacks: from the bits each list
// set, so it costs no request and a bit per listed key (the keys either
// names that do not exist are entry-missing-key's). It is a problem if
// either list's text does not match its id (a list replaced or damaged:
// list-id-mismatch), else a note: folds that ran side by side wrote lists
// of different moments, and readers read them all.
func disagree(f *findings, live []store.ListInfo, found []listFindings, keys []string) {
	for a := range live {
		for b := a + 1; b < len(live); b++ {
			fa, fb := found[a], found[b]
			if !live[a].Complete || !live[b].Complete || fa.named == nil || fb.named == nil {
				continue
			}
			onlyA, onlyB := onlyIn(fa.named, fb.named, keys, f.max), onlyIn(fb.named, fa.named, keys, f.max)
			if onlyA.n == 0 && onlyB.n == 0 {
				continue
			}
			sev := SeverityNote
			if fa.sum != "" || fb.sum != "" {
				sev = SeverityProblem
			}
			p := Problem{Code: CodeListsDisagree, Severity: sev, Keys: append(onlyA.keys, onlyB.keys...), Count: onlyA.n + onlyB.n,
				Message: fmt.Sprintf("live complete lists %s and %s disagree: %d existing entries only in the first, %d only in the second; readers read both", live[a].Name, live[b].Name, onlyA.n, onlyB.n),
				Details: []string{onlyA.detail(live[a].Name), onlyB.detail(live[b].Name)},
				Fix:     f.foldFix() + " (writes one complete list of the listing and the journal, and retires both)"}
			f.add(p)
		}
	}
}

// detail is the line of a lists-disagree finding naming what only the list
// name holds: "only in NAME (N): k1, k2 and M more", or "only in NAME: none".
func (o keySample) detail(name string) string {
	if o.n == 0 {
		return fmt.Sprintf("only in %s: none", name)
	}
	return fmt.Sprintf("only in %s (%d): %s", name, o.n, strings.Join(o.keys, ", ")+more(o.n-len(o.keys)))
}

// keySample is how many keys a set holds, and the first of them.
type keySample struct {
	n    int
	keys []string
}

// onlyIn is the keys a names and b does not: their count and the first max.
func onlyIn(a, b keyBits, keys []string, max int) keySample {
	var s keySample
	for w := range a {
		d := a[w] &^ b[w]
		s.n += bits.OnesCount64(d)
		for d != 0 && len(s.keys) < max {
			i := w*64 + bits.TrailingZeros64(d)
			s.keys = append(s.keys, keys[i])
			d &= d - 1
		}
	}
	return s
}

// forEachWaiting calls fn with the index of each listing key that neither a
// live list (named) nor the journal (jkeys, sorted, unique) names.
func forEachWaiting(keys []string, named keyBits, jkeys []string, fn func(int)) {
	j := 0
	for i, k := range keys {
		if named.has(i) {
			continue
		}
		for j < len(jkeys) && jkeys[j] < k {
			j++
		}
		if j < len(jkeys) && jkeys[j] == k {
			continue
		}
		fn(i)
	}
}
