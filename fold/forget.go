package fold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// ErrWrongAnswer is returned by a collection whose plan rests on answers
// that contradict each other or the request: a listing that returned a key
// outside the prefix asked for, or a key the listing just showed that a
// HEAD then answers 404 for (a lying server or a stale read). The
// collection stops before it changes or deletes anything.
var ErrWrongAnswer = errors.New("the server's answers contradict each other")

// forgetPlan is what forgetting objects deletes.
type forgetPlan struct {
	objects map[string][format.NumKinds]bool // object -> kinds forgotten
	keys    []string                         // keys to delete, sorted: each listed (or the older one-list key) and found by a HEAD
}

// names reports whether an entry key belongs to a forgotten object.
func (p *forgetPlan) names(key string) bool {
	if len(p.objects) == 0 {
		return false
	}
	e, err := format.ParseKey(key)
	if err != nil {
		return false
	}
	kinds, ok := p.objects[e.Object]
	return ok && kinds[e.Kind]
}

// newForgetPlan records the objects and kinds to forget.
func newForgetPlan(objs []ForgetObject) *forgetPlan {
	p := &forgetPlan{objects: map[string][format.NumKinds]bool{}}
	for _, f := range objs {
		kinds := p.objects[f.Object]
		for _, k := range f.kinds() {
			kinds[k] = true
		}
		p.objects[f.Object] = kinds
	}
	return p
}

// plan finds the keys of every object to forget from two sources that must
// agree (adr-0055 D6: nothing is deleted that was not planned, and nothing
// is planned on one answer's word):
//
//   - the listing of <kind>/<hh>/<rest>/ for each kind forgotten, and the
//     older one-list key if a HEAD finds it. Every listed key must lie
//     under the prefix asked for and parse as an entry of that object and
//     kind; one that does not (a server that ignored the prefix) stops the
//     plan. Every listed key is then looked up (HEAD): a 404 for a key the
//     listing just showed stops the plan too (a lie or a stale read);
//   - named: the keys of the forgotten objects the journal and the live
//     lists hold. One the listing left out is looked up: if it exists, the
//     listing was wrong, and the plan stops (ErrIncompleteListing); if it
//     is gone, there is nothing to delete.
//
// So every key planned is an entry (or the older list) of a forgotten
// object that a HEAD found, and what the dry run reports is exactly what
// the collection deletes.
func (p *forgetPlan) plan(ctx context.Context, st *store.Store, named []string) error {
	pl := &planning{ctx: ctx, st: st, p: p, named: named}
	for _, step := range []func() error{pl.listObjects, pl.confirmListed, pl.confirmNamed} {
		if err := step(); err != nil {
			return err
		}
	}
	p.keys = sortedUnique(append(p.keys, pl.listed...))
	return nil
}

// planning is a forget plan as it goes, each field set by the step named.
type planning struct {
	ctx context.Context
	st  *store.Store
	p   *forgetPlan // listObjects adds the older one-list keys a HEAD found to p.keys
	// named: the keys of the forgotten objects the journal and the live
	// lists hold (the caller's, not sorted).
	named []string
	// listObjects: the entry keys listed under the forgotten objects'
	// prefixes, sorted, unique.
	listed []string
}

// listObjects lists <kind>/<hh>/<rest>/ for each object and kind forgotten,
// every key checked to be an entry of that object and kind (ErrWrongAnswer
// if not), and looks up (HEAD) the older one-list key of each.
func (pl *planning) listObjects() error {
	type job struct {
		object string
		kind   format.Kind
	}
	var jobs []job
	for obj, kinds := range pl.p.objects {
		for _, k := range format.Kinds {
			if kinds[k] {
				jobs = append(jobs, job{obj, k})
			}
		}
	}
	var mu sync.Mutex // guards listed and p.keys while the workers run
	var listed []string
	err := forEach(pl.ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		prefix := format.Entry{Kind: j.kind, Object: j.object}.Key() // "<kind>/<hh>/<rest>/"
		var keys []string
		if err := list(ctx, pl.st, prefix, "", func() { keys = keys[:0] }, func(it store.ListItem) error {
			if it.IsDir {
				return nil
			}
			e, err := format.ParseKey(it.Key)
			if !strings.HasPrefix(it.Key, prefix) || err != nil || e.Kind != j.kind || e.Object != j.object {
				return fmt.Errorf("%w: listing %s returned %s, which is not an entry of the forgotten object (a server that ignores the prefix?); nothing was deleted", ErrWrongAnswer, prefix, it.Shown())
			}
			keys = append(keys, it.Key)
			return nil
		}); err != nil {
			return fmt.Errorf("forget %s: %w", prefix, err)
		}
		legacy := format.LegacyKey(j.kind, j.object)
		ok, err := pl.st.Exists(ctx, legacy)
		if err != nil {
			return fmt.Errorf("forget %s: %w", legacy, err)
		}
		mu.Lock()
		listed = append(listed, keys...)
		if ok {
			pl.p.keys = append(pl.p.keys, legacy)
		}
		mu.Unlock()
		return nil
	})
	pl.listed = sortedUnique(listed)
	return err
}

