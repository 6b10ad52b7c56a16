package main

import (
	"fmt"
	"os"
	"strings"
)

// loadCredentialsFile sets the environment variables that the mount's
// credentials file (-o credentials_file=PATH, --credentials-file) lists,
// before the store is opened (issue 41, 10): the store's credentials
// (AWS_SECRET_ACCESS_KEY, AZURE_STORAGE_KEY, ...) then live in a file only
// its owner reads, not in /etc/fstab, which every local user reads, nor in
// a command line. The file must be a regular file (a link is not
// followed) that this user or root owns, readable by no one else
// (openPrivateFile).
func loadCredentialsFile(path string) error {
	data, err := readPrivateFile(path)
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	vars, err := parseCredentials(string(data))
	if err != nil {
		return fmt.Errorf("credentials file %s: %w", path, err)
	}
	for _, kv := range vars {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("credentials file %s: set %s: %w", path, kv[0], err)
		}
	}
	return nil
}

// parseCredentials parses lines NAME=VALUE (the value as written, to the
// end of the line; a trailing \r dropped); blank lines and lines starting
// with # are skipped. NAME is letters, digits and _, not starting with a
// digit. A line that breaks a rule fails it, naming its number only (a
// value is a secret).
func parseCredentials(text string) ([][2]string, error) {
	var out [][2]string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, value, ok := strings.Cut(t, "=")
		if !ok || !envName(name) {
			return nil, fmt.Errorf("line %d: want NAME=VALUE", i+1)
		}
		out = append(out, [2]string{name, value})
	}
	return out, nil
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
