package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// A store of many per-object keys, written straight into the directory of
// a versitygw posix bucket (what `benchtool genposix` does): one file per
// key, with the extended attributes versitygw v1.8.0's PutObject gives a
// file it writes (backend/posix/posix.go: user.checksums, user.etag,
// user.content-type; backend/meta/xattr.go), so that versitygw serves it
// exactly as if each key had been PUT: the same ETag (the quoted MD5 of the
// bytes), size, checksum and content type in HEAD, GET and LIST.
// checkPosix compares both on every run and fails if anything differs.
//
// The layout spends the filesystem's inodes and blocks sparingly, since a
// store of 10,000,000 keys fills a disk otherwise: each object holds
// perObject entries of one kind (one directory per object, one file per
// entry), and most objects are of the kinds whose entries are empty files
// (an index entry carries no bytes, DESIGN §3): an empty file has no data
// block, and its attributes are the same for every one, which ext4 keeps
// in one shared block. A signature is 64–128 random bytes, with its own
// data block and its own attribute block.

// posixKindWeights is the share of objects of each kind, in percent.
var posixKindWeights = [format.NumKinds]int{
	format.KindSig:      10,
	format.KindSeal:     5,
	format.KindReceipt:  35,
	format.KindApproval: 35,
	format.KindCert:     10,
	format.KindAccepted: 5,
}

// maxPerObject bounds the entries of one object: the pools of values
// (8 runners, 16 signers, 32 certificate ids) give distinct values up to it.
const maxPerObject = 8

// The attributes versitygw writes with every object (xattr names without
// the "user." prefix are its meta keys).
const (
	xattrChecksums   = "user.checksums"
	xattrETag        = "user.etag"
	xattrContentType = "user.content-type"
	contentType      = "application/octet-stream" // what store.Put sends
)

// posixPlan is the store genposix writes: entries spread over objects of
// perObject entries, each object drawn from its own seeded source, so any
// worker can write any object and the store depends only on the plan.
type posixPlan struct {
	entries, perObject int
	seed               int64
	signers, runners   []string
	certs              []string
}

func newPosixPlan(entries, perObject int, seed int64) (*posixPlan, error) {
	if entries < 1 || perObject < 1 || perObject > maxPerObject {
		return nil, fmt.Errorf("genposix: want entries ≥ 1 and 1 ≤ entries per object ≤ %d, not %d and %d", maxPerObject, entries, perObject)
	}
	p := &posixPlan{entries: entries, perObject: perObject, seed: seed}
	for i := range 16 {
		p.signers = append(p.signers, fmt.Sprintf("signer-%02d", i))
	}
	for i := range 8 {
		p.runners = append(p.runners, fmt.Sprintf("runner-%d", i))
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	for range 32 {
		p.certs = append(p.certs, randHex(r, 8))
	}
	return p, nil
}

func (p *posixPlan) objects() int { return (p.entries + p.perObject - 1) / p.perObject }

// posixObject is one object of the plan and its entries.
type posixObject struct {
	kind   format.Kind
	id     string   // 64 hex
	values []string // distinct
	data   [][]byte // a signature's bytes; nil for the other kinds
}

func (o *posixObject) key(j int) string {
	return format.Entry{Kind: o.kind, Object: o.id, Value: o.values[j]}.Key()
}

func (p *posixPlan) source(i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(p.seed), uint64(i)+1))
}

func drawKind(r *rand.Rand) format.Kind {
	n := r.IntN(100)
	for _, k := range format.Kinds {
		if n < posixKindWeights[k] {
			return k
		}
		n -= posixKindWeights[k]
	}
	return format.KindAccepted
}

// drawnKind is object i's kind (the first draw of its source).
func (p *posixPlan) drawnKind(i int) format.Kind { return drawKind(p.source(i)) }

