package english

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 entries", 1: "1 entry", 2: "2 entries", -1: "-1 entries"} {
		if got := Count(n, "entry", "entries"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
