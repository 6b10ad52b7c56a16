// Command benchtool holds the measurements of scripts/bench that a shell
// cannot make well: an S3 bucket, an index open measured from the runtime,
// concurrent writers, round trips of this machine, and the report.
//
//	benchtool mkbucket ENDPOINT BUCKET             create a bucket (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)
//	benchtool genlist STORE N [SEED]               write a folded store's complete list of N generated entries, and nothing else
//	benchtool genfolded STORE N [SEED [LINES]]     the same and a journal of the last LINES entries (default all) as folded lines: a store right after its fold
//	benchtool open STORE [REPEAT] [CACHEDIR]       open the index REPEAT times (default 5): JSON of time, heap and requests; with CACHEDIR (emptied first) through a list cache there: the first open fills it, the rest reopen
//	benchtool mountmem STORE DIR [STEPS [PROFILE]] mount in this process as oxyfs mount does; memory once serving and after each of STEPS (find,ls-lR,du,churn; OXYFS_LEAF_IDS=1: leaf ids): JSON lines
//	benchtool write DIR WRITERS COUNT SIGNER       COUNT signatures written through a mount by WRITERS goroutines: JSON
//	benchtool put OXYFS STORE WRITERS COUNT SIGNER [BATCH]  the same through `oxyfs put` processes (BATCH entries each, default 1)
//	benchtool putindex STORE WRITERS COUNT SIGNER  the same with index.Put in this process (no FUSE, no process per write): JSON
//	benchtool listrate STORE                        what the server lists: sig/ page after page, and sig/<hh>/ prefixes 1, 2, 4, 8 at a time: JSON
//	benchtool putkey STORE KEY FILE                 one PUT of KEY with FILE's bytes (a store state a script sets up)
//	benchtool pingpong                              pipe round trips between two processes, same CPU and cross CPU: JSON
//	benchtool loopback N CONNS                      N request/response round trips of a signature's size over loopback TCP, bare (no HTTP client), for each number of connections in CONNS (1,4,8): client CPU and wall each, JSON
//	benchtool statloop PATH N                       N stats of PATH (a name that does not exist: one LOOKUP each): JSON
//	benchtool report RESULTS.jsonl                  the markdown of docs/performance.md, from the results scripts/bench wrote
//	benchtool freeport                              a free TCP port on 127.0.0.1
//	benchtool latency STORE                         the server's own latency: sequential small PUTs, GETs, one-page LISTs: JSON
//	benchtool posixplan|genposix|listall|lookups|fuseops  the --huge steps (see huge.go)
//	benchtool memstates FILE                        result lines of the BenchmarkOpen states in FILE (go test -bench output; memstates.go)
//
// STORE is a blob URL as oxyfs takes it; every store is opened with the
// bucket layout.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	args := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "mkbucket":
		need(args, 2)
		err = mkbucket(ctx, args[0], args[1])
	case "putkey":
		need(args, 3)
		err = putkey(ctx, args[0], args[1], args[2])
	case "genlist":
		need(args, 2)
		seed := int64(42)
		if len(args) > 2 {
			seed = atoi64(args[2])
		}
		err = genlist(ctx, args[0], atoi(args[1]), seed)
	case "genfolded":
		need(args, 2)
		seed := int64(42)
		if len(args) > 2 {
			seed = atoi64(args[2])
		}
		keep := 0
		if len(args) > 3 {
			keep = atoi(args[3])
		}
		err = genfolded(ctx, args[0], atoi(args[1]), seed, keep)
	case "mountmem":
		need(args, 2)
		steps, profile := "", ""
		if len(args) > 2 {
			steps = args[2]
		}
		if len(args) > 3 {
			profile = args[3]
		}
		err = mountmem(ctx, args[0], args[1], steps, profile)
	case "open":
		need(args, 1)
		repeat := 5
		if len(args) > 1 {
			repeat = atoi(args[1])
		}
		cacheDir := ""
		if len(args) > 2 {
			cacheDir = args[2]
		}
		err = open(ctx, args[0], repeat, cacheDir)
	case "write":
		need(args, 4)
		err = write(args[0], atoi(args[1]), atoi(args[2]), args[3])
	case "put":
		need(args, 5)
		batch := 1
		if len(args) > 5 {
			batch = atoi(args[5])
		}
		err = put(args[0], args[1], atoi(args[2]), atoi(args[3]), args[4], batch)
	case "putindex":
		need(args, 4)
		err = putIndex(ctx, args[0], atoi(args[1]), atoi(args[2]), args[3])
	case "listrate":
		need(args, 1)
		err = listrate(ctx, args[0])
	case "pingpong":
		err = pingpong()
	case "pong":
		pong()
	case "loopback":
		need(args, 2)
		var conns []int
		for _, f := range strings.Split(args[1], ",") {
			conns = append(conns, atoi(f))
		}
		err = loopback(atoi(args[0]), conns)
	case "loopback-serve":
		err = loopbackServe()
	case "statloop":
		need(args, 2)
		err = statloop(args[0], atoi(args[1]))
	case "report":
		need(args, 1)
		err = report(args[0], os.Stdout)
	case "freeport":
		err = freeport()
	case "latency":
		need(args, 1)
		err = latency(ctx, args[0])
	case "getrate":
		need(args, 2)
		keys := ""
		if len(args) > 2 {
			keys = args[2]
		}
		err = getrate(ctx, args[0], atoi(args[1]), keys)
	default:
		cmd, ok := commands[os.Args[1]]
		if !ok {
			usage()
		}
		err = cmd(ctx, args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// latency measures what the S3 server itself takes for the requests a
// write and an open make, one at a time: a PUT of a 100-byte key, a GET of
// it, a LIST of one page under a prefix, a conditional update of a record.
func latency(ctx context.Context, url string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	const n = 200
	data := make([]byte, 100)
	res := map[string]float64{}
	timeIt := func(name string, fn func(i int) error) error {
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := fn(i); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		res[name+"_ms"] = float64(time.Since(start).Microseconds()) / 1000 / n
		return nil
	}
	// Probes are raw objects under sig/ whose names are no entry keys (the
	// object id is not hex).
	sig := format.KindSig.Prefix()
	key := func(i int) string { return sig + fmt.Sprintf("ff/latency%04d/probe", i) }
	key8 := func(i int) string { return sig + fmt.Sprintf("fe/latency%06d/probe", i) }
	if err := timeIt("put", func(i int) error { return st.Put(ctx, key(i), data) }); err != nil {
		return err
	}
	if err := timeIt("get", func(i int) error { _, err := st.Get(ctx, key(i)); return err }); err != nil {
		return err
	}
	if err := timeIt("cas_update", func(i int) error {
		_, err := st.UpdateRecord(ctx, "latency-record", func(old []byte, _ bool) ([]byte, error) { return append(old, 'x'), nil })
		return err
	}); err != nil {
		return err
	}
	// What the server sustains: 8 writers putting new keys, as 8 writers
	// through a mount do (each signature is a new object's key).
	var next atomic.Int64
	var wg sync.WaitGroup
	var perr atomic.Pointer[error]
	const m = 2000
	start := time.Now()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= m {
					return
				}
				if err := st.Put(ctx, key8(i), data); err != nil {
					perr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := perr.Load(); p != nil {
		return *p
	}
	res["put_8_writers_per_s"] = m / time.Since(start).Seconds()
	for i := 0; i < n; i++ {
		st.Delete(ctx, key(i))
	}
	for i := 0; i < m; i++ {
		st.Delete(ctx, key8(i))
	}
	st.Delete(ctx, "latency-record")
	return printJSON(res)
}

// listrate measures the server's listing, which bounds a complete fold
// (it lists every entry prefix, 1000 keys a page): sig/ one page after
// another as the fold lists a kind, then whole sig/<hh>/ prefixes with 1, 2,
// 4 and 8 listings at a time, as a fold that split its listing by <hh>
// would.
func listrate(ctx context.Context, url string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	res := map[string]float64{}
	var token []byte
	keys, pages := 0, 0
	start := time.Now()
	for pages < 20 {
		items, next, err := st.ListPage(ctx, format.KindSig.Prefix(), "", token, 1000)
		if err != nil {
			return err
		}
		keys += len(items)
		pages++
		if next == nil {
			break
		}
		token = next
	}
	el := time.Since(start)
	res["sequential_keys_per_s"] = float64(keys) / el.Seconds()
	res["sequential_ms_per_page"] = float64(el.Milliseconds()) / float64(pages)
	hh := 0
	for _, par := range []int{1, 2, 4, 8} {
		var n atomic.Int64
		var wg sync.WaitGroup
		var lerr atomic.Pointer[error]
		todo := make(chan string, 16)
		start := time.Now()
		for w := 0; w < par; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for prefix := range todo {
					if err := st.List(ctx, prefix, "", func(store.ListItem) error { n.Add(1); return nil }); err != nil {
						lerr.CompareAndSwap(nil, &err)
					}
				}
			}()
		}
		for i := 0; i < 16 && hh < 256; i++ {
			todo <- format.KindSig.Prefix() + fmt.Sprintf("%02x/", hh)
			hh++
		}
		close(todo)
		wg.Wait()
		if p := lerr.Load(); p != nil {
			return *p
		}
		res[fmt.Sprintf("parallel_%d_keys_per_s", par)] = float64(n.Load()) / time.Since(start).Seconds()
	}
	return printJSON(res)
}

