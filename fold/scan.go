package fold

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// scan is what listing every entry prefix found.
type scan struct {
	keys      []string // valid entry keys, sorted, unique
	perKind   [format.NumKinds]int
	malformed []string // keys under an entry prefix that are not entry keys, sorted
	// emptySigs are the signature keys the listing showed 0 bytes long
	// (a signature is never empty: a write that failed left them), sorted.
	emptySigs []string
	// times, when the listing was asked for them (check), is the listed
	// modification time of each of keys (wall ms, 0 if the server gave
	// none); nil otherwise.
	times []int64
}

// listedReport returns the keys listed per kind, by kind name.
func (s *scan) listedReport() map[string]int {
	m := make(map[string]int, format.NumKinds)
	for _, k := range format.Kinds {
		m[k.String()] = s.perKind[k]
	}
	return m
}

// listShards bounds the listings a fold runs at once (all kinds together).
const listShards = 16

// listEntries lists every entry prefix (sig/ seal/ receipt/ approval/ cert/
// accepted/), one LIST per page, the six kinds in parallel. A kind whose
// keys fit in one page costs that one LIST. A larger kind is split by its
// <hh> directories: one delimited listing of the kind names them, and they
// are listed in parallel (listShards at a time). A server that walks its
// keys from the start for every page (versitygw's posix backend does) then
// walks thousands of keys per page instead of up to a million, and the
// pages of different shards overlap their round trips. The split sees
// every key: a key directly under the kind prefix comes back in the
// delimited listing itself, every other one under a directory it names.
//
// A key that is not an entry key (format.ParseKey), or that names no regular
// file (a symbolic link on file://, ListItem.Irregular), is left out of keys
// and put in malformed: skipped, never dropped silently.
func listEntries(ctx context.Context, st *store.Store, prog *progress) (*scan, error) {
	return listEntriesTimed(ctx, st, prog, false)
}

