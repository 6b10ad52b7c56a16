package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialsFileIsPrivateAndSetsTheEnvironment (issue 41, 10): the
// mount's credentials file sets the variables it lists, and is refused
// when others may read it or when it is a link.
func TestCredentialsFileIsPrivateAndSetsTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "creds")
	t.Setenv("OXYFS_TEST_SECRET", "")
	if err := os.WriteFile(p, []byte("# store\nOXYFS_TEST_SECRET=pa^ss wo\"rd=\\\r\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := loadCredentialsFile(p); err == nil || !strings.Contains(err.Error(), "read by others") {
		t.Errorf("a credentials file others may read: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := loadCredentialsFile(link); err == nil {
		t.Error("a credentials file through a link was read")
	}
	if err := loadCredentialsFile(p); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("OXYFS_TEST_SECRET"); got != `pa^ss wo"rd=\` {
		t.Errorf("OXYFS_TEST_SECRET = %q", got)
	}
	if err := os.WriteFile(p, []byte("not a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := loadCredentialsFile(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a malformed credentials file: %v", err)
	}
}

// FuzzParseCredentials: any text parses or fails without a panic, every
// name parsed is a valid environment name, and no value spans lines.
func FuzzParseCredentials(f *testing.F) {
	for _, s := range []string{"", "A=b", "# c\n\nA_1=x=y\r\n", "1A=b", "=b", "A b=c", "A=\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vars, err := parseCredentials(s)
		if err != nil {
			return
		}
		for _, kv := range vars {
			if !envName(kv[0]) || strings.ContainsAny(kv[1], "\n") {
				t.Fatalf("parseCredentials(%q) gave %q", s, kv)
			}
		}
	})
}
