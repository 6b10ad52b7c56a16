package integration

import (
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestEveryMountingTestHasAWatchdog: every test and benchmark of this
// package that mounts runs under a watchdog (testwatch.Arm, in testMount
// and benchMount), so a hang fails it by name with every goroutine's stack.
func TestEveryMountingTestHasAWatchdog(t *testing.T) {
	bad, err := testwatch.Unarmed(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range bad {
		t.Errorf("%s mounts without a watchdog: mount through a helper that calls testwatch.Arm", name)
	}
}
