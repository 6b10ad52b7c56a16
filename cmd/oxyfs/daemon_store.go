package main

import (
	"os"
	"strings"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// envChildStore carries a detached mount's store URL to its child when the
// URL holds a secret (issue 41, 10): the child's argv, which every local
// user reads (ps, /proc/PID/cmdline), holds the URL redacted; its
// environment, which only its owner and root read, holds the URL itself.
const envChildStore = "OXYFS_MOUNT_STORE_URL"

// hideStoreURL returns the arguments of a detached mount's child (`mount
// ...`) with the store URL (the first argument holding "://" that is no
// flag nor -o's value) redacted, and the environment that carries it, when
// redacting changes it.
func hideStoreURL(args []string) ([]string, []string) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "-o" || a == "--options" {
			i++
			continue
		}
		shown := termsafe.Redact(a)
		if !strings.Contains(a, "://") || strings.HasPrefix(a, "-") || shown == a {
			continue
		}
		out := append([]string(nil), args...)
		out[i] = shown
		return out, []string{envChildStore + "=" + a}
	}
	return args, nil
}

// childStoreURL is the store URL a mount uses for its argument shown: the
// one envChildStore carries when this is a detached child whose argument
// is that URL redacted, else shown itself. The variable is removed, so
// nothing the mount starts inherits it.
func childStoreURL(shown string) string {
	v, ok := os.LookupEnv(envChildStore)
	if !ok {
		return shown
	}
	os.Unsetenv(envChildStore)
	if os.Getenv(envDaemonChild) != "" && termsafe.Redact(v) == shown {
		return v
	}
	return shown
}