// listEntriesTimed is listEntries, keeping each key's modification time
// too (scan.times) when timed: 8 bytes a key, for check.
func listEntriesTimed(ctx context.Context, st *store.Store, prog *progress, timed bool) (*scan, error) {
	var (
		perKind [format.NumKinds][]shard
		done    atomic.Int64
	)
	sem := make(chan struct{}, listShards)
	err := par.ForEach(ctx, len(format.Kinds), len(format.Kinds), func(ctx context.Context, i int) error {
		kind := format.Kinds[i]
		l := &kindLister{st: st, kind: kind, sem: sem, done: &done, prog: prog, timed: timed}
		var err error
		perKind[kind], err = l.run(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &scan{}
	total := 0
	for _, k := range format.Kinds {
		for _, sh := range perKind[k] {
			s.perKind[k] += len(sh.keys)
			s.malformed = append(s.malformed, sh.bad...)
			s.emptySigs = append(s.emptySigs, sh.empty...)
		}
		total += s.perKind[k]
	}
	// Each listing is in key order and a kind's shards come in the order of
	// their prefixes, so the kinds taken in the order of theirs give the
	// keys sorted: no sort of a million keys (the check is one pass).
	byPrefix := slices.SortedFunc(slices.Values(format.Kinds[:]), func(a, b format.Kind) int {
		return strings.Compare(a.Prefix(), b.Prefix())
	})
	s.keys = make([]string, 0, total)
	if timed {
		s.times = make([]int64, 0, total)
	}
	for _, k := range byPrefix {
		for _, sh := range perKind[k] {
			s.keys = append(s.keys, sh.keys...)
			s.times = append(s.times, sh.times...)
		}
	}
	if timed {
		s.sortTimed()
	} else {
		if !slices.IsSorted(s.keys) {
			slices.Sort(s.keys)
		}
		s.keys = slices.Compact(s.keys)
	}
	slices.Sort(s.malformed)
	s.emptySigs = sortedUnique(s.emptySigs)
	prog.report(done.Load(), done.Load(), "list")
	return s, nil
}

// sortTimed sorts keys with their times (a listing out of order: a server
// that lies) and drops repeats, keeping the newest time of a key.
func (s *scan) sortTimed() {
	if !slices.IsSorted(s.keys) {
		idx := make([]int, len(s.keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(s.keys[a], s.keys[b]) })
		keys, times := make([]string, len(idx)), make([]int64, len(idx))
		for i, j := range idx {
			keys[i], times[i] = s.keys[j], s.times[j]
		}
		s.keys, s.times = keys, times
	}
	n := 0
	for i := range s.keys {
		if n > 0 && s.keys[n-1] == s.keys[i] {
			s.times[n-1] = max(s.times[n-1], s.times[i])
			continue
		}
		s.keys[n], s.times[n] = s.keys[i], s.times[i]
		n++
	}
	s.keys, s.times = s.keys[:n], s.times[:n]
}

// kindLister lists one kind's keys, split by <hh> directory when they fill
// more than a page.
type kindLister struct {
	st    *store.Store
	kind  format.Kind
	sem   chan struct{} // one token per listing running
	done  *atomic.Int64 // keys seen by every lister, for progress
	prog  *progress
	timed bool // keep each key's modification time (shard.times)
}

// shard is what one listing found.
type shard struct {
	keys, bad []string
	empty     []string // signature keys of 0 bytes (scan.emptySigs)
	times     []int64  // per key, when the lister is timed
}

// add files one listed item into sh.
func (l *kindLister) add(sh *shard, it store.ListItem) {
	if it.IsDir {
		return
	}
	if e, err := format.ParseKey(it.Key); err != nil || e.Kind != l.kind || it.Irregular != "" {
		sh.bad = append(sh.bad, it.Shown())
	} else {
		sh.keys = append(sh.keys, it.Key)
		if l.timed {
			var ms int64
			if !it.ModTime.IsZero() {
				ms = it.ModTime.UnixMilli()
			}
			sh.times = append(sh.times, ms)
		}
		if l.kind == format.KindSig && it.Size == 0 {
			sh.empty = append(sh.empty, it.Key)
		}
	}
	if n := l.done.Add(1); n%1000 == 0 {
		l.prog.report(n, 0, "list")
	}
}

// listAll lists everything under prefix into sh, holding a listing token.
func (l *kindLister) listAll(ctx context.Context, prefix string, sh *shard) error {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.sem }()
	return list(ctx, l.st, prefix, "", func() { sh.keys, sh.bad, sh.empty, sh.times = sh.keys[:0], sh.bad[:0], sh.empty[:0], sh.times[:0] }, func(it store.ListItem) error {
		l.add(sh, it)
		return nil
	})
}

// run lists the kind: one shard, or the keys directly under its prefix
// and then each <hh> directory's, in key order.
func (l *kindLister) run(ctx context.Context) ([]shard, error) {
	prefix := l.kind.Prefix()
	// The first page says whether the kind is small (one page: done).
	var items []store.ListItem
	var next []byte
	var err error
	for range listAttempts {
		items, next, err = l.st.ListPage(ctx, prefix, "", nil, 0)
		if !errors.Is(err, store.ErrNotFound) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if next == nil {
		var sh shard
		for _, it := range items {
			l.add(&sh, it)
		}
		return []shard{sh}, nil
	}
	// Many keys: name the <hh> directories (and any key directly under
	// the prefix), then list each directory.
	var top shard
	var dirs []string
	err = list(ctx, l.st, prefix, "/", func() { top, dirs = shard{}, dirs[:0] }, func(it store.ListItem) error {
		if it.IsDir {
			dirs = append(dirs, it.Key)
		} else {
			l.add(&top, it)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	shards := make([]shard, 1+len(dirs))
	shards[0] = top
	// sem, shared by every kind's lister, bounds the listings running.
	err = par.ForEach(ctx, len(dirs), len(dirs), func(ctx context.Context, i int) error {
		return l.listAll(ctx, dirs[i], &shards[1+i])
	})
	if err != nil {
		return nil, err
	}
	return shards, nil
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
