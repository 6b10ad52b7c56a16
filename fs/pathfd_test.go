package fs

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestPathFdOfAnOlderVersionIsStale: a path descriptor (O_PATH: no OPEN,
// so no handle keeps the node) held across another writer's re-sign and
// a refresh reaches the older version's node, whose name the kernel
// dropped: statx of it that asks the mount (AT_STATX_FORCE_SYNC, as
// stat --cached=never) is ESTALE once past the lookup's retry window —
// with leaf ids (a GETATTR of the older version's id) and without.
func TestPathFdOfAnOlderVersionIsStale(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	fd, err := unix.Open(srv.path(alice), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx); err != nil || stx.Size != uint64(len(f.sigs[alice.Key()])) {
		t.Fatalf("statx of the path descriptor: %d bytes, %v; want %d", stx.Size, err, len(f.sigs[alice.Key()]))
	}
	second := bytes.Repeat([]byte("2"), 77)
	if err := otherWriter(t, f).Put(ctx, alice, second); err != nil {
		t.Fatal(err)
	}
	refreshed(t, ix, srv)
	pastRetryWindow(srv, alice.Key())
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx)
	if !errors.Is(err, unix.ESTALE) {
		t.Errorf("statx of the path descriptor after the re-sign: %d bytes, %v; want ESTALE", stx.Size, err)
	}
	if got := statSize(t, srv.path(alice)); got != int64(len(second)) {
		t.Errorf("stat by name after the re-sign: %d bytes, want %d", got, len(second))
	}
}

// pastRetryWindow makes the lookups of the entry at key the kernel was
// given older than retryWindow (entryNode.retried): its go-fuse leaf's
// time, and with leaf ids the ring of lookups given.
func pastRetryWindow(srv *Server, key string) {
	if _, _, n := srv.kernelEntry(key); n != nil {
		n.lookedUp.Store(0)
	}
	if srv.leafs != nil {
		srv.leafs.ringMu.Lock()
		srv.leafs.ring = [leafRingSize]leafAt{}
		srv.leafs.ringMu.Unlock()
		for _, n := range srv.leafs.kept() {
			n.lookedUp.Store(0)
		}
	}
}
