package fold

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store"
)

// scan is what listing every entry prefix found.
type scan struct {
	keys      []string // valid entry keys, sorted, unique
	perKind   [store.NumKinds]int
	malformed []string // keys under an entry prefix that are not entry keys, sorted
}

// listedReport returns the keys listed per kind, by kind name.
func (s *scan) listedReport() map[string]int {
	m := make(map[string]int, store.NumKinds)
	for _, k := range store.Kinds {
		m[k.String()] = s.perKind[k]
	}
	return m
}

// listEntries lists every entry prefix (sig/ seal/ receipt/ approval/ cert/
// accepted/), one LIST per page, the six kinds in parallel. A key that is
// not an entry key (store.ParseKey) is left out of keys and put in malformed:
// skipped, never dropped silently.
func listEntries(ctx context.Context, st *store.Store, prog *progress) (*scan, error) {
	var (
		perKind [store.NumKinds][]string
		bad     [store.NumKinds][]string
		errs    [store.NumKinds]error
		done    atomic.Int64
		wg      sync.WaitGroup
	)
	for _, kind := range store.Kinds {
		wg.Go(func() {
			reset := func() { perKind[kind], bad[kind] = perKind[kind][:0], bad[kind][:0] }
			errs[kind] = list(ctx, st, kind.Prefix(), reset, func(it store.ListItem) error {
				if it.IsDir {
					return nil
				}
				if e, err := store.ParseKey(it.Key); err != nil || e.Kind != kind {
					bad[kind] = append(bad[kind], it.Key)
				} else {
					perKind[kind] = append(perKind[kind], it.Key)
				}
				if n := done.Add(1); n%1000 == 0 {
					prog.report(n, 0, "list")
				}
				return nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	s := &scan{}
	total := 0
	for _, k := range store.Kinds {
		s.perKind[k] = len(perKind[k])
		total += len(perKind[k])
		s.malformed = append(s.malformed, bad[k]...)
	}
	s.keys = make([]string, 0, total)
	for _, k := range store.Kinds {
		s.keys = append(s.keys, perKind[k]...)
	}
	// Each listing is in key order; the kinds are not, so one sort (of runs
	// already sorted) puts them together.
	if !slices.IsSorted(s.keys) {
		slices.Sort(s.keys)
	}
	s.keys = slices.Compact(s.keys)
	slices.Sort(s.malformed)
	prog.report(done.Load(), done.Load(), "list")
	return s, nil
}

// mergeKeys returns the union of a and b, both sorted and unique, and the
// keys of b that a does not hold.
func mergeKeys(a, b []string) (union, onlyB []string) {
	union = make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			union = append(union, a[i])
			i++
		case a[i] > b[j]:
			union = append(union, b[j])
			onlyB = append(onlyB, b[j])
			j++
		default:
			union = append(union, a[i])
			i++
			j++
		}
	}
	union = append(union, a[i:]...)
	union = append(union, b[j:]...)
	onlyB = append(onlyB, b[j:]...)
	return union, onlyB
}

// sortedUnique sorts keys in place and drops repeats.
func sortedUnique(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}