func freeport() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool mkbucket|genlist|genfolded|open|mountmem|write|put|putindex|listrate|getrate|latency|pingpong|statloop|report|freeport|posixplan|genposix|listall|lookups|fuseops|memstates ARGS (see the package doc)")
	os.Exit(2)
}

func need(args []string, n int) {
	if len(args) < n {
		usage()
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtool: %q is not a number\n", s)
		os.Exit(2)
	}
	return n
}

func atoi64(s string) int64 { return int64(atoi(s)) }

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	return enc.Encode(v)
}

func openStore(ctx context.Context, url string) (*store.Store, error) {
	return store.Open(ctx, url, store.Options{Layout: store.LayoutBucket, RequestTimeout: 5 * time.Minute})
}

func putkey(ctx context.Context, url, key, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Put(ctx, key, data)
}

func mkbucket(ctx context.Context, endpoint, bucket string) error {
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
	})
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	return err
}

// writeResult is what `benchtool write` and `benchtool put` measure.
type writeResult struct {
	How     string  `json:"how"`
	Writers int     `json:"writers"`
	Count   int     `json:"count"`
	Batch   int     `json:"batch,omitempty"`
	Errors  int64   `json:"errors"`
	WallS   float64 `json:"wall_s"`
	PerS    float64 `json:"per_s"`
	FirstEr string  `json:"first_error,omitempty"`
}

