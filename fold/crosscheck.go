package fold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// ErrIncompletePackListing is returned by a collection whose pack listing
// left out an entry list that the retired record or the journal shows to be
// there (a server that answered a LIST with a cut, empty or omitting page).
// A collection that went on would leave that list live and unretired while
// it deletes keys the list names, so it stops before it changes anything.
var ErrIncompletePackListing = errors.New("the pack listing left out entry lists that exist")

// crossCheck is what a collection's plan learns by checking its snapshot's
// pack listing against the retired record and the journal, reading the live
// lists once.
type crossCheck struct {
	now   int64    // the store clock the check used
	named []string // the forgotten objects' keys the journal and the live lists hold
}

// crossCheckAttempts bounds how often a collection reads its snapshot again
// when the cross-check finds a contradiction: the snapshot reads the journal
// beside the pack listing, so a list a fold wrote after the listing, whose
// lines it then marked before the journal was read, looks hidden once. A
// listing that keeps hiding a list is wrong.
const crossCheckAttempts = 3

// crossCheckedSnapshot reads the snapshot a collection plans from and
// cross-checks it (checkPackListing), reading it again while a contradiction
// may be a fold's list written during the read.
func crossCheckedSnapshot(ctx context.Context, st *store.Store, forget *forgetPlan, w *warner) (*store.Snapshot, *crossCheck, error) {
	for try := 1; ; try++ {
		sn, err := readSnapshot(ctx, st)
		if err != nil {
			return nil, nil, err
		}
		now := st.Clock().NowMs()
		cc, err := checkPackListing(ctx, st, sn, now, forget, w)
		if errors.Is(err, ErrIncompletePackListing) && try < crossCheckAttempts {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		cc.now = now
		return sn, cc, nil
	}
}

// checkPackListing cross-checks the snapshot's pack listing with the retired
// record and the journal before a collection deletes anything (adr-0055 D6:
// a listing that did not fully succeed stops it):
//
//   - A list the retired record names within its hour is not deleted yet,
//     so the listing should show it. One it lacks is looked up (HEAD): if
//     it is there, the listing left it out and the collection stops; if it
//     is gone (a damaged store), the collection goes on, so such a store
//     does not refuse every collection.
//   - A journal line folded within its hour names a key that a live list
//     holds (a fold writes its list before it marks lines, and a complete
//     fold's list holds every journal key), unless a later fold retired
//     every list that held it (revive.go's tooLate: a retirement after the
//     line was folded). The live lists are read; lines whose keys no live
//     list holds mean the listing left out a live list. The partial list
//     the lines' fold would have written is looked up by name (a complete
//     list's name cannot be derived); whether or not it is found, the
//     collection stops. It stops only while such lines are in their hour,
//     so a damaged store refuses collections for an hour at most.
//
// It also collects, from the journal and the live lists, the keys of the
// objects to forget (forgetPlan.plan's second source).
func checkPackListing(ctx context.Context, st *store.Store, sn *store.Snapshot, now int64, forget *forgetPlan, w *warner) (*crossCheck, error) {
	cc := &crossCheck{}
	listed := make(map[string]bool, len(sn.Lists))
	for _, l := range sn.Lists {
		listed[l.Name] = true
	}
	var lookup []string
	for name, at := range sn.RetiredSet() {
		if _, _, isList := format.ParseEntryListName(name); isList && !listed[name] && !format.RetiredOverAnHourAgo(at, now) {
			lookup = append(lookup, name)
		}
	}
	slices.Sort(lookup)
	there, _, err := existing(ctx, st, lookup)
	if err != nil {
		return nil, fmt.Errorf("look up retired lists the pack listing did not show: %w", err)
	}
	if len(there) > 0 {
		return nil, fmt.Errorf("%w: the retired record names %s, retired within the hour, which exists, but the pack listing did not show it%s; nothing was deleted (run gc again; if it persists, the server's listing is wrong)",
			ErrIncompletePackListing, there[0], more(len(there)-1))
	}

	// The journal's folded lines and the forgotten objects' keys.
	folded := map[string]bool{}
	groups := map[int64][]string{}
	for _, l := range sn.Journal {
		switch {
		case forget.names(l.Key):
			cc.named = append(cc.named, l.Key)
		case l.Folded() && !l.Expired(now):
			folded[l.Key] = true
			groups[l.FoldedAt] = append(groups[l.FoldedAt], l.Key)
		}
	}
	if len(folded) == 0 && len(forget.objects) == 0 {
		return cc, nil
	}
	held, undecodable, err := readLiveForPlan(ctx, st, sn, folded, forget, &cc.named)
	if err != nil {
		return nil, err
	}
	if undecodable {
		return cc, nil // what the lists hold cannot be known; the fold retires them
	}
	var newestRetired int64
	for _, r := range sn.Retired {
		if !format.IsForgottenName(r.Key) { // a forget record retires no list
			newestRetired = max(newestRetired, r.RetiredAt)
		}
	}
	for _, at := range slices.Sorted(maps.Keys(groups)) {
		keys := groups[at]
		unheld := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return held[k] })
		if len(unheld) == 0 || newestRetired > at {
			continue
		}
		id, _, err := format.EncodeEntryListSorted(sortedUnique(slices.Clone(keys)))
		if err != nil {
			return nil, fmt.Errorf("cross-check the pack listing: %w", err)
		}
		part := format.EntryListName(id, false)
		found := ""
		if !listed[part] {
			ok, err := st.Exists(ctx, part)
			if err != nil {
				return nil, fmt.Errorf("look up list %s, which journal lines folded at %d imply: %w", part, at, err)
			}
			if ok {
				found = fmt.Sprintf(" (%s, which they imply, exists)", part)
			}
		}
		return nil, fmt.Errorf("%w: journal lines folded at %d name %s%s, which no live list the pack listing showed holds: the listing left out the list that fold wrote%s; nothing was deleted (run gc again; this holds for the lines' hour at most)",
			ErrIncompletePackListing, at, unheld[0], more(len(unheld)-1), found)
	}
	return cc, nil
}

// readLiveForPlan reads every live list of sn once (GET, decoded as it
// streams) and returns which keys of folded a live list holds, appending
// to named the forgotten objects' keys the lists hold. A list that does
// not decode is reported (undecodable true); a list gone since the listing
// holds nothing.
func readLiveForPlan(ctx context.Context, st *store.Store, sn *store.Snapshot, folded map[string]bool, forget *forgetPlan, named *[]string) (held map[string]bool, undecodable bool, err error) {
	live := sn.LiveLists()
	held = map[string]bool{}
	var mu sync.Mutex
	err = forEach(ctx, len(live), func(ctx context.Context, i int) error {
		name := live[i].Name
		data, err := st.Get(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read live list %s: %w", name, err)
		}
		var mine, fk []string
		_, derr := format.DecodeEntryList(data, func(key []byte) error {
			if folded[string(key)] {
				mine = append(mine, string(key))
			}
			if forget.names(string(key)) {
				fk = append(fk, string(key))
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if derr != nil {
			undecodable = true
			return nil
		}
		for _, k := range mine {
			held[k] = true
		}
		*named = append(*named, fk...)
		return nil
	})
	return held, undecodable, err
}
