package fold

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestRetiredRecordCutInItsLastLine (user trial 52): a retired record
// whose last line lost its end (a write that failed) held a line that
// parsed as the retirement of a key no one wrote, a prefix of the live
// list it meant. check now names it as a line that does not parse, with
// the rule; fold --drop-malformed moves it out, and the fold that follows
// retires every list it read, the one the line meant included.
func TestRetiredRecordCutInItsLastLine(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "abcd", "base"))
		mustComplete(t, st)
		first := snapshot(t, st).LiveLists()
		write(t, st, ekey(format.KindSig, "abcd", "second"))
		mustComplete(t, st) // retires the first list
		old := readRecordText(t, st, format.RetiredKey)
		if len(first) != 1 || !strings.HasSuffix(old, " "+first[0].Name+"\n") {
			t.Fatalf("retired record %q, want its last line retiring %v", old, first)
		}
		// The write of the line that retired it failed half way.
		whole := old[strings.LastIndexByte(old[:len(old)-1], '\n')+1 : len(old)-1]
		cutLine := whole[:len(whole)-len(first[0].Name)/2]
		putRecord(t, st, format.RetiredKey, old[:len(old)-len(whole)-1]+cutLine)

		rep := mustCheck(t, st)
		if rep.OK() || problemWith(rep, CodeRetiredMalformedLine, "1 line that does not parse", cutLine, "cut") == "" || rep.RetiredBadLines != 1 {
			t.Fatalf("check of the cut record (retired bad lines %d):\n%s", rep.RetiredBadLines, rep)
		}
		if sn := snapshot(t, st); len(sn.UncertainLists()) != 1 || !errors.Is(sn.UncertainLists()[first[0].Name], format.ErrCutLine) {
			t.Fatalf("uncertain lists %v, want %s by the cut line", sn.UncertainLists(), first[0].Name)
		}

		var saved []string
		frep, err := Complete(ctx, st, Options{DropMalformed: true, SaveDropped: func(_ string, lines []string) error {
			saved = append(saved, lines...)
			return nil
		}})
		if err != nil || !slices.Equal(saved, []string{cutLine}) {
			t.Fatalf("fold --drop-malformed: %v, saved %q, want %q\n%s", err, saved, cutLine, frep)
		}
		now := readRecordText(t, st, format.RetiredKey)
		if strings.Contains(now, cutLine+"\n") || !strings.HasSuffix(now, "\n") || !strings.Contains(now, " "+first[0].Name+"\n") {
			t.Errorf("retired record after the repair %q: want the cut line gone, and %s retired by the fold", now, first[0].Name)
		}
		for _, l := range snapshot(t, st).LiveLists() {
			if l.Name == first[0].Name {
				t.Errorf("%s is live again after the repair", l.Name)
			}
		}
		if rep := mustCheck(t, st); !rep.OK() {
			t.Errorf("check after the repair:\n%s", rep)
		}
	})
}
