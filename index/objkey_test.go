package index

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// keySet is an entry set of sig objects with the given packed ids.
func keySet(ids [][]byte) *entrySet {
	s := &entrySet{vt: newVtab()}
	val := s.vt.add([]byte("alice"))
	ids = slices.Clone(ids)
	slices.SortFunc(ids, bytes.Compare)
	ids = slices.CompactFunc(ids, bytes.Equal)
	for _, ob := range ids {
		s.kinds[format.KindSig].add(ob, val, 0)
	}
	s.finish()
	return s
}

// TestObjectsByKeyMatchesAScan checks the binary search against a scan of
// every object, on ids made to share keys: short ones, zero bytes, keys
// of 1 to 64 bits.
func TestObjectsByKeyMatchesAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var ids [][]byte
	for range 3000 {
		ob := make([]byte, 2+r.IntN(10))
		for i := range ob {
			switch r.IntN(4) {
			case 0:
				ob[i] = 0
			case 1:
				ob[i] = byte(r.IntN(3))
			default:
				ob[i] = byte(r.Uint32())
			}
		}
		ids = append(ids, ob)
	}
	s := keySet(ids)
	k := &s.kinds[format.KindSig]
	for _, bits := range []uint{1, 4, 8, 12, 16, 20, 33, 59, 63, 64} {
		for i := 0; i < k.nObj(); i += 7 {
			key := packedKey(k.obj(i), bits)
			var want []string
			for j := 0; j < k.nObj(); j++ {
				if packedKey(k.obj(j), bits) == key {
					want = append(want, hex.EncodeToString(k.obj(j)))
				}
			}
			first, n := s.objectsByKey(format.KindSig, key, bits)
			obj := hex.EncodeToString(k.obj(first))
			if n != min(len(want), 2) || obj != want[0] {
				t.Fatalf("bits %d key %x: %q %d, want %q (%d)", bits, key, obj, n, want[0], len(want))
			}
			if k, ok := ObjectKey(obj, bits); !ok || k != key {
				t.Fatalf("ObjectKey(%q, %d) = %x %v, want %x", obj, bits, k, ok, key)
			}
		}
		// A key no object has.
		for range 50 {
			key := r.Uint64()
			if bits < 64 {
				key >>= 64 - bits
			}
			found := false
			for j := 0; j < k.nObj() && !found; j++ {
				found = packedKey(k.obj(j), bits) == key
			}
			if _, n := s.objectsByKey(format.KindSig, key, bits); (n > 0) != found {
				t.Fatalf("bits %d key %x: n %d, an object has it: %v", bits, key, n, found)
			}
		}
	}
	if _, n := s.objectsByKey(format.KindSeal, 0, 8); n != 0 {
		t.Fatalf("an empty kind found %d", n)
	}
}

func TestObjectKeyRefusesWhatIsNoKey(t *testing.T) {
	for _, c := range []struct {
		obj  string
		bits uint
	}{{"abc", 8}, {"ABCD", 8}, {"zz00", 8}, {"abcd", 0}, {"abcd", 65}} {
		if _, ok := ObjectKey(c.obj, c.bits); ok {
			t.Errorf("ObjectKey(%q, %d) ok", c.obj, c.bits)
		}
	}
	if k, ok := ObjectKey("abcd", 64); !ok || k != 0xabcd<<48 {
		t.Errorf("ObjectKey(abcd, 64) = %x %v", k, ok)
	}
}

// TestObjectsByKeyOfAView: the index's view answers for its set, not for
// an own write until a view holds it in its set, and not for a key too wide.
func TestObjectsByKeyOfAView(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	ix, _ := openIndex(t, st)
	key, _ := ObjectKey(a.Object, 59)
	obj, n, err := ix.ObjectsByKey(ctx, format.KindSig, key, 59, nil)
	if err != nil || n != 1 || string(obj) != a.Object {
		t.Fatalf("ObjectsByKey %q %d %v, want %q", obj, n, err, a.Object)
	}
	if only, err := ix.KeyFindsOnly(ctx, format.KindSig, a.Object, 59); !only || err != nil {
		t.Fatalf("KeyFindsOnly(%s) %v %v", a.Object, only, err)
	}
	if _, n, _ := ix.ObjectsByKey(ctx, format.KindReceipt, key, 59, nil); n != 0 {
		t.Fatalf("another kind found %d", n)
	}
	if _, n, _ := ix.ObjectsByKey(ctx, format.KindSig, 1<<59, 59, nil); n != 0 {
		t.Fatalf("a key wider than its bits found %d", n)
	}
	b := storefixture.Ent(format.KindSig, objB, "bob")
	if err := ix.Put(ctx, b, []byte("bob's sig")); err != nil {
		t.Fatal(err)
	}
	kb, _ := ObjectKey(b.Object, 59)
	if _, n, _ := ix.ObjectsByKey(ctx, format.KindSig, kb, 59, nil); n != 0 {
		t.Fatalf("an own write outside the set found %d", n)
	}
	if only, _ := ix.KeyFindsOnly(ctx, format.KindSig, b.Object, 59); only {
		t.Fatal("KeyFindsOnly found an own write outside the set")
	}
}
