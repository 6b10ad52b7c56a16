// Package holders names the processes that keep a directory busy — an open
// descriptor under it, a working or root directory in it, a mapping of a
// file in it — so that a busy unmount can say what to close instead of
// only that something is open.
//
// Model: one pass over /proc at the time of the call (readlink of each
// process's cwd, root and fd/N; its maps). These are the kernel's names of
// what is held: reading them sends a FUSE server no request, so a mount's
// own daemon may call it on its mount. Processes that end during the pass,
// and processes of other users when the caller is not root, are skipped.
//
// Memory: the answer's text; nothing is kept between calls. Concurrency:
// none; calls are independent.
package holders
