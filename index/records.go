package index

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// What the .oxy/ view of a mount shows besides Status: the two records and
// the live lists, with their exact sizes, so that a stat of .oxy/journal
// or .oxy/lists/<name> reports what a read returns.

// JournalText returns the journal as the current view read it (at the
// open or the last refresh that found it changed), "" when absent and in
// the directory layout. It sends no request once the index is loaded, but
// for a journal longer than Options.KeepJournalText: the view keeps the
// journal's entries, not its text (right after a complete fold every entry
// has a folded line for an hour: ~100 B an entry), so such a journal is
// read again (one GET) and shows the store's journal as it is now, which
// may be newer than the view (JournalTextKept says which).
func (ix *Index) JournalText(ctx context.Context) (string, error) {
	v, err := ix.current(ctx)
	if err != nil || v.rec == nil {
		return "", err
	}
	if v.journalText {
		return v.rec.JournalText, nil
	}
	data, _, err := ix.st.ReadRecord(ctx, format.JournalKey)
	if err != nil {
		return "", err // ReadRecord names the key
	}
	return string(data), nil
}

// RetiredText is the retired record as the view read it ("" when absent
// and in the directory layout). It sends no request once the index is
// loaded.
func (ix *Index) RetiredText(ctx context.Context) (string, error) {
	v, err := ix.current(ctx)
	if err != nil || v.rec == nil {
		return "", err
	}
	return v.rec.RetiredText, nil
}

// JournalTextKept reports whether JournalText answers from memory: the
// index is loaded and its view keeps the journal's text (or has none).
func (ix *Index) JournalTextKept() bool {
	v := ix.v.Load()
	return v != nil && (v.rec == nil || v.journalText)
}

// ListTextSize returns the length of a live entry list's text (decompressed,
// as format.EntryListText serves it). A folded open decoded every live list,
// so it costs nothing; a list the index did not read (the prefix modes) is
// read and decoded once (one GET, streamed) and its length remembered while
// the list stays live. A name that is not a live list of the current view
// wraps fs.ErrNotExist.
func (ix *Index) ListTextSize(ctx context.Context, name string) (int64, error) {
	if err := ix.liveList(ctx, name); err != nil {
		return 0, err
	}
	if n, ok := ix.lists.get(name); ok {
		return n, nil
	}
	return ix.measureList(ctx, name)
}

// ListTextKnown returns the length of a live list's text if the index
// knows it without a request (ListTextSize).
func (ix *Index) ListTextKnown(name string) (int64, bool) {
	v := ix.v.Load()
	if v == nil {
		return 0, false
	}
	if _, live := slices.BinarySearch(v.listNames, name); !live {
		return 0, false
	}
	return ix.lists.get(name)
}

// ListStoredSize returns a live list's size as stored (compressed), as the
// current view's pack listing gave it.
func (ix *Index) ListStoredSize(name string) (int64, bool) {
	v := ix.v.Load()
	if v == nil {
		return 0, false
	}
	for _, l := range v.live {
		if l.Name == name {
			return l.Size, true
		}
	}
	return 0, false
}

// ReadList reads a live entry list (one GET, capped at the size the pack
// listing gave, as an open's) and returns its compressed bytes and the
// length of its text, for format.NewEntryListTextOfSize. When
// the length is not known yet it is measured from these bytes.
func (ix *Index) ReadList(ctx context.Context, name string) ([]byte, int64, error) {
	if err := ix.liveList(ctx, name); err != nil {
		return nil, 0, err
	}
	stored, _ := ix.ListStoredSize(name)
	var data []byte
	err := ix.getList(ctx, store.ListInfo{Name: name, Size: stored}, func(body io.Reader) (err error) {
		data, err = io.ReadAll(body)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read entry list %q: %w", name, err)
	}
	if n, ok := ix.lists.get(name); ok {
		return data, n, nil
	}
	n, err := format.EntryListTextSize(data)
	if err != nil {
		return nil, 0, fmt.Errorf("read entry list %q: %w", name, err)
	}
	ix.lists.set(name, n)
	return data, n, nil
}

// liveList checks that name is a live list of the current view.
func (ix *Index) liveList(ctx context.Context, name string) error {
	v, err := ix.current(ctx)
	if err != nil {
		return err
	}
	if _, live := slices.BinarySearch(v.listNames, name); !live {
		return notExist("stat", ".oxy/lists/"+name)
	}
	return nil
}

// measureList reads and decodes a list to learn its text's length. Callers
// asking for the same list at once share one read (a flight).
func (ix *Index) measureList(ctx context.Context, name string) (int64, error) {
	m := &ix.lists
	m.mu.Lock()
	f, ok := m.flights[name]
	if !ok {
		f = &listFlight{done: make(chan struct{})}
		if m.flights == nil {
			m.flights = make(map[string]*listFlight)
		}
		m.flights[name] = f
		go func() {
			// Detached from the caller, as the signature cache's reads
			// are: one caller going away does not fail the others. The
			// store's per-request timeout bounds it.
			data, err := ix.st.Get(context.WithoutCancel(ctx), name)
			var n int64
			if err == nil {
				n, err = format.EntryListTextSize(data)
			}
			if err != nil {
				err = fmt.Errorf("read entry list %q: %w", name, err)
			} else {
				m.set(name, n)
			}
			m.mu.Lock()
			f.size, f.err = n, err
			delete(m.flights, name)
			m.mu.Unlock()
			close(f.done)
		}()
	}
	m.mu.Unlock()
	select {
	case <-f.done:
		return f.size, f.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// listTexts remembers the text length of the live lists. A list is named by
// the SHA-256 of its text, so a name's length does not change; one whose key
// came to hold other bytes is caught when read (NewEntryListTextOfSize).
type listTexts struct {
	mu      sync.Mutex             // protects the following; a leaf: the measure runs outside it
	n       map[string]int64       // list name -> text length; guarded by mu
	flights map[string]*listFlight // measures in progress; guarded by mu
}

// listFlight is one measure of a list, shared by its callers.
type listFlight struct {
	done chan struct{}
	size int64
	err  error
}

func (m *listTexts) get(name string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.n[name]
	return n, ok
}

func (m *listTexts) set(name string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = make(map[string]int64)
	}
	m.n[name] = n
}

// learn keeps the lengths an open or refresh decoded.
func (m *listTexts) learn(texts map[string]int64) {
	for name, n := range texts {
		m.set(name, n)
	}
}

// keep forgets every list but the live ones (sorted), when a view is
// published: what is remembered stays bounded by the live lists.
func (m *listTexts) keep(live []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.n {
		if _, ok := slices.BinarySearch(live, name); !ok {
			delete(m.n, name)
		}
	}
}
