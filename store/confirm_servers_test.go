package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
)

// TestCASConfirmsWhatItWrote: a journal update whose conditional PUT the
// server acknowledges without keeping it is not reported written
// (ErrUnconfirmed): the answer's MD5 is not the bytes', and the journal
// read back is still at the version replaced. Honest writes are confirmed
// by their answer or by reading back, and say which.
func TestCASConfirmsWhatItWrote(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{Layout: store.LayoutBucket})
			ctx := context.Background()
			line := func(s string) func([]byte, bool) ([]byte, error) {
				return func(old []byte, _ bool) ([]byte, error) { return append(old[:len(old):len(old)], s...), nil }
			}
			if _, err := st.UpdateRecord(ctx, format.JournalKey, line("sig/ab/cd/one\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := st.UpdateRecord(ctx, format.JournalKey, line("sig/ab/cd/two\n")); err != nil {
				t.Fatal(err)
			}
			byAnswer, byReadBack := st.WritesConfirmed()
			t.Logf("%s: honest writes confirmed by their answer %d, by reading back %d", kind, byAnswer, byReadBack)
			if byAnswer+byReadBack < 2 {
				t.Fatalf("2 writes, %d confirmed", byAnswer+byReadBack)
			}
			p.Set(lyingproxy.DropWrites(format.JournalKey))
			_, err := st.UpdateRecord(ctx, format.JournalKey, line("sig/ab/cd/dropped\n"))
			if !errors.Is(err, store.ErrUnconfirmed) {
				t.Fatalf("an update the server acknowledged and dropped: %v, want ErrUnconfirmed", err)
			}
			p.Set()
			data, _, err := st.ReadRecord(ctx, format.JournalKey)
			if err != nil || string(data) != "sig/ab/cd/one\nsig/ab/cd/two\n" {
				t.Fatalf("journal %q, %v", data, err)
			}
		})
	}
}
