// Package fileblob is the gocloud.dev/blob driver of oxyfs's file:// stores
// (it replaces gocloud's own fileblob, which skipped directories it could
// not read, followed symbolic links and could not write a 255-byte name).
// store opens it for a file:// URL (store/driver_file.go: Root, OpenURL);
// OpenBucket opens one on a directory for store.New.
//
// # Model
//
// A key is exactly the file root/key: no escaping, no .attrs sidecar, so a
// repository's .oxy/objects stays valid for other implementations. Listings
// fail on any error reading a directory or stating a file (a name that
// vanished is NotFound: the caller lists again); nothing is skipped but the
// driver's own temporary files (TempPrefix + 16 hex, IsTempName). No
// symbolic link below the root is followed (openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else an openat O_NOFOLLOW walk;
// path.go): a read, HEAD, write or delete through one is refused, and a
// listing returns a link or special file as an item whose As(*fs.FileMode)
// says what it is (IrregularName). That is Linux; macOS has no openat2 and
// no O_PATH and always walks with O_NOFOLLOW (path_darwin.go). Windows
// (driver_windows.go) has no openat: each component of a key is checked
// with Lstat and none may be a reparse point, the file is opened with
// FILE_FLAG_OPEN_REPARSE_POINT and must be the one checked; a key component
// holding \ or : names no file there. macOS and Windows are compile-checked
// in CI, not tested. Writes go to a short temporary name in the key's
// directory (255-byte names fit), synced, renamed over the key, the
// directory synced; a create-only write links it (one winner).
//
// # Memory
//
// A bucket holds its root and Options. A listing page holds the entries of
// the directories on its way and the page, and a descriptor per directory
// level: a listing enters no directory deeper than MaxDepth (walk.go),
// which it returns as one irregular item instead; a read streams from the
// file.
//
// # Concurrency
//
// A bucket is safe for concurrent use: it holds no mutable state. The
// openat2 probe runs once per process (openat2State, under openat2Probe, a
// leaf lock). Options are per bucket, so tests that inject faults or turn
// openat2 off run in parallel with every other bucket.
package fileblob

// Options tune one bucket. The zero value is what store opens.
type Options struct {
	// Fault, if set, runs before a listing reads a directory (op
	// "readdir", path: the directory's key prefix, "" for the root) or
	// stats a listed file (op "stat", path: the key); a non-nil error it
	// returns is taken for what the system call returned. It is how a
	// test run as root, which no permission bit stops, makes a directory
	// unreadable.
	Fault func(op, path string) error
	// NoOpenat2 resolves keys with the openat walk even where the kernel
	// has openat2 (tests of the walk older kernels use).
	NoOpenat2 bool
}
