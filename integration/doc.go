// Package integration holds oxyfs's end-to-end tests: the oxyfs binary,
// built once by TestMain, run as separate OS processes against a real S3
// server (versitygw, started by testkit/testservers) and mounted for real
// with FUSE, then driven with the coreutils a user would run (find, ls, stat,
// cat, cp, touch, du) and with raw syscalls where the errno matters.
//
// The figures the product promises (DESIGN §7: an open costs 1 LIST and
// live lists + 2 GETs; browsing a folded store sends no LIST; at most one
// GET per signature read) are read from the mount's own .oxy/status, whose
// request counters are exact, so the assertions are on counts, never on
// times.
//
// Run: go test -race -count=1 ./integration/ (a missing server or FUSE
// skips locally and fails with CI=true or OXYFS_REQUIRE=fuse,s3,...).
package integration