func (p *posixPlan) object(i int) posixObject {
	r := p.source(i)
	o := posixObject{kind: drawKind(r), id: randHex(r, 32)}
	n := p.perObject
	if i == p.objects()-1 {
		n = p.entries - i*p.perObject
	}
	pick := func(pool []string) {
		for _, j := range r.Perm(len(pool))[:n] {
			o.values = append(o.values, pool[j])
		}
	}
	switch o.kind {
	case format.KindSig, format.KindApproval:
		pick(p.signers)
	case format.KindReceipt:
		pick(p.runners)
	case format.KindCert:
		pick(p.certs)
	default: // seal, accepted: attestation ids, unique
		for range n {
			o.values = append(o.values, randHex(r, 32))
		}
	}
	if o.kind == format.KindSig {
		for range n {
			b := make([]byte, 64+r.IntN(65))
			for k := range b {
				b[k] = byte(r.Uint32())
			}
			o.data = append(o.data, b)
		}
	}
	return o
}

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

// posixAttrs are the attributes versitygw's PutObject stores for data sent
// by store.Put (the AWS SDK sends a CRC32 checksum with each PUT).
func posixAttrs(data []byte) [3][2]string {
	sum := md5.Sum(data)
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], crc32.ChecksumIEEE(data))
	checksums := `{"Algorithm":"CRC32","Type":"FULL_OBJECT","CRC32":"` + base64.StdEncoding.EncodeToString(crc[:]) +
		`","CRC32C":null,"SHA1":null,"SHA256":null,"CRC64NVME":null,"SHA512":null,"MD5":null,"XXHASH64":null,"XXHASH3":null,"XXHASH128":null}`
	return [3][2]string{
		{xattrChecksums, checksums},
		{xattrETag, `"` + hex.EncodeToString(sum[:]) + `"`},
		{xattrContentType, contentType},
	}
}

// planCost is what the plan needs of the filesystem, counted from the
// plan itself and the filesystem's block size.
type planCost struct {
	Entries    int   `json:"entries"`
	PerObject  int   `json:"per_object"`
	Objects    int   `json:"objects"`
	SigEntries int   `json:"sig_entries"`
	Inodes     int64 `json:"inodes"` // a file per entry, a directory per object and per <kind>/<hh>
	Bytes      int64 `json:"bytes"`  // a block per directory; a signature: a data block and an attribute block
	// The share of entries of each kind.
	PerKind    map[string]int `json:"per_kind"`
	FreeInodes int64          `json:"free_inodes"`
	FreeBytes  int64          `json:"free_bytes"`
}