// confirmListed looks up (HEAD) every listed key: a 404 for a key the
// listing just showed is ErrWrongAnswer.
func (pl *planning) confirmListed() error {
	return forEach(pl.ctx, len(pl.listed), func(ctx context.Context, i int) error {
		ok, err := pl.st.Exists(ctx, pl.listed[i])
		if err != nil {
			return fmt.Errorf("forget %s: %w", pl.listed[i], err)
		}
		if !ok {
			return fmt.Errorf("%w: the listing showed %s, and a HEAD of it answers 404 (a lying server or a stale read); nothing was deleted", ErrWrongAnswer, pl.listed[i])
		}
		return nil
	})
}

// confirmNamed looks up (HEAD) the keys of the forgotten objects the
// journal and the live lists name that the listing left out: one that
// exists is ErrIncompleteListing; one gone needs no deletion.
func (pl *planning) confirmNamed() error {
	_, unlisted := mergeKeys(pl.listed, sortedUnique(slices.Clone(pl.named)))
	return forEach(pl.ctx, len(unlisted), func(ctx context.Context, i int) error {
		ok, err := pl.st.Exists(ctx, unlisted[i])
		if err != nil {
			return fmt.Errorf("forget %s: %w", unlisted[i], err)
		}
		if ok {
			prefix := unlisted[i]
			if e, err := format.ParseKey(prefix); err == nil {
				prefix = format.Entry{Kind: e.Kind, Object: e.Object}.Key()
			}
			return fmt.Errorf("%w: the journal or a live list names %s, which exists, but listing %s did not show it; nothing was deleted (run gc again; if it persists, the server's listing is wrong)", ErrIncompleteListing, unlisted[i], prefix)
		}
		return nil
	})
}

// deleted is what deleteKeys did.
type deleted struct {
	gone    []string // deleted, and a HEAD then found them gone
	missing []string // the DELETE answered 404, and a HEAD found them gone
	kept    []string // a HEAD after the DELETE still found them: failed deletions
}

// deleteKeys deletes keys, up to workers at a time, and confirms each
// deletion with a HEAD (adr-0055 D6: a DELETE that answers success is not
// proof: a server may answer 204 and keep the object). A key a HEAD still
// finds is a failed deletion (kept), whatever the DELETE answered; the
// caller changes no record on its strength. Each list is sorted. After a
// failed request no further deletion starts.
func deleteKeys(ctx context.Context, st *store.Store, keys []string, prog *progress, phase string) (d deleted, err error) {
	var mu sync.Mutex
	err = forEach(ctx, len(keys), func(ctx context.Context, i int) error {
		derr := st.Delete(ctx, keys[i])
		if derr != nil && !errors.Is(derr, store.ErrNotFound) {
			return derr
		}
		still, err := st.Exists(ctx, keys[i])
		if err != nil {
			return fmt.Errorf("confirm deletion: %w", err)
		}
		mu.Lock()
		switch {
		case still:
			d.kept = append(d.kept, keys[i])
		case derr == nil:
			d.gone = append(d.gone, keys[i])
		default:
			d.missing = append(d.missing, keys[i])
		}
		n := len(d.gone) + len(d.missing) + len(d.kept)
		mu.Unlock()
		prog.report(int64(n), int64(len(keys)), phase)
		return nil
	})
	slices.Sort(d.gone)
	slices.Sort(d.missing)
	slices.Sort(d.kept)
	if err == nil && len(d.kept) > 0 {
		err = fmt.Errorf("%w: %d keys still there after their DELETE answered (%s%s); their records are left as they were",
			ErrDeleteFailed, len(d.kept), d.kept[0], more(len(d.kept)-1))
	}
	return d, err
}

// ErrDeleteFailed is a deletion a HEAD does not confirm: the DELETE
// answered, yet a HEAD still finds the key.
var ErrDeleteFailed = errors.New("deletion not confirmed")

// more formats ", and n more" for n > 0.
func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(", and %d more", n)
}

// existing returns the keys a HEAD finds, sorted, and those it does not: a
// dry run names only keys that exist (DESIGN §6: it shows exactly what
// would be deleted).
func existing(ctx context.Context, st *store.Store, keys []string) (there, gone []string, err error) {
	ok := make([]bool, len(keys))
	err = forEach(ctx, len(keys), func(ctx context.Context, i int) error {
		var err error
		ok[i], err = st.Exists(ctx, keys[i])
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for i, k := range keys {
		if ok[i] {
			there = append(there, k)
		} else {
			gone = append(gone, k)
		}
	}
	return there, gone, nil
}
