package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"gocloud.dev/blob"
)

// Layout says how entries are found (spec §13.7, DESIGN §2).
type Layout int

const (
	// LayoutAuto picks directory for file:// and bucket for every other scheme.
	LayoutAuto Layout = iota
	// LayoutBucket keeps a journal and entry lists beside the per-object keys.
	LayoutBucket
	// LayoutDirectory is a repository's own .oxy/objects: per-object keys only.
	LayoutDirectory
)

func (l Layout) String() string {
	switch l {
	case LayoutBucket:
		return "bucket"
	case LayoutDirectory:
		return "directory"
	}
	return "auto"
}

// ParseLayout parses "auto", "bucket" or "directory".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "", "auto":
		return LayoutAuto, nil
	case "bucket":
		return LayoutBucket, nil
	case "directory":
		return LayoutDirectory, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want bucket, directory or auto)", s)
}

// Options configure Open.
type Options struct {
	Layout   Layout
	Clock    Clock // nil: SystemClock
	PageSize int   // LIST page size; 0: 1000
	ReadOnly bool  // refuse every write with ErrReadOnly
	Create   bool  // file://: create the directory if missing
	// RequestTimeout bounds each request, body included: one that gets
	// no answer in time fails (ErrUnavailable), so a hung server cannot
	// hang a caller. 0 means DefaultRequestTimeout; negative, no bound.
	RequestTimeout time.Duration
	// Observe, if set, is called after every attempt of a request, with
	// its kind ("list", "get", "head", "put", "delete"), how long it
	// took and its error (nil: it succeeded; ErrNotFound and a failed
	// precondition are errors too). One call per request counted in
	// Counts, except that on S3 a Delete is one "delete" call for the
	// HEAD and DELETE it sends. It must be safe for concurrent use and
	// quick: it runs on the caller's goroutine.
	Observe func(kind string, d time.Duration, err error)
	// MaxRequests caps the requests this Store has in flight at once,
	// over all its callers: an attempt past the cap waits (as long as
	// its context lets it) for one to finish. 0 means
	// DefaultMaxRequests; negative, no cap.
	MaxRequests int
	// StoreClock, if set, is the store's own clock (storeclock.go), read
	// instead of measured: for tests, which simulate the store's time as
	// well as the host's (Clock). nil: measured (HTTP Date headers, file
	// mtimes; mem:// takes Clock).
	StoreClock Clock

	// SDKReads keeps signature reads (GetAdmitted) on the backend's SDK
	// instead of the lean GET (leanget.go): for comparing the two, and
	// as a way out should a server refuse the lean path's requests.
	SDKReads bool
	// PipelineDepth is how many of read-ahead's GETs (GetAdmittedBatch)
	// one connection carries written ahead of their answers, on the lean
	// path (pipeline.go): 0 means DefaultPipelineDepth; 1, none
	// pipelined (one at a time, through the driver's client).
	PipelineDepth int

	// dates is the store clock Open makes before the bucket, for the
	// HTTP clients' Date headers (driver_http.go).
	dates *storeClock
}

// DefaultMaxRequests caps the requests in flight when Options leave
// MaxRequests 0: enough for read-ahead (which takes up to seven eighths of
// the cap, index's readAheadWorkers) to hide a round trip of 100 ms behind
// 224 GETs in flight, well under what a bucket's request rate takes (S3:
// thousands of GETs a second per prefix).
const DefaultMaxRequests = 256

// DefaultRequestTimeout bounds one request when Options leave it 0. A
// million-entry list is a few tens of MB: seconds on any link this tool
// makes sense on.
const DefaultRequestTimeout = 30 * time.Second

// MaxReadTries bounds the attempts of one read (GET, HEAD, LIST) that
// fails transiently (see transient); writes are sent once.
const MaxReadTries = 3

