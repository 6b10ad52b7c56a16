// Package testkit holds nothing itself: its subpackages are oxyfs's test
// harness, used by the tests and by scripts/ (simtool, benchtool) and never
// by the product — boundary_test.go fails if any non-test file of the
// product (cmd, store, index, fold, fs, web, internal) imports one, so none
// of it can reach the oxyfs binary.
//
//   - sim: the model-based simulation (spec §13.7) with faults, concurrent
//     readers and mutations.
//   - testservers: the object-store servers the tests run (versitygw,
//     fake-gcs-server, Azurite), started per test binary.
//   - lyingproxy: an HTTP proxy that makes those servers lie (dropped
//     conditions, shifted Date, floods, dropped writes).
//   - blobtest: fault-injecting bucket wrappers.
//   - storefixture: small stores, lists, journals and records for tests.
//   - grammarcheck: fails the tests when a key or path is parsed outside
//     store/format.
//   - memtest: heap measurements for tests that bound memory.
//   - testdeps: what a test needs from the machine (FUSE, chromium, test
//     servers), skipping or failing as CI asks.
//   - testwatch: the watchdog every mounting test runs under.
//   - mapcopy: a mapping of a file on this process's own FUSE mount, made
//     and copied in a child process (a page fault on it here can hang the
//     runtime).
package testkit