// objectID is signer's i-th object: 64 hex, the same for the same signer
// and i whichever writer takes it.
func objectID(signer string, i int) string {
	h := fnv.New64a()
	h.Write([]byte(signer))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	var b [32]byte
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return hex.EncodeToString(b[:])
}

func sigBytes(obj string) []byte {
	return []byte("oxyfs-bench signature over " + obj + "\n")
}

// write: WRITERS goroutines, each creating its share of COUNT signatures
// through the mount (mkdir of the object's directory, create, write,
// close), as cp would; close returns once the key and the journal line
// landed.
func write(dir string, writers, count int, signer string) error {
	return printJSON(runWriters("mount", writers, count, signer, func(obj string) error {
		od := filepath.Join(dir, "sig", obj[:2], obj[2:])
		if err := os.MkdirAll(od, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(od, signer), sigBytes(obj), 0o644)
	}))
}

// runWriters runs one(obj) for COUNT objects of signer from WRITERS
// goroutines and reports the rate and the errors.
func runWriters(how string, writers, count int, signer string, one func(obj string) error) writeResult {
	var next, errs atomic.Int64
	var first atomic.Pointer[string]
	var wg sync.WaitGroup
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				if err := one(objectID(signer, i)); err != nil {
					errs.Add(1)
					msg := err.Error()
					first.CompareAndSwap(nil, &msg)
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	res := writeResult{How: how, Writers: writers, Count: count, Errors: errs.Load(), WallS: el.Seconds(), PerS: float64(count) / el.Seconds()}
	if p := first.Load(); p != nil {
		res.FirstEr = *p
	}
	return res
}

// putIndex: WRITERS goroutines putting COUNT signatures through one open
// index (what the mount does at close, without FUSE): the write path's own
// ceiling on this server.
func putIndex(ctx context.Context, url string, writers, count int, signer string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		return err
	}
	if err := ix.Load(ctx); err != nil {
		return err
	}
	res := runWriters("index.Put", writers, count, signer, func(obj string) error {
		return ix.Put(ctx, format.Entry{Kind: format.KindSig, Object: obj, Value: signer}, sigBytes(obj))
	})
	if err := ix.Close(); err != nil {
		return err
	}
	return printJSON(res)
}