// Store is an open handle on a store: a bucket plus its layout, clock,
// request counters and driver (what differs per backend, driver.go). It is
// safe for concurrent use.
type Store struct {
	bucket   *blob.Bucket  // read-only after newStore
	url      string        // redacted; read-only after newStore
	drv      backendDriver // read-only after newStore; locks itself (lockedWrites)
	layout   Layout        // read-only after newStore
	clock    Clock         // read-only after newStore
	pageSize int           // read-only after newStore
	readOnly bool          // read-only after newStore
	timeout  time.Duration // per request; 0: none; read-only after newStore
	n        counters      // atomic
	probeN   counters      // atomic: the conditions probe's requests, not in n (probe.go)
	retries  atomic.Int64  // atomic: requests sent again after a transient failure
	casStats casCounters   // atomic
	// confirmed counts the conditional writes confirmed by their answer
	// (proved) and by reading back (readBack); confirm.go.
	confirmed struct{ proved, readBack atomic.Int64 }       // atomic
	observe   func(kind string, d time.Duration, err error) // read-only after newStore
	inFlight  chan struct{}                                 // one token per request in flight; nil: no cap; a semaphore, no lock

	// storeClock is the store's time (storeclock.go); read-only after
	// newStore, locks itself. probed: a probe of it (MeasureClock) was taken.
	storeClock *storeClock
	probed     atomic.Bool // atomic

	// lean is the lean GET of signature reads (leanget.go); nil: the SDK
	// path, for the reason leanWhy. Read-only after newStore (lean counts
	// itself: atomic).
	lean    *leanPath
	leanWhy string

	// cond is the verdict of the conditions probe (probe.go), shared by
	// every Store of the same URL in the process; nil where the driver
	// compares and swaps under its own lock (file, mem) or refuses to
	// (noCAS). Read-only after newStore; locks itself.
	cond *verdictCell
}

// Open opens the store at a gocloud.dev/blob URL, or at a plain directory
// path ("/srv/store", "./store"), which is a file:// store.
//
// A file:// store opened with LayoutAuto is in the bucket layout when its
// root holds the journal (pack-entries) or an entry list
// (pack-*.entries, pack-*.entries-part) — a store oxyfs gen, the demo or a
// bucket copied to disk made — and otherwise in the directory layout (a
// repository's own .oxy/objects). Every other scheme defaults to bucket.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	rawURL = pathURL(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, secrets included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("open store %q: %w", termsafe.Redact(rawURL), err)
	}
	be, err := backendOf(u.Scheme)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", termsafe.Redact(rawURL), err)
	}
	opts.dates = &storeClock{}
	b, drv, err := be.open(ctx, u, opts)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", termsafe.Redact(rawURL), err)
	}
	return newStore(b, drv, termsafe.Redact(rawURL), opts), nil
}

// openGocloud opens a URL with gocloud's own opener for its scheme.
func openGocloud(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	return blob.OpenBucket(ctx, u.String())
}

// New wraps an already open bucket. backend is one of "s3", "gcs", "azure",
// "file" (then root is its directory, for the OS lock) or "mem"; any other
// name gets a store that refuses compare-and-swap (ErrNoCAS).
func New(b *blob.Bucket, backend, root string, opts Options) *Store {
	return newStore(b, driverNamed(backend, b, root), backend+"://", opts)
}

func newStore(b *blob.Bucket, drv backendDriver, redacted string, opts Options) *Store {
	s := &Store{bucket: b, url: redacted, drv: drv, layout: opts.Layout, clock: opts.Clock, pageSize: opts.PageSize, readOnly: opts.ReadOnly, timeout: opts.RequestTimeout, observe: opts.Observe}
	drv.bind(s)
	s.chooseReadPath(opts)
	if !drv.localConditions() {
		s.cond = verdictOf(redacted)
	}
	switch {
	case s.timeout == 0:
		s.timeout = DefaultRequestTimeout
	case s.timeout < 0:
		s.timeout = 0
	}
	switch {
	case opts.MaxRequests == 0:
		s.inFlight = make(chan struct{}, DefaultMaxRequests)
	case opts.MaxRequests > 0:
		s.inFlight = make(chan struct{}, opts.MaxRequests)
	}
	if s.clock == nil {
		s.clock = SystemClock{}
	}
	s.storeClock = newStoreClock(drv.clockSource(), s.clock, opts.StoreClock)
	if opts.dates != nil && s.storeClock.fixed == nil && drv.clockSource() == clockDates {
		// The HTTP client Open made reports its Date headers there.
		opts.dates.local = s.clock
		s.storeClock = opts.dates
	}
	if s.pageSize <= 0 {
		s.pageSize = 1000
	}
	if s.layout == LayoutAuto {
		s.layout = drv.autoLayout()
	}
	return s
}

