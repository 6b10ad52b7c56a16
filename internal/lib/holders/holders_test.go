package holders

import (
	"os"
	"strings"
	"testing"
)

// TestOfNamesAnOpenDescriptor: a file held open under a directory
// is named with this process, and nothing is named once it is closed.
func TestOfNamesAnOpenDescriptor(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(dir + "/held")
	if err != nil {
		t.Fatal(err)
	}
	got := Of(dir)
	if !strings.Contains(got, "[this process]") || !strings.Contains(got, dir+"/held") {
		t.Errorf("holdersOf with a descriptor open: %q, want this process and %s/held", got, dir)
	}
	f.Close()
	if got := Of(dir); got != NoneNow {
		t.Errorf("holdersOf after close: %q, want no process", got)
	}
	// A sibling directory sharing the prefix is not under dir.
	g, err := os.Create(dir + "-sibling")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir + "-sibling")
	defer g.Close()
	if got := Of(dir); got != NoneNow {
		t.Errorf("holdersOf with only a sibling open: %q, want no process", got)
	}
}
