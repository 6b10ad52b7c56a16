package fold

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"

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
	named     keyBits  // the listed keys it names (nil: it did not decode)
	missing   int      // keys it names that the listing did not show
	missingEx []string // the first max of them
	problems  []string // it does not decode or verify; malformed keys (the first max)
	more      string   // how many more malformed keys, if any
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
		f.problems = append(f.problems, fmt.Sprintf("live list %s vanished while checking", name))
		return f, nil
	}
	if err != nil {
		return f, err
	}
	id, _, _ := format.ParseEntryListName(name)
	named := newKeyBits(len(keys))
	malformed := 0
	j := 0
	_, sum, derr := format.DecodeEntryListHashed(data, func(key []byte) error {
		k := string(key)
		if _, err := format.ParseKey(k); err != nil {
			if malformed < max {
				f.problems = append(f.problems, fmt.Sprintf("list %s holds a malformed key: %v", name, err))
			}
			malformed++
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
	if malformed > max {
		f.more = fmt.Sprintf("… and %d more malformed keys in list %s", malformed-max, name)
	}
	switch {
	case derr != nil:
		// The list is corrupt: what it named does not count.
		return listFindings{problems: []string{fmt.Sprintf("verify entry list %s: %v", name, derr)}}, nil
	case sum != id:
		f.problems = append(f.problems, fmt.Sprintf("verify entry list %s: %v: uncompressed text has SHA-256 %s", name, format.ErrCorrupt, sum))
	}
	f.named = named
	return f, nil
}

// checkListFindings puts what checkLists found into rep, and returns the
// listing keys the lists name. A list's keys the listing did not show are
// reported missing only if gone says a HEAD found every example gone
// (confirmMissing); otherwise the listing was wrong, which is reported once.
func checkListFindings(rep *CheckReport, live []store.ListInfo, found []listFindings, nkeys, max int, gone func(string) bool) keyBits {
	var problems []string
	for _, f := range found {
		problems = append(problems, f.problems...)
	}
	slices.Sort(problems)
	capped(&rep.Problems, max, problems, func(s string) string { return s })
	for _, f := range found {
		if f.more != "" && f.named != nil {
			rep.Problems = append(rep.Problems, f.more)
		}
	}
	named := newKeyBits(nkeys)
	missing := 0
	for i, f := range found {
		if f.named == nil {
			continue
		}
		named.or(f.named)
		missing += f.missing
		if slices.ContainsFunc(f.missingEx, func(k string) bool { return !gone(k) }) {
			continue
		}
		for _, k := range f.missingEx {
			rep.Problems = append(rep.Problems, fmt.Sprintf("list %s names %s, which does not exist", live[i].Name, k))
		}
		if f.missing > len(f.missingEx) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("… and %d more like the above", f.missing-len(f.missingEx)))
		}
	}
	rep.ListEntries = named.count() + missing
	return named
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
