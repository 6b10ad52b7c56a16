package sim

import (
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/mapcopy"
)

// TestMain lets this test binary be the simulation's mapping child
// (mapcopy: a mapping of the mount is made and read in another process).
func TestMain(m *testing.M) {
	mapcopy.MaybeChild()
	os.Exit(m.Run())
}
