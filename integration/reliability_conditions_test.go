package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestReliabilityConditionsIgnored (issue 36): two `oxyfs put` loops on one
// store, on versitygw, fake-gcs-server and Azurite, each behind a proxy
// that strips the conditions of every write (a server that accepts
// If-Match / If-None-Match / ifGenerationMatch and ignores them). Every put
// must either be refused before writing anything (exit 1, the one line
// saying what the server ignored and that nothing was written) or lose
// nothing: every put that exited 0 is in the journal and in a fresh
// reader's `oxyfs ls -R`. Through the same proxy made honest, the same
// loops write normally and lose nothing.
func TestReliabilityConditionsIgnored(t *testing.T) {
	t.Parallel()
	const writers, putsEach = 2, 6
	for _, kind := range []string{"s3", "gcs", "azure"} {
		for _, strip := range []bool{true, false} {
			name := kind + map[bool]string{true: "/stripped", false: "/honest"}[strip]
			t.Run(name, func(t *testing.T) {
				srv := testservers.Start(t, kind)
				p := lyingproxy.Start(t, srv.Kind, srv.URL)
				bucket := srv.NewBucket(t)
				url := p.StoreURL(bucket)
				st := openStore(t, bucket) // honest, not through the proxy
				if err := st.PutIfAbsent(context.Background(), format.JournalKey, nil); err != nil {
					t.Fatal(err) // an empty store, as oxyfs gen or init leaves it
				}
				if strip {
					p.Set(lyingproxy.StripConditions())
				}
				acked, refused := condPutLoops(t, srv, url, writers, putsEach)
				t.Logf("%s: %d puts acknowledged, %d refused; %d writes stripped", name, len(acked), refused, p.Stripped())
				if !strip && len(acked) != writers*putsEach {
					t.Errorf("honest server: %d of %d puts acknowledged", len(acked), writers*putsEach)
				}
				if strip && p.Stripped() == 0 {
					t.Errorf("the proxy stripped no condition")
				}
				if strip && refused != writers*putsEach {
					// Each process's probe finds the conditions ignored
					// before its first write.
					t.Errorf("stripping proxy: %d of %d puts refused, want every one", refused, writers*putsEach)
				}
				p.Set() // the checks read honestly
				if strip && len(acked) == 0 {
					// Refused before writing anything: the bucket holds the
					// empty journal only.
					var keys []string
					err := st.List(context.Background(), "", "", func(it store.ListItem) error { keys = append(keys, it.Key); return nil })
					if err != nil {
						t.Fatal(err)
					}
					if len(keys) != 1 || keys[0] != format.JournalKey {
						t.Errorf("every put was refused, yet the bucket holds %q", keys)
					}
				}
				journaled := map[string]bool{}
				for _, l := range journalLines(t, st) {
					journaled[l.Key] = true
				}
				var ls string
				if len(acked) > 0 {
					ls = mustOxyfs(t, srv, "ls", "-R", bucket, "sig").stdout
				}
				for _, key := range acked {
					if !journaled[key] {
						t.Errorf("put of %s exited 0, but the journal does not name it", key)
					}
					if !strings.Contains(ls, strings.TrimPrefix(key, "sig/")) {
						t.Errorf("put of %s exited 0, but a fresh oxyfs ls -R does not show it", key)
					}
				}
			})
		}
	}
}

// condPutLoops runs writers loops of putsEach `oxyfs put` each on
// url, in parallel, and returns the keys whose put exited 0 and how many
// were refused as the conditions probe refuses them. Any other failure
// fails the test.
func condPutLoops(t *testing.T, srv *testservers.Server, url string, writers, putsEach int) (acked []string, refused int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range putsEach {
				obj := fmt.Sprintf("%02x%s%04x", (w*64+i)%256, strings.Repeat("c", 58), w*1000+i)
				e := format.Entry{Kind: format.KindSig, Object: obj, Value: fmt.Sprintf("writer-%d", w)}
				src := relTempFile(t, "sig", []byte(fmt.Sprintf("signature %d of writer %d", i, w)))
				r := oxyfs(t, srv, "put", url, e.Key(), src)
				mu.Lock()
				switch {
				case r.code == 0:
					acked = append(acked, e.Key())
				case r.code == 1 && strings.Contains(r.stderr, "nothing was written") && strings.Contains(r.stderr, "the server ignored"):
					refused++
				default:
					t.Errorf("put %s: neither acknowledged nor refused by the probe:\n%s", e.Key(), r)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked, refused
}
