//go:build !linux

package store

// mapSlab maps nothing here: slabs are of the Go heap.
func mapSlab(int) ([]byte, bool) { return nil, false }

// unmapSlab is never called here.
func unmapSlab([]byte) {}
