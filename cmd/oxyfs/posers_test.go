package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"unicode"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestLsShowsPosersApart (issue 41, item 4): three signers that all showed
// as "signer-00" in `oxyfs ls by-signer` (a right-to-left override after the
// name, a zero width space in it) are three lines that show what they
// hold, escaped, and read back in a shell to the exact names.
func TestLsShowsPosersApart(t *testing.T) {
	posers := []string{"signer-00", "signer-00\u202e", "signer-0\u200b0"}
	ctx := context.Background()
	url := "file://" + t.TempDir()
	st, err := store.Open(ctx, url, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range posers {
		e := format.Entry{Kind: format.KindSig, Object: "ab" + strings.Repeat("01", 31), Value: s}
		if err := st.Put(ctx, e.Key(), []byte("signature by "+s)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, to read the names back: %v", err)
	}
	for _, args := range [][]string{{"ls"}, {"ls", "-l"}} {
		out, errOut, code := runCLI(t, append(args, "--layout", "bucket", url, "by-signer")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		seen := map[string]bool{}
		for _, l := range lines {
			for _, r := range l {
				if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) {
					t.Errorf("%v prints U+%04X raw: %q", args, r, l)
				}
			}
			seen[l] = true
		}
		if len(lines) != len(posers) || len(seen) != len(posers) {
			t.Fatalf("%v by-signer printed %q, want %d distinct lines", args, out, len(posers))
		}
		if args[len(args)-1] != "ls" {
			continue
		}
		for i, l := range lines {
			back, err := exec.Command(bash, "-c", "printf %s "+l).Output()
			if err != nil {
				t.Fatalf("bash printf %s: %v", l, err)
			}
			found := false
			for _, s := range posers {
				found = found || string(back) == s
			}
			if !found {
				t.Errorf("line %d %q reads back as %q, no signer's name", i, l, back)
			}
		}
	}
}
