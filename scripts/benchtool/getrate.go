package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// getrate measures the server's own rate of signature GETs: it takes the
// store's sig/ keys from keyFile (NUL-separated, as `find sig -print0`
// writes them: a mount's paths are the keys) or, if keyFile is "", lists
// them (not timed), then GETs every one of them with workers requests in
// flight through store.Get, the call the mount's reads make, and prints
// the keys, the wall time and the rate. scripts/bench runs it
// beside the mount at each latency: the mount's `cat` is reported as a
// ratio to this rate, measured in the same run on the same server.
func getrate(ctx context.Context, url string, workers int, keyFile string) error {
	if workers < 1 {
		return fmt.Errorf("workers must be at least 1, not %d", workers)
	}
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	var keys []string
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return err
		}
		for _, k := range strings.Split(string(b), "\x00") {
			if k != "" {
				keys = append(keys, k)
			}
		}
	} else if err := st.List(ctx, format.KindSig.Prefix(), "", func(it store.ListItem) error {
		if !it.IsDir && strings.Count(it.Key, "/") == 3 {
			keys = append(keys, it.Key)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("list sig/: %w", err)
	}
	var next atomic.Int64
	var failed atomic.Int64
	var bytes atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				b, err := st.Get(ctx, keys[i])
				if err != nil {
					failed.Add(1)
					continue
				}
				bytes.Add(int64(len(b)))
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0).Seconds()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %d GETs failed", n, len(keys))
	}
	return printJSON(map[string]any{
		"keys": len(keys), "workers": workers, "bytes": bytes.Load(),
		"wall_s": wall, "per_s": float64(len(keys)) / wall,
	})
}