// pathURL turns a plain directory path into a file:// URL; anything with a
// scheme is returned as it is.
func pathURL(raw string) string {
	if raw == "" || strings.Contains(raw, "://") || strings.HasPrefix(raw, "mem:") {
		return raw
	}
	abs, err := filepath.Abs(raw)
	if err != nil {
		return raw
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// URL is the store's URL with secrets redacted.
func (s *Store) URL() string { return s.url }

// Backend names the backend: s3, gcs, azure, file or mem.
// It is for display: what differs per backend is asked of its driver.
func (s *Store) Backend() string { return s.drv.name() }

// Layout is the store's layout (never LayoutAuto).
func (s *Store) Layout() Layout { return s.layout }

// Clock is the clock of every on-store time (folded-at, retired-at, and
// every hour rule's "now"): the store's own once measured (storeclock.go),
// this host's (Options.Clock) until then.
func (s *Store) Clock() Clock { return s.storeClock }

// ReadOnly reports whether writes are refused.
func (s *Store) ReadOnly() bool { return s.readOnly }

// MaxRequests is the most requests the Store has in flight at once
// (Options.MaxRequests); 0: no cap.
func (s *Store) MaxRequests() int { return cap(s.inFlight) }

// Counts returns a snapshot of the requests sent so far.
func (s *Store) Counts() Counts { return s.n.snapshot() }

// WireCounts returns the requests counted on the wire, for backends that
// count them (s3); ok is false elsewhere.
func (s *Store) WireCounts() (c Counts, ok bool) { return s.drv.wireCounts() }

// DeleteRequests is what one Delete of a key that exists sends: one DELETE,
// and on S3 the HEAD s3blob sends first.
func (s *Store) DeleteRequests() Counts { return s.drv.deleteRequests(false) }

// Bucket exposes the underlying bucket for tests and the conformance kit.
// Requests sent through it are not counted.
func (s *Store) Bucket() *blob.Bucket { return s.bucket }

// Close closes the bucket.
func (s *Store) Close() error {
	if s.lean != nil && s.lean.pipe != nil {
		s.lean.pipe.close()
	}
	return s.bucket.Close()
}

// Exists reports whether a key exists (one HEAD).
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	err := s.read(ctx, &s.n.head, func(ctx context.Context) error {
		_, err := s.bucket.Attributes(ctx, key)
		return err
	})
	if err == nil {
		return true, nil
	}
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("head %q: %w", key, err)
}

// Size returns a key's size in bytes (one HEAD).
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	var size int64
	err := s.read(ctx, &s.n.head, func(ctx context.Context) error {
		a, err := s.bucket.Attributes(ctx, key)
		if err == nil {
			size = a.Size
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("head %q: %w", key, err)
	}
	return size, nil
}

// Put writes a key unconditionally (one PUT).
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if s.readOnly {
		return fmt.Errorf("put %q: %w", key, ErrReadOnly)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err := s.sendOnce(ctx, &s.n.put, func(ctx context.Context) error { return s.upload(ctx, key, data, nil) }); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// PutIfAbsent writes a key only if it does not exist yet: exactly one of
// several racing writers wins; the others get ErrConflict.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if s.readOnly {
		return fmt.Errorf("create %q: %w", key, ErrReadOnly)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("create %q: %w", key, err)
	}
	if err := s.drv.createOnly(ctx, key, data); err != nil {
		return fmt.Errorf("create %q: %w", key, err)
	}
	return nil
}

// Delete removes a key (one DELETE). Deleting a missing key is ErrNotFound.
func (s *Store) Delete(ctx context.Context, key string) error {
	if s.readOnly {
		return fmt.Errorf("delete %q: %w", key, ErrReadOnly)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	err := s.sendOnce(ctx, nil, func(ctx context.Context) error {
		err := s.drv.mapErr(s.bucket.Delete(ctx, key))
		s.n.add(s.drv.deleteRequests(errors.Is(err, ErrNotFound)))
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	return nil
}

// upload sends one PUT. It uses Bucket.Upload with a content type, which
// every driver supports (azureblob panics on failed conditional WriteAll).
func (s *Store) upload(ctx context.Context, key string, data []byte, wo *blob.WriterOptions) error {
	if wo == nil {
		wo = &blob.WriterOptions{}
	}
	wo.ContentType = "application/octet-stream"
	// One request: a buffer at least as large as the body keeps S3's
	// transfer manager from splitting it into a multipart upload.
	if n := len(data) + 1; n > 5<<20 {
		wo.BufferSize = n
	}
	return s.bucket.Upload(ctx, key, bytes.NewReader(data), wo)
}

// ListItem is one key or common prefix of a listing.
type ListItem struct {
	Key     string
	Size    int64
	ModTime time.Time // as the backend reports it (zero for a common prefix)
	IsDir   bool      // a common prefix (only with a delimiter)
	// MD5 is the bytes' MD5 when the listing gives it (S3's ETag of an
	// object put whole, GCS, Azure's Content-MD5), else nil: what tells
	// two versions apart whose size and whole-second ModTime are the same.
	MD5 []byte
	// Irregular, on file:// only, says the key names no regular file but
	// a symbolic link, a named pipe, a socket or a device ("symbolic
	// link", ...): reading it fails, and a reader reports it as a
	// malformed key. "" for every ordinary key.
	Irregular string
}

// Shown is how a warning names the item: its key, and for an irregular
// one what it is, `sig/ab/cd/x (symbolic link, not followed)`.
func (it ListItem) Shown() string {
	if it.Irregular == "" {
		return it.Key
	}
	return it.Key + " (" + it.Irregular + ", not followed)"
}

// ListPage lists one page (one LIST request). token nil starts; a nil next
// token means the listing is done.
func (s *Store) ListPage(ctx context.Context, prefix, delimiter string, token []byte, pageSize int) ([]ListItem, []byte, error) {
	if pageSize <= 0 {
		pageSize = s.pageSize
	}
	asked := token
	if token == nil {
		token = blob.FirstPageToken
	}
	var objs []*blob.ListObject
	var next []byte
	page := func(ctx context.Context) (err error) {
		// gocloud may send several LISTs to fill one page: the HTTP
		// guard counts them per attempt (driver_http.go).
		objs, next, err = s.bucket.ListPage(withPageGuard(ctx), token, pageSize, &blob.ListOptions{Prefix: prefix, Delimiter: delimiter})
		return err
	}
	err := s.read(ctx, &s.n.list, page)
	// A key that vanished under the listing fails the page with NotFound
	// where the driver stats what it lists (file://): list the page again.
	for try := 0; err != nil && errors.Is(err, ErrNotFound) && try < s.drv.listRetries(); try++ {
		err = s.read(ctx, &s.n.list, page)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	items := make([]ListItem, len(objs))
	for i, o := range objs {
		items[i] = s.drv.listItem(o)
	}
	if len(next) == 0 {
		next = nil
	}
	if err := checkPage(prefix, asked, items, next); err != nil { // listcheck.go
		return nil, nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	return items, next, nil
}

// List walks every page of a listing, one LIST request per page.
func (s *Store) List(ctx context.Context, prefix, delimiter string, fn func(ListItem) error) error {
	var token []byte
	check := newListCheck(prefix)
	for {
		items, next, err := s.ListPage(ctx, prefix, delimiter, token, 0)
		if err != nil {
			return err
		}
		if err := check.page(len(items), next); err != nil {
			return fmt.Errorf("list %q: %w", prefix, err)
		}
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		token = next
	}
}
