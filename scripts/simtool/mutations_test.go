package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryMutationApplies: each patch in mutations/ applies to the tree as
// it is (scripts/simulate --mutate copies the tree and applies it there). A
// patch that no longer applies was a mutation the code moved away from:
// remake it where the guard now lives.
func TestEveryMutationApplies(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "scripts", "simtool", "mutations", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("no mutations found: %v", err)
	}
	for _, p := range patches {
		out, err := exec.Command("git", "-C", root, "apply", "--check", "-p1", p).CombinedOutput()
		if err != nil {
			t.Errorf("%s no longer applies: %v\n%s", filepath.Base(p), err, strings.TrimSpace(string(out)))
		}
	}
}
