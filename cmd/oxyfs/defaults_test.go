package main

import (
	"testing"
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
