// Package testdeps decides what a test does when something it needs from
// the machine is missing (FUSE, an object-store server, Chromium), and tells
// the user what was skipped.
//
// # Skip or fail
//
// [SkipOrFail] skips the test, or fails it when the dependency is required:
// when CI=true, or when OXYFS_REQUIRE (a comma-separated list such as
// "fuse,s3,azure,gcs,chromium", or "all") names it. CI sets both, so a CI
// run never skips for a missing dependency: it fails.
//
// # The skip summary
//
// `go test ./...` shows nothing of a package that passed, so a t.Skip
// message is invisible there and a run that tested nothing of S3 looks
// the same as one that did. Each skip is therefore recorded, and [Report]
// (called by [Main], or by TestMain after m.Run) prints one line per
// dependency at the end of the test binary:
//
//	oxyfs tests: skipped tests that need azure (3 in testkit/testservers, the first package to skip them): ...; set OXYFS_REQUIRE=azure to fail instead
//
// The go command runs the test binaries of several packages, in parallel,
// and captures their output. So that the user sees each line once, and
// sees it at all:
//
//   - A line is printed only by the first binary of a `go test` run that
//     skipped for that dependency: it claims the line by creating a marker
//     file with O_EXCL in $TMPDIR/oxyfs-test-skips-UID, named after the
//     go command's pid and start time (field 22 of /proc/PID/stat, which
//     makes a reused pid a different run) and the dependency. Markers older
//     than a day are removed.
//   - The line is written to the go command's own standard error,
//     /proc/PPID/fd/2 opened for appending, which is the user's terminal
//     (or whatever it was redirected to) and is not captured. A regular
//     file that the go command writes at its own offset (a shell's >, read
//     from /proc/PPID/fdinfo/2) is not opened anew, since the go command's
//     next output would overwrite the line: the go command's descriptor is
//     duplicated (pidfd_getfd(2)), so the line is written at the go
//     command's offset and moves it on. Where that is refused (a kernel
//     before 5.6, Yama's ptrace scope) the line goes to os.Stderr, where go
//     test shows it only for a package that fails or with -v.
//
// When the parent process is not the go command (a test binary run by hand
// or by another test) there is no run to share: every line goes to
// os.Stderr. Any error on the way (no /proc, a marker directory that cannot
// be made) is quiet and falls back to os.Stderr: the summary is a courtesy
// and never fails a test.
//
// [Notice] uses the same channel, once per run and key, for messages while
// tests run, such as a server being built on first use.
//
// # Concurrency
//
// SkipOrFail may be called from any goroutine; the records are guarded by a
// mutex. Test binaries coordinate through the O_EXCL marker files only.
package testdeps
