package sim

import (
	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// scenarioObject is an object only opForgetJournalOnly writes, so that its
// entries are in no list when it forgets them.
const scenarioObject = "ee99"

// opForgetJournalOnly plays the sequences random operations rarely meet: a
// handle refreshed on a folded store writes entries of an object no list
// holds (journal lines only), refreshes, and a collection forgets that
// object. The collection's fold then finds the live list unchanged, so the
// handle's next refresh sees the same lists and a journal that lost lines:
// it must drop those entries (issue 12 item 2, "a refresh only adds"). Half
// the time a fold runs between the write and the collection, so that the
// collection's fold computes the set of the list that fold retired minutes
// earlier (item 1: it must revive it). The check after it holds the
// refreshed handle and every fresh reader to the model exactly.
func (s *sim) opForgetJournalOnly() error {
	s.logf("#%d scenario: fold, put %s through the handle, refresh, [fold,] forget it, refresh", s.op, scenarioObject)
	if err := s.opFold(); err != nil {
		return err
	}
	if err := s.h.Refresh(s.ctx); err != nil {
		return err
	}
	var ws []index.Write
	for _, k := range []format.Kind{format.KindSig, format.KindSeal} {
		e := format.Entry{Kind: k, Object: scenarioObject, Value: values[s.rng.IntN(len(values))]}
		ws = append(ws, index.Write{Entry: e, Data: s.sigData(k)})
	}
	if err := s.putThroughHandle(ws); err != nil {
		return err
	}
	if err := s.h.Refresh(s.ctx); err != nil {
		return err
	}
	if s.rng.IntN(2) == 0 {
		// Fold them into a list first: the collection's fold then computes
		// the set of the list this fold retires, minutes ago (issue 12
		// item 1: the fold must revive it, not defer and keep the list
		// that names the forgotten object).
		if err := s.opFold(); err != nil {
			return err
		}
	}
	f := fold.ForgetObject{Object: scenarioObject}
	if err := s.forgetOne(f); err != nil {
		return err
	}
	err := s.h.Refresh(s.ctx)
	if err == nil {
		s.exactHandle = "handle-refresh"
	}
	return err
}

// forgetOne runs gc --forget-objects of f, applied, and checks what it
// reports against the model (forgetDone).
func (s *sim) forgetOne(f fold.ForgetObject) error {
	s.noteForget([]fold.ForgetObject{f})
	rep, err := fold.Collect(s.ctx, s.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{f}, Apply: true, Warn: nopWarn})
	s.logf("#%d   gc --forget-objects %s --apply → %s", s.op, f, gcSummary(&rep))
	if err != nil {
		return s.forgetDone([]fold.ForgetObject{f}, nil, err)
	}
	return s.forgetDone([]fold.ForgetObject{f}, &rep, nil)
}
