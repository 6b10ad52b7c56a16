package storetest

import (
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

// testConditionalRead checks ReadRecordIfChanged: one GET per call, whatever
// the answer; "unchanged" (nil data, the same version) exactly while the
// record is at the version given; the new bytes and the version ReadRecord
// reports once another handle changed it; "changed" with the zero Version
// once it is deleted; and absent-and-still-absent is unchanged.
func testConditionalRead(t *testing.T, h Harness) {
	ctx := context.Background()
	open := h.NewStore(t)
	r, w := open(t), open(t)
	const key = "pack-conformance-conditional"

	step := func(name string, v store.Version, wantChanged bool, wantData string) store.Version {
		t.Helper()
		before := r.Counts()
		data, nv, changed, err := r.ReadRecordIfChanged(ctx, key, v)
		if err != nil {
			t.Fatalf("%s: ReadRecordIfChanged: %v", name, err)
		}
		if d := r.Counts().Sub(before); d != (store.Counts{Get: 1}) {
			t.Errorf("%s: sent %v, want exactly one GET", name, d)
		}
		if changed != wantChanged {
			t.Fatalf("%s: changed = %v, want %v", name, changed, wantChanged)
		}
		if !changed {
			if data != nil || nv != v {
				t.Fatalf("%s: unchanged read returned %q, %+v; want nil data and the version given %+v", name, data, nv, v)
			}
			return nv
		}
		if string(data) != wantData {
			t.Fatalf("%s: data = %q, want %q", name, data, wantData)
		}
		_, cur, err := w.ReadRecord(ctx, key)
		must(t, err)
		if nv != cur {
			t.Fatalf("%s: version %+v, want the version ReadRecord reports %+v", name, nv, cur)
		}
		return nv
	}

	v := step("absent, still absent", store.Version{}, false, "")
	must(t, w.WriteRecord(ctx, key, []byte("one"), store.Version{}))
	v = step("created", v, true, "one")
	v = step("unchanged", v, false, "")
	v = step("unchanged again", v, false, "")
	must(t, w.WriteRecord(ctx, key, []byte("two"), v))
	old := v
	v = step("replaced by another handle", v, true, "two")
	if v == old {
		t.Fatalf("a replaced record kept its version %+v", v)
	}
	v = step("unchanged after the replace", v, false, "")
	step("at an older version", old, true, "two")
	must(t, w.Delete(ctx, key))
	v = step("deleted", v, true, "")
	if v != (store.Version{}) {
		t.Fatalf("a deleted record read as version %+v, want the zero Version", v)
	}
	step("still absent", v, false, "")
	checkWire(t, r)
	checkWire(t, w)
}