// put: WRITERS concurrent `oxyfs put` processes, one per signature (BATCH
// = 1: a script writing what it signs) or one per BATCH signatures (--batch).
func put(oxyfs, url string, writers, count int, signer string, batch int) error {
	tmp, err := os.MkdirTemp("", "benchtool-put-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	type job struct{ args []string }
	var jobs []job
	for i := 0; i < count; i += batch {
		var lines []byte
		var one []string
		for j := i; j < min(i+batch, count); j++ {
			obj := objectID(signer, j)
			f := filepath.Join(tmp, obj)
			if err := os.WriteFile(f, sigBytes(obj), 0o644); err != nil {
				return err
			}
			p := format.Entry{Kind: format.KindSig, Object: obj, Value: signer}.Key() // its path in the tree
			one = []string{"put", "--layout", "bucket", url, p, f}
			lines = append(lines, p+"\t"+f+"\n"...)
		}
		if batch == 1 {
			jobs = append(jobs, job{one})
			continue
		}
		lf := filepath.Join(tmp, fmt.Sprintf("batch-%d", i))
		if err := os.WriteFile(lf, lines, 0o644); err != nil {
			return err
		}
		jobs = append(jobs, job{[]string{"put", "--layout", "bucket", url, "--batch", lf}})
	}
	var next atomic.Int64
	var errs atomic.Int64
	var first atomic.Pointer[string]
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				out, err := exec.Command(oxyfs, jobs[i].args...).CombinedOutput()
				if err != nil {
					errs.Add(1)
					msg := fmt.Sprintf("%v: %s", err, out)
					first.CompareAndSwap(nil, &msg)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	how := "oxyfs put"
	if batch > 1 {
		how = "oxyfs put --batch"
	}
	res := writeResult{How: how, Writers: writers, Count: count, Batch: batch, Errors: errs.Load(), WallS: el.Seconds(), PerS: float64(count) / el.Seconds()}
	if p := first.Load(); p != nil {
		res.FirstEr = *p
	}
	return printJSON(res)
}

// pingpong measures what one synchronous request between two processes
// costs on this machine, the floor under every FUSE request: one byte
// written to a pipe and one written back, with both processes on one CPU,
// then on two.
func pingpong() error {
	ncpu := runtime.NumCPU()
	res := map[string]float64{}
	pairs := [][2]int{{0, 0}}
	if ncpu > 1 {
		pairs = append(pairs, [2]int{0, 1})
	}
	for _, p := range pairs {
		us, err := pingpongOn(p[0], p[1], 20000)
		if err != nil {
			return err
		}
		if p[0] == p[1] {
			res["same_cpu_us"] = us
		} else {
			res["cross_cpu_us"] = us
		}
	}
	return printJSON(res)
}

func pingpongOn(cpuA, cpuB, n int) (float64, error) {
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, "pong", strconv.Itoa(cpuB), strconv.Itoa(n))
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(ab[0]), "ab"), os.NewFile(uintptr(ba[1]), "ba")}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(cpuA)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return 0, err
	}
	buf := []byte{0}
	// Warm up, then measure.
	for i := 0; i < n/10; i++ {
		unix.Write(ab[1], buf)
		unix.Read(ba[0], buf)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := unix.Write(ab[1], buf); err != nil {
			return 0, err
		}
		if _, err := unix.Read(ba[0], buf); err != nil {
			return 0, err
		}
	}
	el := time.Since(start)
	unix.Close(ab[1])
	cmd.Wait()
	unix.Close(ba[0])
	var all unix.CPUSet
	for c := 0; c < runtime.NumCPU(); c++ {
		all.Set(c)
	}
	unix.SchedSetaffinity(0, &all)
	return float64(el.Nanoseconds()) / float64(n) / 1000, nil
}

// pong is the other end of pingpong: fds 3 (in) and 4 (out).
func pong() {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(atoi(os.Args[2]))
	unix.SchedSetaffinity(0, &set)
	buf := []byte{0}
	for {
		if n, err := unix.Read(3, buf); err != nil || n == 0 {
			return
		}
		unix.Write(4, buf)
	}
}

// statloop: N stats of a name that does not exist on a FUSE mount are N
// LOOKUP round trips (failed lookups are not cached): what one request
// costs, kernel and server.
func statloop(p string, n int) error {
	for i := 0; i < n/10; i++ {
		os.Lstat(p)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		os.Lstat(p)
	}
	el := time.Since(start)
	return printJSON(map[string]float64{"stat_us": float64(el.Nanoseconds()) / float64(n) / 1000})
}
