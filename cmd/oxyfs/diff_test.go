package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestDiffLastFoldSaysWhen: `oxyfs diff --last-fold` names when the fold
// marked its journal lines both as the journal keeps it (ms, to find the
// lines in .oxy/journal) and as a time an auditor reads (RFC 3339 UTC).
func TestDiffLastFoldSaysWhen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writer := storefixture.Open(t, "file://"+dir, store.Options{Layout: store.LayoutBucket})
	key := storefixture.Ent(format.KindSig, strings.Repeat("ab", 32), "alice").Key()
	storefixture.PutObjects(t, writer, key)
	if _, err := journal.Append(ctx, writer, []string{key}); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, writer, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	sn, err := writer.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sides, err := index.LastFold(sn)
	if err != nil || sides.MarkedAt == 0 {
		t.Fatalf("last fold: %+v, %v; want one that marked a line", sides, err)
	}
	_, errOut, code := runCLI(t, "diff", "--last-fold", "file://"+dir)
	when := time.UnixMilli(sides.MarkedAt).UTC().Format(time.RFC3339)
	want := fmt.Sprintf("the journal lines it folded at %d (%s)", sides.MarkedAt, when)
	if code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("diff --last-fold: exit %d, stderr %q; want exit 0 and %q", code, errOut, want)
	}
}
