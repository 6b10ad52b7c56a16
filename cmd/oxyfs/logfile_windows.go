package main

import "os"

// openLogFile opens the --log-file for appending, created private where the
// system's ACLs allow (Windows has no O_NOFOLLOW nor owner check here).
func openLogFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}
