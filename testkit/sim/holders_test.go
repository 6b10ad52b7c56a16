package sim

import (
	"os"
	"strings"
	"testing"
)

// TestHoldersOfNamesAnOpenDescriptor: a file held open under a directory
// is named with this process, and nothing is named once it is closed.
func TestHoldersOfNamesAnOpenDescriptor(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(dir + "/held")
	if err != nil {
		t.Fatal(err)
	}
	got := holdersOf(dir)
	if !strings.Contains(got, "[this test process]") || !strings.Contains(got, dir+"/held") {
		t.Errorf("holdersOf with a descriptor open: %q, want this process and %s/held", got, dir)
	}
	f.Close()
	if got := holdersOf(dir); !strings.HasPrefix(got, "no process") {
		t.Errorf("holdersOf after close: %q, want no process", got)
	}
	// A sibling directory sharing the prefix is not under dir.
	g, err := os.Create(dir + "-sibling")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir + "-sibling")
	defer g.Close()
	if got := holdersOf(dir); !strings.HasPrefix(got, "no process") {
		t.Errorf("holdersOf with only a sibling open: %q, want no process", got)
	}
}
