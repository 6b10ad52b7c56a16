package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// oxyfsBin is the oxyfs binary TestMain built for this run.
var oxyfsBin string

// buildTimeout bounds the one `go build` of the binary (a cold cache
// compiles every dependency).
const buildTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// envIntegrationBin names an oxyfs binary already built for this run: a
// test that runs this binary again (in a private mount namespace) passes
// its own, so the child builds nothing.
const envIntegrationBin = "OXYFS_INTEGRATION_BIN"

func runMain(m *testing.M) int {
	if bin := os.Getenv(envIntegrationBin); bin != "" {
		oxyfsBin = bin
		return testservers.Run(m)
	}
	tmp, err := os.MkdirTemp("", "oxyfs-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "oxyfs")
	if err := buildBinary(bin); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	oxyfsBin = bin
	return testservers.Run(m) // servers located before m.Run, stopped after it
}

// buildBinary builds ./cmd/oxyfs from the module root (found with go env
// GOMOD) into bin. Under -race the binary is built with -race too, so a data
// race in a mount serving real FUSE requests fails the test that ran it (the
// race detector makes the process exit 66).
func buildBinary(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("go env GOMOD: not inside a module (%q)", gomod)
	}
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/oxyfs")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), cmd.Dir, err, out)
	}
	return nil
}
