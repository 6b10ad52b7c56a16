package fold

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// checkLegacyHidden reports the entries of older one-list keys beside the
// marker that no per-object key holds (issue 42): readers and folds take
// the marker's word that the fold which wrote it copied every older list,
// so such an entry is invisible. The fold that wrote the marker copied
// every older list there then (it writes the marker only after every copy
// landed), so only an older list that may be newer than the marker is read
// (GET): one written less than store.ClockMargin before it, after it, or
// with a time unknown. An older list whose object has no per-object key of
// its kind at all is reported without a read. keys are the listed
// per-object keys (sorted); marker is the marker's modification time (wall
// ms, 0: unknown). Cost: one LIST per page of every older prefix, a GET per
// older list read.
func checkLegacyHidden(ctx context.Context, st *store.Store, keys []string, marker int64, f *findings) error {
	type older struct {
		key  string
		kind format.Kind
		obj  string
	}
	var lists []older
	for _, ll := range format.LegacyLists() {
		n := len(lists)
		err := list(ctx, st, ll.Prefix, "", func() { lists = lists[:n] }, func(it store.ListItem) error {
			kind, obj, ok := format.ParseLegacyKey(it.Key)
			if it.IsDir || it.Irregular != "" || !ok {
				return nil // a fold reports them (LegacyReport.Malformed)
			}
			prefix := format.Entry{Kind: kind, Object: obj}.Key()
			i, _ := slices.BinarySearch(keys, prefix)
			none := i == len(keys) || !strings.HasPrefix(keys[i], prefix)
			ms := it.ModTime.UnixMilli()
			if none || it.ModTime.IsZero() || marker == 0 || ms >= marker-store.ClockMargin.Milliseconds() {
				lists = append(lists, older{it.Key, kind, obj})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list older lists under %s: %w", ll.Prefix, err)
		}
	}
	var mu sync.Mutex
	var hidden, holders []string
	err := forEach(ctx, len(lists), func(ctx context.Context, i int) error {
		l := lists[i]
		data, err := st.Get(ctx, l.key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read older list %s: %w", l.key, err)
		}
		es, _ := decodeLegacy(l.kind, l.obj, data)
		mu.Lock()
		defer mu.Unlock()
		held := false
		for _, e := range es {
			if _, ok := slices.BinarySearch(keys, e.key); !ok {
				hidden = append(hidden, e.key)
				held = true
			}
		}
		if held {
			holders = append(holders, l.key)
		}
		return nil
	})
	if err != nil || len(hidden) == 0 {
		return err
	}
	slices.Sort(hidden)
	slices.Sort(holders)
	m := format.LegacyFoldedMarker
	f.add(f.keyed(Problem{Code: CodeLegacyListHidden,
		Details: []string{fmt.Sprintf("held by the older lists %s", sample(holders, f.max))},
		Message: fmt.Sprintf("entries that only older one-list keys beside the %s marker hold, no per-object key: readers and folds take the marker's word that every older list was copied, so these entries are invisible (an older list written, or put back from a backup, after the fold that wrote the marker?)", m),
		Fix:     f.markerFix()}, hidden))
	return nil
}

// markerFix is legacy-list-hidden's fix: delete the marker, then fold. On
// a file:// store it is a command line that runs as printed.
func (f *findings) markerFix() string {
	m := format.LegacyFoldedMarker
	then := "the fold copies the older lists' entries create-only (an entry already there keeps its bytes) and writes the marker again"
	if u, err := url.Parse(f.url); err == nil && u.Scheme == "file" && u.Path != "" {
		return fmt.Sprintf("rm %s && %s (deletes the marker; %s)", ShellArg(path.Join(u.Path, m)), f.foldFix(), then)
	}
	return fmt.Sprintf("delete the marker %s (the key itself: rm STOREDIR/%s, or aws s3 rm s3://BUCKET/%s), then run %s: %s", m, m, m, f.foldFix(), then)
}
