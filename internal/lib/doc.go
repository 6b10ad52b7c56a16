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
//   - keylock: a lock per key, kept only while held or waited for.
//   - holders: which processes hold a directory busy (from /proc).
//   - hugepage: memory backed by transparent huge pages and faulted in at
//     once (a list's body as it arrives, the set's arrays at open).
//
// internal/ holds these leaves and nothing else (besides internal/tools,
// the modules that pin the linter and the release tools). What only the
// CLI uses lives under cmd/oxyfs/internal (metrics, refreshloop); the
// synthetic stores are store/storegen; the test harness (the simulation,
// the test servers, the lying proxy, fixtures, heap measurement, the
// watchdog) is the top-level testkit/, which no product package imports.
package lib
