package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func init() {
	register(&command{
		name:    "status",
		args:    "STORE",
		summary: "show the raw layout of a store: journal lines (folded/unfolded), live and retired entry lists, folded or not, the legacy marker, packs",
		run:     runStatus,
	})
}

// storeStatus is the JSON form of `oxyfs status`.
type storeStatus struct {
	Store           string           `json:"store"`
	Layout          string           `json:"layout"`
	Folded          bool             `json:"folded"`
	JournalLines    int              `json:"journal_lines"`
	JournalFolded   int              `json:"journal_folded"`
	JournalUnfolded int              `json:"journal_unfolded"`
	JournalBad      []string         `json:"journal_bad_lines,omitempty"`
	LiveComplete    int              `json:"live_complete_lists"`
	LivePartial     int              `json:"live_partial_lists"`
	RetiredLists    int              `json:"retired_lists"`
	Lists           []store.ListInfo `json:"lists"`
	RetiredKeys     int              `json:"retired_keys"`
	ForgetRecords   int              `json:"forget_records"` // of RetiredKeys, forget records (format/forgotten.go)
	RetiredBad      []string         `json:"retired_bad_lines,omitempty"`
	// UnreadableLists are the live lists that do not decode, each with why:
	// readers then list the per-object prefixes, so the store does not
	// read as folded, and status exits 1.
	UnreadableLists []string `json:"unreadable_lists,omitempty"`
	LegacyMarker    bool     `json:"legacy_marker"`
	Packs           int      `json:"packs"`
}

func runStatus(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	st, err := e.openStore(ctx, pos[0], store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		return err
	}
	// A location holding nothing of a store is refused as every other
	// command refuses it (exit 1), not shown as an empty store. A snapshot
	// that shows a store's keys proves one is there (no request more).
	known := len(sn.Journal) > 0 || sn.JournalBad.Count > 0 || len(sn.Lists) > 0 || sn.Packs > 0 || sn.Marker || len(sn.Retired) > 0
	if err := e.requireStore(ctx, st, known); err != nil {
		return err
	}
	s := storeStatus{
		Store:        st.URL(),
		Layout:       st.Layout().String(),
		Folded:       sn.Folded(),
		JournalLines: len(sn.Journal),
		RetiredKeys:  len(sn.Retired),
		LegacyMarker: sn.Marker,
		Packs:        sn.Packs,
		Lists:        sn.Lists,
	}
	if s.Lists == nil {
		s.Lists = []store.ListInfo{}
	}
	for _, r := range sn.Retired {
		if format.IsForgottenName(r.Key) {
			s.ForgetRecords++
		}
	}
	s.JournalUnfolded = sn.UnfoldedLines()
	s.JournalFolded = s.JournalLines - s.JournalUnfolded
	for _, l := range sn.Lists {
		switch {
		case l.Retired:
			s.RetiredLists++
		case l.Complete:
			s.LiveComplete++
		default:
			s.LivePartial++
		}
	}
	s.JournalBad, s.RetiredBad = sn.JournalBad.Messages(), sn.RetiredBad.Messages()
	if st.Layout() == store.LayoutBucket {
		if s.UnreadableLists, err = unreadableLists(ctx, st, sn); err != nil {
			return err
		}
		s.Folded = s.Folded && len(s.UnreadableLists) == 0
	}
	if err := e.printStatus(st, s); err != nil {
		return err
	}
	if n := len(s.UnreadableLists); n > 0 {
		verb := "do not decode"
		if n == 1 {
			verb = "does not decode"
		}
		return fmt.Errorf("%s %s: readers list the per-object prefixes (slower, nothing missed); run oxyfs check %s for what to do", english.Count(n, "live list", "live lists"), verb, fold.ShellArg(st.URL()))
	}
	return nil
}

// unreadableLists reads every live list (one GET each, decoded as it
// streams, its keys not kept) and returns those that do not decode, each
// with why: readers of a store with one list the per-object prefixes
// instead. A list gone since the listing is passed over (a collection).
func unreadableLists(ctx context.Context, st *store.Store, sn *store.Snapshot) ([]string, error) {
	var out []string
	for _, l := range sn.LiveLists() {
		data, err := st.Get(ctx, l.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read live list %s: %w", l.Name, err)
		}
		if _, err := format.DecodeEntryList(data, nil); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", l.Name, err))
		}
	}
	return out, nil
}

// printStatus prints s, as JSON under --json.
func (e *env) printStatus(st *store.Store, s storeStatus) error {
	if e.common.json {
		return e.printJSON(s)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "store\t%s\n", s.Store)
	fmt.Fprintf(w, "layout\t%s\n", s.Layout)
	dir := st.Layout() == store.LayoutDirectory
	if dir {
		if s.JournalLines > 0 || len(s.Lists) > 0 {
			fmt.Fprintf(w, "\treaders in this layout list per-object prefixes and ignore the journal and lists below (pass --layout bucket to read them)\n")
		} else {
			fmt.Fprintf(w, "\ta repository's own directory keeps no journal or lists: lookups list per-object prefixes\n")
		}
	}
	folded := "no: lookups list per-object prefixes (no live complete list)"
	switch {
	case dir:
		folded = "not read in the directory layout: lookups list per-object prefixes"
	case len(s.UnreadableLists) > 0:
		folded = "no: a live list does not decode, so lookups list per-object prefixes (see lists)"
	case s.Folded:
		folded = "yes: lookups are answered from the live lists and the journal"
	}
	fmt.Fprintf(w, "folded\t%s\n", folded)
	fmt.Fprintf(w, "journal\t%s: %d folded, %d unfolded\n", english.Count(s.JournalLines, "line", "lines"), s.JournalFolded, s.JournalUnfolded)
	for _, b := range s.JournalBad {
		fmt.Fprintf(w, "\twarning: journal %s\n", b)
	}
	fmt.Fprintf(w, "lists\t%d live (%d complete, %d partial), %d retired\n", s.LiveComplete+s.LivePartial, s.LiveComplete, s.LivePartial, s.RetiredLists)
	for _, l := range s.Lists {
		kind, state := "partial", "live"
		if l.Complete {
			kind = "complete"
		}
		if l.Retired {
			state = "retired"
		}
		fmt.Fprintf(w, "\t%s\t%s\t%s\t%d bytes\n", l.Name, kind, state, l.Size)
	}
	for _, u := range s.UnreadableLists {
		fmt.Fprintf(w, "\tunreadable: %s\n", u)
	}
	fmt.Fprintf(w, "retired\t%s in the retired record\n", english.Count(s.RetiredKeys, "key", "keys"))
	if s.ForgetRecords > 0 {
		fmt.Fprintf(w, "\t%s of them: a collection forgot objects within the hour; readers read their signatures again until it goes\n", english.Count(s.ForgetRecords, "forget record", "forget records"))
	}
	for _, b := range s.RetiredBad {
		fmt.Fprintf(w, "\twarning: retired record %s\n", b)
	}
	marker := "absent: readers of an unfolded store still read the older one-list keys"
	if s.LegacyMarker {
		marker = "present: the older one-list keys have been folded"
	}
	fmt.Fprintf(w, "legacy\t%s\n", marker)
	fmt.Fprintf(w, "packs\t%d\n", s.Packs)
	return w.Flush()
}
