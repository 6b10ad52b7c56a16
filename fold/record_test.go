package fold

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

func TestRewriteKeepsEveryBadLineVerbatimBeyondTheExamples(t *testing.T) {
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "junk %d\n", i)
		if i == 12 {
			b.WriteString("0 sig/ab/cd/alice\n\n")
		}
	}
	data := []byte(b.String())
	rec := format.ParseJournalRecord(data)
	bad := rec.Bad
	if bad.Count != 26 || len(bad.First) != format.MaxBadLineSamples {
		t.Errorf("bad = %d, %d examples; want 26 (25 junk, 1 blank), %d", bad.Count, len(bad.First), format.MaxBadLineSamples)
	}
	want := strings.Replace(string(data), "\n\n", "\n", 1) // the blank line carries nothing
	if got := string(rec.Text()); got != want {
		t.Errorf("rewrite =\n%s\nwant\n%s", got, want)
	}
}
