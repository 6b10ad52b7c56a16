// Package storefixture is for tests only: the store fixtures the tests of
// index, fold, fs and the commands share, one copy each. It writes a store
// the way the spec (§13.7) says writers and folds leave it: each entry's own
// object, entry lists, the journal and the retired record; and it reads the
// journal back and counts the requests a step sends (Delta).
//
// Every helper that can fail takes a testing.TB and fails the test
// (t.Fatal) on an error; a store it opens is closed at the test's cleanup.
// It imports store only, so the internal tests of index and fold (package
// index, package fold) can use it without an import cycle. Helpers that
// belong to one package's model stay in that package's helpers_test.go.
//
// Nothing outside _test.go files may import it.
package storefixture
