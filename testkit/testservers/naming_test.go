package testservers

import (
	"regexp"
	"strings"
	"testing"
)

func TestBucketName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	seen := map[string]bool{}
	for _, name := range []string{
		"TestX", "", "/", "Test/Sub_Test#01", "xn--punycode", "sthree-thing",
		"TestVeryLongName/with/many/sub/tests/that/goes/on/and/on/and/on/forever",
		"Ünïcödé/ テスト", "--a--b--",
	} {
		b := bucketName(name)
		if !valid.MatchString(b) || strings.Contains(b, "--") || strings.HasPrefix(b, "xn-") || strings.HasPrefix(b, "sthree") {
			t.Errorf("bucketName(%q) = %q: not a valid S3/Azure/GCS bucket name", name, b)
		}
		if seen[b] {
			t.Errorf("bucketName(%q) = %q: duplicate", name, b)
		}
		seen[b] = true
	}
}
