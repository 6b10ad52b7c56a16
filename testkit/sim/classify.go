package sim

import (
	"errors"
	"io"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/oxyfs/oxyfs/store"
)

type blobListOptions = blob.ListOptions

func isNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || gcerrors.Code(err) == gcerrors.NotFound
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func msDur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// Classes are the known defects a violation may be an instance of, by
// name (the lead's list, being fixed on main while this simulation was
// built). Anything else is NEW.
var Classes = map[string]string{
	"D1":  "gc --forget-objects leaves a forgotten object visible when the new set equals a list retired earlier (fold deferred)",
	"D2":  "Refresh only adds: a long-lived handle keeps showing forgotten keys after a refresh",
	"D2o": "after the D2 fix (a0bd309): a handle's own writes of a forgotten object stay in its overlay across refreshes",
	"F1":  "NEW: a collection that forgot objects and then failed (its fold did not run) leaves their deleted keys in the live complete list, shown by folded readers until the next fold",
	"D3":  "refresh trusts records that returned to the same bytes (ABA) and misses list changes",
	"D5":  "gc dry run plans the fold on the journal before gc drops expired lines",
	"D7":  "ghost entries: journal lines whose key does not exist, shown on a store that is not folded",
	"B1":  "bytes: a new open or read (handle, serve, mount read/pread/mmap) shows bytes that are no version the model allows",
	"B2":  "bytes: a reader held open across changes does not read one whole version (old or new)",
	"B3":  "bytes: stat on the mount says a size no allowed version has",
	"B4":  "bytes: a write refused on the mount did not stay refused (close succeeded or wrote bytes)",
	"O1":  ".oxy/journal or .oxy/retired on the mount is not the store's record right after a refresh",
	"E1":  "a read beside the operations failed, not for want of the entry (ESTALE on an open through the mount, ENODEV on a shared mapping, EIO)",
	"NEW": "not one of the known defects",
}

// classify names the known defect a non-view violation looks like.
func (s *sim) classify(v Violation) string {
	if v.Class != "" {
		return v.Class
	}
	switch v.Kind {
	case "gc-dry-run":
		return "D5"
	}
	return "NEW"
}

// violateView records a view that is not the model's, classified by the
// keys it gets wrong.
func (s *sim) violateView(kind string, missing, extra []string, detail string) {
	class := "NEW"
	allForgotten, allOwn := len(extra) > 0, len(extra) > 0
	anyGhost := false
	for _, k := range extra {
		if !s.ownEver[k] {
			allOwn = false
		}
		if !s.forgotten[k] {
			allForgotten = false
		}
		if s.m.e[k] == nil {
			anyGhost = true
		}
	}
	switch {
	case (kind == "handle-refresh" || kind == "handle-stale") && len(missing) == 0 && allForgotten && allOwn:
		class = "D2o"
	case (kind == "handle-refresh" || kind == "handle-stale") && len(missing) == 0 && allForgotten:
		class = "D2"
	case kind == "handle-refresh" && len(missing) > 0 && len(extra) == 0:
		class = "D3"
	case s.m.folded && len(missing) == 0 && allForgotten && s.failedForget:
		class = "F1"
	case s.m.folded && len(missing) == 0 && allForgotten:
		class = "D1"
	case !s.m.folded && len(missing) == 0 && anyGhost:
		class = "D7"
	}
	v := Violation{Kind: kind, Op: s.op, Detail: detail, Class: class}
	s.res.Violations = append(s.res.Violations, v)
	s.logf("   VIOLATION %s", v)
}
