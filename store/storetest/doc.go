// Package storetest is the conformance kit every store backend runs, in the
// manner of gocloud's drivertest and restic's backend suite: a backend's own
// test file plugs in a Harness and calls RunConformanceTests.
//
// The kit proves the behaviour the rest of oxyfs stands on, against the real
// backend (for S3, Azure and GCS a real server process, never an in-memory
// fake): compare-and-swap under contention ends at the exact count, a
// create-only race has exactly one winner, a lost race surfaces as
// store.ErrConflict, paging returns each key exactly once, prefixes are
// isolated, a 255-byte value (DESIGN §3's longest) behaves as any key,
// missing keys map to store.ErrNotFound, and the request counters
// match the requests sent (on S3, the counters are also checked against the
// requests counted on the wire).
//
// The kit is split by area: basic.go (keys and counters), records.go (CAS),
// lists.go (paging and prefixes).
package storetest
