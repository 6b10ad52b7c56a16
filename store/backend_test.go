package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/fileblob"
	"github.com/oxyfs/oxyfs/store/storetest"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

func TestMain(m *testing.M) {
	if url := os.Getenv("OXYFS_CAS_CHILD"); url != "" {
		os.Exit(casChild(url))
	}
	testservers.Main(m)
}

func TestMemConformance(t *testing.T) {
	storetest.RunConformanceTests(t, storetest.HarnessFunc(func(t *testing.T) func(t *testing.T) *store.Store {
		b := memblob.OpenBucket(nil)
		t.Cleanup(func() { b.Close() })
		return func(t *testing.T) *store.Store {
			return store.New(b, "mem", "", store.Options{Layout: store.LayoutBucket})
		}
	}))
}

func TestFileConformance(t *testing.T) {
	storetest.RunConformanceTests(t, urlHarness(func(t testing.TB) string {
		return "file://" + t.TempDir()
	}))
}

func TestS3Conformance(t *testing.T) {
	srv := testservers.Start(t, "s3")
	storetest.RunConformanceTests(t, urlHarness(srv.NewBucket))
}

func TestAzureConformance(t *testing.T) {
	srv := testservers.Start(t, "azure")
	storetest.RunConformanceTests(t, urlHarness(srv.NewBucket))
}

// TestGCSConformance: GCS takes 1024-byte names, but the test server,
// fake-gcs-server on its filesystem backend, writes an object through a
// temporary file named "." + name + 19 digits ("file name too long" past 235
// bytes): the kit checks 235-byte values.
func TestGCSConformance(t *testing.T) {
	srv := testservers.Start(t, "gcs")
	storetest.RunConformanceTests(t, storetest.LimitValues(urlHarness(srv.NewBucket), 235))
}

// urlHarness opens every handle from the URL of one fresh store.
func urlHarness(newURL func(t testing.TB) string) storetest.Harness {
	return storetest.HarnessFunc(func(t *testing.T) func(t *testing.T) *store.Store {
		u := newURL(t)
		return func(t *testing.T) *store.Store {
			s, err := store.Open(context.Background(), u, store.Options{Layout: store.LayoutBucket})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestFileCASAcrossProcesses: the OS file lock serializes compare-and-swap
// between processes, not only goroutines. 4 processes × 4 goroutines × 25
// increments must end at exactly 400.
func TestFileCASAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	u := "file://" + dir
	const procs = 4
	var wg sync.WaitGroup
	errs := make([]error, procs)
	outs := make([][]byte, procs)
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "OXYFS_CAS_CHILD="+u)
			outs[i], errs[i] = cmd.CombinedOutput()
		}(i)
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	s, err := store.Open(context.Background(), u, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.ReadRecord(context.Background(), "pack-counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(procs * childWorkers * childIncrements); string(got) != want {
		t.Fatalf("counter = %s after %d processes, want %s", got, procs, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The record, and the writers' lock file, which has a temporary file's
	// name (no listing shows it, no key names it); no sidecar files.
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != fileblob.TempPrefix+"0000000000000000" || names[1] != "pack-counter" {
		t.Fatalf("store dir holds %q, want exactly the lock file and the record", names)
	}
}

const childWorkers, childIncrements = 4, 25

func casChild(u string) int {
	ctx := context.Background()
	s, err := store.Open(ctx, u, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var wg sync.WaitGroup
	failed := make(chan error, childWorkers)
	for w := 0; w < childWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < childIncrements; i++ {
				if _, err := storetest.Increment(ctx, s, "pack-counter"); err != nil {
					failed <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestS3ListPagesAreScanned: versitygw's list pages take the scanner's fast
// path (driver_s3_list.go), not the SDK's deserializer, and list every key.
func TestS3ListPagesAreScanned(t *testing.T) {
	srv := testservers.Start(t, "s3")
	ctx := context.Background()
	st, err := store.Open(ctx, srv.NewBucket(t), store.Options{Layout: store.LayoutBucket, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys := []string{"sig/00/aa/alice", "sig/00/aa/b&b", "sig/01/bb/carol", "sig/02/cc/<dave>", "sig/03/dd/erin", "seal/00/aa/v1", "sig/stray"}
	for _, k := range keys {
		if err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	scanned0, sdk0 := store.S3ListPages()
	var got []string
	if err := st.List(ctx, "sig/", "", func(it store.ListItem) error {
		got = append(got, it.Key)
		if it.Size != int64(len(it.Key)) {
			t.Errorf("%s: size %d, want %d", it.Key, it.Size, len(it.Key))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	if err := st.List(ctx, "sig/", "/", func(it store.ListItem) error {
		dirs = append(dirs, fmt.Sprintf("%s %v", it.Key, it.IsDir))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	scanned, sdk := store.S3ListPages()
	if want := fmt.Sprint([]string{"sig/00/aa/alice", "sig/00/aa/b&b", "sig/01/bb/carol", "sig/02/cc/<dave>", "sig/03/dd/erin", "sig/stray"}); fmt.Sprint(got) != want {
		t.Errorf("listed %v, want %v", got, want)
	}
	if want := fmt.Sprint([]string{"sig/00/ true", "sig/01/ true", "sig/02/ true", "sig/03/ true", "sig/stray false"}); fmt.Sprint(dirs) != want {
		t.Errorf("delimited listing %v, want %v", dirs, want)
	}
	n := st.Counts().List
	if scanned-scanned0 != n || sdk != sdk0 {
		t.Errorf("%d pages scanned and %d left to the SDK, want all %d scanned", scanned-scanned0, sdk-sdk0, n)
	}
}