func (p *posixPlan) cost(dir string) (planCost, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return planCost{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	c := planCost{Entries: p.entries, PerObject: p.perObject, Objects: p.objects(), PerKind: map[string]int{},
		FreeInodes: int64(fs.Ffree), FreeBytes: int64(fs.Bavail) * fs.Bsize}
	for i := range c.Objects {
		k := p.drawnKind(i)
		n := min(p.perObject, p.entries-i*p.perObject)
		c.PerKind[k.String()] += n
		if k == format.KindSig {
			c.SigEntries += n
		}
	}
	hhDirs := int64(len(c.PerKind)) * 257 // <kind>/ and its <hh>/ directories, at most
	c.Inodes = int64(c.Entries) + int64(c.Objects) + hhDirs
	// A signature of at most 128 bytes takes one data block; its attributes
	// (about 270 bytes) do not fit in the inode and take one block of their own.
	c.Bytes = (int64(c.Objects)+hhDirs)*fs.Bsize + int64(c.SigEntries)*2*fs.Bsize
	return c, nil
}

// posixFits refuses a plan (with extra bytes of other data beside it) that
// would leave less than a tenth of the filesystem's free inodes or bytes, or
// less than 2 GiB, free.
func posixFits(c planCost, extra int64) error {
	needB, needI := c.Bytes+extra, c.Inodes
	if needI > c.FreeInodes-c.FreeInodes/10 || needB > c.FreeBytes-max(c.FreeBytes/10, 2<<30) {
		return fmt.Errorf("a store of %d entries (%d per object, %d objects, %d signatures) needs about %d inodes and %.1f GB here; the filesystem has %d inodes and %.1f GB free, and a tenth (at least 2 GiB) must stay free: use fewer entries (--huge-entries) or another --work directory",
			c.Entries, c.PerObject, c.Objects, c.SigEntries, needI, float64(needB)/1e9, c.FreeInodes, float64(c.FreeBytes)/1e9)
	}
	return nil
}

// posixPlanCmd: benchtool posixplan DIR N PEROBJ SEED EXTRA_BYTES — what
// genposix would need under DIR, and whether it fits (exit status 1 if not).
func posixPlanCmd(_ context.Context, args []string) error {
	need(args, 5)
	p, err := newPosixPlan(atoi(args[1]), atoi(args[2]), atoi64(args[3]))
	if err != nil {
		return err
	}
	c, err := p.cost(args[0])
	if err != nil {
		return err
	}
	if err := posixFits(c, atoi64(args[4])); err != nil {
		return err
	}
	return printJSON(c)
}

// genPosixResult is what `benchtool genposix` reports.
type genPosixResult struct {
	planCost
	Files        int64   `json:"files"`
	Dirs         int64   `json:"dirs"`
	SigBytes     int64   `json:"sig_bytes"`
	KeyTextBytes int64   `json:"key_text_bytes"`
	Workers      int     `json:"workers"`
	WallS        float64 `json:"wall_s"`
	PerS         float64 `json:"entries_per_s"`
	UsedBytes    int64   `json:"used_bytes"`  // the filesystem's free bytes before less after (other writers count too)
	UsedInodes   int64   `json:"used_inodes"` // the same for inodes
	JournalLines int     `json:"journal_lines"`
	Checked      int     `json:"checked_keys"` // keys compared with the same bytes PUT through the server
}

// genPosix: benchtool genposix STORE DIR N PEROBJ SEED [JOURNAL] — writes
// the plan's keys as files under DIR (the bucket's directory of the
// versitygw serving STORE), then a journal naming the last JOURNAL keys
// (default 1000; through STORE, as a writer would), then checks a sample
// of the keys through STORE against the same bytes PUT there.
func genPosix(ctx context.Context, args []string) error {
	need(args, 5)
	p, err := newPosixPlan(atoi(args[2]), atoi(args[3]), atoi64(args[4]))
	if err != nil {
		return err
	}
	journal := 1000
	if len(args) > 5 {
		journal = atoi(args[5])
	}
	res, err := p.generate(ctx, args[0], args[1], journal)
	if err != nil {
		return err
	}
	return printJSON(res)
}

// generate writes the plan under dir, the journal through url, and checks.
func (p *posixPlan) generate(ctx context.Context, url, dir string, journal int) (genPosixResult, error) {
	if fi, err := os.Stat(dir); err != nil {
		return genPosixResult{}, fmt.Errorf("genposix: %s is not the bucket's directory (create the bucket first): %w", dir, err)
	} else if !fi.IsDir() {
		return genPosixResult{}, fmt.Errorf("genposix: %s is not the bucket's directory (create the bucket first)", dir)
	}
	c, err := p.cost(dir)
	if err != nil {
		return genPosixResult{}, err
	}
	if err := posixFits(c, 0); err != nil {
		return genPosixResult{}, err
	}
	// Most of a write is waiting on the filesystem's journal: more writers
	// than cores keep it busy.
	res := genPosixResult{planCost: c, Workers: max(16, 4*runtime.GOMAXPROCS(0))}
	start := time.Now()
	if err := p.write(dir, res.Workers, &res); err != nil {
		return res, err
	}
	res.WallS = time.Since(start).Seconds()
	res.PerS = float64(res.Files) / res.WallS
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil {
		res.UsedBytes = c.FreeBytes - int64(fs.Bavail)*fs.Bsize
		res.UsedInodes = c.FreeInodes - int64(fs.Ffree)
	}
	st, err := openStore(ctx, url)
	if err != nil {
		return res, err
	}
	defer st.Close()
	if res.JournalLines, err = p.writeJournal(ctx, st, journal); err != nil {
		return res, err
	}
	if res.Checked, err = p.check(ctx, st, url, dir); err != nil {
		return res, err
	}
	return res, nil
}

// write writes every object of the plan under dir, workers at a time.
func (p *posixPlan) write(dir string, workers int, res *genPosixResult) error {
	var next, done, files, dirs, sigBytes, keyText atomic.Int64
	var first atomic.Pointer[error]
	total := p.objects()
	step := max(1, total/20)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for first.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				o := p.object(i)
				nd, err := writeObject(dir, &o)
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				dirs.Add(int64(nd))
				files.Add(int64(len(o.values)))
				for j := range o.values {
					keyText.Add(int64(len(o.key(j))))
				}
				for _, b := range o.data {
					sigBytes.Add(int64(len(b)))
				}
				if d := done.Add(1); d%int64(step) == 0 {
					fmt.Fprintf(os.Stderr, "genposix: %d of %d objects\n", d, total)
				}
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	res.Files, res.Dirs, res.SigBytes, res.KeyTextBytes = files.Load(), dirs.Load(), sigBytes.Load(), keyText.Load()
	return nil
}

// writeObject makes the object's directory and a file per entry; it
// returns the directories it made.
func writeObject(dir string, o *posixObject) (int, error) {
	od := filepath.Join(dir, o.kind.String(), o.id[:2], o.id[2:])
	made := 1
	if err := os.Mkdir(od, 0o755); errors.Is(err, os.ErrNotExist) {
		for _, d := range []string{filepath.Dir(filepath.Dir(od)), filepath.Dir(od)} {
			if err := os.Mkdir(d, 0o755); err == nil {
				made++
			} else if !errors.Is(err, os.ErrExist) {
				return 0, fmt.Errorf("genposix: mkdir %s: %w", d, err)
			}
		}
		if err := os.Mkdir(od, 0o755); err != nil {
			return 0, fmt.Errorf("genposix: mkdir %s: %w", od, err)
		}
	} else if err != nil {
		return 0, fmt.Errorf("genposix: mkdir %s: %w", od, err)
	}
	for j, v := range o.values {
		var data []byte
		if o.data != nil {
			data = o.data[j]
		}
		if err := writeKeyFile(filepath.Join(od, v), data); err != nil {
			return 0, err
		}
	}
	return made, nil
}

// writeKeyFile writes one key's file as versitygw's PutObject leaves it:
// mode 0644, the bytes, the attributes in the order it sets them.
func writeKeyFile(name string, data []byte) error {
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("genposix: create %s: %w", name, err)
	}
	err = func() error {
		for rest := data; len(rest) > 0; {
			n, err := unix.Write(fd, rest)
			if err != nil {
				return err
			}
			rest = rest[n:]
		}
		for _, a := range posixAttrs(data) {
			if err := unix.Fsetxattr(fd, a[0], []byte(a[1]), 0); err != nil {
				return fmt.Errorf("set %s: %w", a[0], err)
			}
		}
		return nil
	}()
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("genposix: write %s: %w", name, err)
	}
	return nil
}

// writeJournal writes the journal (create-only, through the server) with a
// line for each of the last n keys of the plan, as their writers left them.
func (p *posixPlan) writeJournal(ctx context.Context, st *store.Store, n int) (int, error) {
	var lines []format.JournalLine
	for i := p.objects() - 1; i >= 0 && len(lines) < n; i-- {
		o := p.object(i)
		for j := range o.values {
			if len(lines) < n {
				lines = append(lines, format.JournalLine{Key: o.key(j)})
			}
		}
	}
	if len(lines) == 0 {
		return 0, nil
	}
	if err := st.PutIfAbsent(ctx, format.JournalKey, format.Journal(lines)); err != nil {
		return 0, fmt.Errorf("genposix: write journal %q: %w", format.JournalKey, err)
	}
	return len(lines), nil
}
