package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// serveStore folds st, opens an index on it with ixOpts and serves it.
func serveStore(t *testing.T, st *store.Store, ixOpts index.Options, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, ixOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	srv := httptest.NewServer(Handler(ix, opts))
	t.Cleanup(srv.Close)
	return &fixture{st: st, ix: ix, srv: srv}
}

// bigSig is n bytes that are not all alike.
func bigSig(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}

// TestSignaturePageIsBounded: the page of a big signature shows its first
// SigPagePrefix bytes as hex and base64, its size, and a link to the whole;
// the page stays small and serving it holds no copy of the signature beside
// the cache's (index.OpenSig shares the cache's slice). Before, the page held the whole signature as hex and base64:
// 3⅓ times its size in the body, and more on the heap.
func TestSignaturePageIsBounded(t *testing.T) {
	const size = 16 << 20
	data := bigSig(size)
	big := format.Entry{Kind: format.KindSig, Object: objA, Value: "big"}
	st := storefixture.NewMem(t)
	if err := st.Put(context.Background(), big.Key(), data); err != nil {
		t.Fatal(err)
	}
	f := serveStore(t, st, index.Options{ReadAhead: -1}, Options{})
	// The bytes in the cache first: the page is measured without them.
	if _, got := f.get(t, keyURL(big), http.StatusOK); !bytes.Equal(got, data) {
		t.Fatal("raw bytes differ")
	}
	var page []byte
	var n int64
	peak := memtest.Peak(func() {
		resp, err := http.Get(f.srv.URL + keyURL(big) + "?view=page")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		page, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		rest, _ := io.Copy(io.Discard, resp.Body)
		n = int64(len(page)) + rest
	})
	t.Logf("page of a %d-byte signature: %d bytes, heap peak %.1f MiB", size, n, float64(peak)/memtest.MiB)
	shown := data[:SigPagePrefix]
	for _, want := range []string{
		`<td id="hex" class="b">` + hex.EncodeToString(shown) + `</td>`,
		`<td id="base64" class="b">` + base64.StdEncoding.EncodeToString(shown) + `</td>`,
		`<td id="size">` + strconv.Itoa(size) + ` bytes</td>`,
		`href="./big?download=1"`,
		`<p id="shown">The first ` + strconv.Itoa(SigPagePrefix) + ` of ` + strconv.Itoa(size) + ` bytes are shown`,
	} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("the page lacks %.200s…", want)
		}
	}
	// What the page may hold: the prefix as hex and as base64, and the
	// rest of the page (a few KiB).
	if limit := 2*SigPagePrefix + base64.StdEncoding.EncodedLen(SigPagePrefix) + 16<<10; n > int64(limit) {
		t.Errorf("the page is %d bytes, over %d", n, limit)
	}
	if limit := uint64(8 * memtest.MiB); peak > limit {
		t.Errorf("serving the page took %.1f MiB of heap, over %.1f MiB (no copy of the signature beside the cache's, and a few MiB)", float64(peak)/memtest.MiB, float64(limit)/memtest.MiB)
	}
}
