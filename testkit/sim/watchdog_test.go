package sim

import (
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestEveryMountingTestHasAWatchdog: every test of this package that can
// reach a mount — through Run, which mounts in byte mode — runs under a
// watchdog (testwatch.Arm, its mount point given to Watch.Abort through
// Config.Mounted), so a hang fails it by name with every goroutine's stack.
func TestEveryMountingTestHasAWatchdog(t *testing.T) {
	bad, err := testwatch.UnarmedThrough(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range bad {
		t.Errorf("%s reaches a mount without a watchdog: call testwatch.Arm first", name)
	}
}
