package journal

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// appendJournalRef is the journal update as a fold's rewrite does it:
// parse every line, drop the expired ones, add, format.
func appendJournalRef(old []byte, add []string, now int64) ([]byte, int) {
	rec := format.ParseJournalRecord(old)
	var dropped int
	rec.Lines, dropped = dropExpired(rec.Lines, now)
	for _, k := range add {
		rec.Add(format.JournalLine{Key: k})
	}
	return rec.Text(), dropped
}

// sameJournal: appendJournal keeps and drops exactly the lines the
// rewrite does (it keeps them verbatim: "00 k" stays "00 k" where the
// rewrite writes "0 k", which parses the same).
func sameJournal(t *testing.T, old []byte, add []string, now int64) {
	t.Helper()
	got, dropped, unf := appendJournal(old, add, now)
	want, wantDropped := appendJournalRef(old, add, now)
	gl, wl := format.ParseJournalRecord(got), format.ParseJournalRecord(want)
	if !reflect.DeepEqual(gl.Lines, wl.Lines) || dropped != wantDropped {
		t.Fatalf("journal %q + %q at %d:\n got %q (dropped %d)\nwant %q (dropped %d)", old, add, now, got, dropped, want, wantDropped)
	}
	parsed, _ := format.ParseJournal(want)
	if n := unfolded(parsed); unf < n {
		t.Fatalf("journal %q: %d unfolded counted, %d parse", old, unf, n)
	}
}

func TestAppendJournalMatchesRewrite(t *testing.T) {
	now := t0 + 2*time.Hour.Milliseconds()
	old := t0 // folded over an hour before now
	recent := now - time.Minute.Milliseconds()
	k1, k2, k3 := ekey(format.KindSig, "01"+strings.Repeat("a", 62), "alice"), ekey(format.KindSig, "02"+strings.Repeat("b", 62), "bob"), ekey(format.KindSig, "03"+strings.Repeat("c", 62), "carol")
	journal := strings.Join([]string{
		"0 " + k1,                // unfolded: kept
		itoa(old) + " " + k2,     // expired: dropped
		itoa(recent) + " " + k3,  // folded within the hour: kept
		"",                       // blank: dropped
		itoa(old) + " not-a-key", // old but bad: kept
		"0 " + k1 + "\r",         // CRLF: parses (issue 42), unfolded, kept verbatim
		"garbage",                // bad: kept
		"00 " + k3,               // leading zeros: unfolded, kept verbatim
	}, "\n") // no final newline
	got, dropped, unf := appendJournal([]byte(journal), []string{k2}, now)
	want := strings.Join([]string{"0 " + k1, itoa(recent) + " " + k3, itoa(old) + " not-a-key", "0 " + k1 + "\r", "garbage", "00 " + k3, "0 " + k2}, "\n") + "\n"
	// Unfolded: k1, k1 with CR, k3, k2.
	if string(got) != want || dropped != 1 || unf != 4 {
		t.Errorf("appendJournal = %q, dropped %d, unfolded %d\nwant %q, dropped 1, unfolded 4", got, dropped, unf, want)
	}
	sameJournal(t, []byte(journal), []string{k2}, now)
	sameJournal(t, nil, []string{k1}, now)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func FuzzAppendJournal(f *testing.F) {
	k := ekey(format.KindSig, "01"+strings.Repeat("a", 62), "alice")
	f.Add([]byte("0 "+k+"\n"+itoa(t0)+" "+k+"\n\ngarbage\n"), int64(2*time.Hour.Milliseconds()))
	f.Add([]byte(itoa(t0)+" x\r\n007 "+k), int64(time.Minute.Milliseconds()))
	f.Fuzz(func(t *testing.T, old []byte, after int64) {
		sameJournal(t, old, []string{k}, t0+after)
	})
}
