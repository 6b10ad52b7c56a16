package fileblob

import (
	"net/url"
	"testing"
)

// TestFileURLPathOnWindows: a file:// URL's path with a drive letter is
// that drive's path; the key components Windows reads as more than one
// name are refused.
func TestFileURLPathOnWindows(t *testing.T) {
	for in, want := range map[string]string{
		"file:///C:/oxy/store": `C:\oxy\store`,
		"file:///d:/s":         `d:\s`,
		"file:///oxy/store":    `\oxy\store`,
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := fileURLPath(u); got != want {
			t.Errorf("fileURLPath(%s) = %q, want %q", in, got, want)
		}
	}
	for _, key := range []string{`sig/a\b`, "sig/a:stream", "sig/../x"} {
		if _, err := winKeyParts(key); err == nil {
			t.Errorf("winKeyParts(%q) accepted it", key)
		}
	}
}
