package main

import (
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestMountOptionsTakeTheFlagsOfFstab: every -o option an fstab line may
// carry sets what its flag sets.
func TestMountOptionsTakeTheFlagsOfFstab(t *testing.T) {
	var mf mountFlags
	var c commonFlags
	if unknown, err := applyMountOptions(&mf, &c, "ro,allow_any_name,allow_overwrite,refresh=30s,create,noauto"); err != nil || len(unknown) > 0 {
		t.Fatalf("unknown options %q, error %v", unknown, err)
	}
	if !mf.readOnly || !mf.anyName || !mf.overwrite || mf.refresh.String() != "30s" || !c.create {
		t.Errorf("-o ro,allow_any_name,allow_overwrite,refresh=30s,create: %+v, create %v", mf, c.create)
	}
}

// TestLeafIDsAreOnUnlessTurnedOff: a mount gives entry files leaf ids by
// default; --leaf-ids=false and -o noleaf_ids turn them off, -o leaf_ids on.
func TestLeafIDsAreOnUnlessTurnedOff(t *testing.T) {
	testwatch.Arm(t) // `mount --help` mounts nothing, but it runs the mount command
	_, help, _ := runCLI(t, "mount", "--help")
	line := ""
	for l := range strings.Lines(help) {
		if strings.Contains(l, "--leaf-ids") {
			line = l
		}
	}
	if !strings.Contains(line, "(default true)") {
		t.Errorf("oxyfs mount --help says of --leaf-ids %q, want a flag that defaults to true", line)
	}
	for opts, want := range map[string]bool{"ro,noleaf_ids": false, "noleaf_ids,leaf_ids": true} {
		mf := mountFlags{leafIDs: true}
		var c commonFlags
		if unknown, err := applyMountOptions(&mf, &c, opts); err != nil || len(unknown) > 0 {
			t.Fatalf("-o %s: unknown options %q, error %v", opts, unknown, err)
		}
		if mf.leafIDs != want {
			t.Errorf("-o %s: leaf ids %v, want %v", opts, mf.leafIDs, want)
		}
	}
}
