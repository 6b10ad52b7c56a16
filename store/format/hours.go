package format

import "time"

// The hour rules (spec §13.4, §13.7; DESIGN §3, §6): retired keys and folded
// journal lines live GracePeriod (an hour) for readers. Each rule is one
// function here, on wall milliseconds from one Clock; "over an hour" is
// strictly more than GracePeriod, so a key retired exactly an hour ago stays.

// gracePeriodMs is GracePeriod in wall milliseconds.
const gracePeriodMs = int64(GracePeriod / time.Millisecond)

// RetiredOverAnHourAgo reports whether a key retired at retiredAt was
// retired over an hour before now, so the next collection deletes it and
// drops its retired line (spec §13.7 "a collection deletes it an hour
// later"; DESIGN §3 "A key retired over an hour ago is deleted by the next
// collection").
func RetiredOverAnHourAgo(retiredAt, now int64) bool {
	return now-retiredAt > gracePeriodMs
}

// RetiredDueAt is the first wall ms at which RetiredOverAnHourAgo holds for
// a key retired at retiredAt.
func RetiredDueAt(retiredAt int64) int64 { return retiredAt + gracePeriodMs + 1 }

// JournalLineExpired reports whether a journal line folded at foldedAt is
// past its hour at now, so the next update of the journal drops it (spec
// §13.7 "The next update after a folded line's hour (§13.4) drops it"). An
// unfolded line (foldedAt 0) never expires.
func JournalLineExpired(foldedAt, now int64) bool {
	return foldedAt != 0 && now-foldedAt > gracePeriodMs
}

// Expired is JournalLineExpired of the line at now.
func (l JournalLine) Expired(now int64) bool { return JournalLineExpired(l.FoldedAt, now) }
