// Package lib holds nothing itself: its subpackages are oxyfs's leaf
// helpers, each importing nothing of oxyfs, so that any package may use
// them without a cycle and none of them can grow a dependency on the store,
// the index or the folds unnoticed (leaf_test.go checks it):
//
//   - par: running work in parallel with a limit, the first error stopping
//     new work (errgroup with SetLimit).
//   - termsafe: terminal- and log-safe output (control characters escaped,
//     secrets redacted).
//   - english: counts and lists in words for messages.
//   - memtest: heap measurements for tests that bound memory.
//   - testdeps: what a test needs from the machine (FUSE, chromium, test
//     servers), skipping or failing as CI asks.
//   - mapcopy: copying a mapping of a file on this process's own FUSE
//     mount without touching it (a page fault there can hang the runtime).
//
// What stands above the index (metrics, refreshloop, sim, the test
// servers, storefixture, gen) stays in internal/ beside lib.
package lib
