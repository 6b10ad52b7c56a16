package store

import (
	"os"
	"testing"
)

// captureOutput runs fn with os.Stdout and os.Stderr sent to files and
// returns what was written to both (credentials_capture_unix_test.go
// redirects the descriptors themselves; Windows' standard handles are not
// redirected here).
func captureOutput(t *testing.T, fn func()) string {
	t.Helper()
	dir := t.TempDir()
	out, err := os.CreateTemp(dir, "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, out
	fn()
	os.Stdout, os.Stderr = stdout, stderr
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
