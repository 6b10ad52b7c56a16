package fs

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/keylock"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// Options configure a mount.
type Options struct {
	ReadOnly bool // every write is refused with EROFS (the kernel mount is "ro" too)
	// AllowOverwrite lets a write replace an existing signature (a signer
	// signs again, spec §13.7). Without it only new entries are written:
	// opening an existing signature for writing is EPERM, creating one
	// EEXIST (mountpoint-s3's --allow-overwrite).
	AllowOverwrite bool
	AllowOther     bool // let other users see the mount (needs user_allow_other in /etc/fuse.conf unless root)
	// AllowAnyName lets a create take a name editors and operating systems
	// write as side files (.x.swp, 4913, x~, .DS_Store, …; sidefiles.go):
	// without it such a create is EPERM, logged once per name.
	AllowAnyName bool
	// UID and GID own every node; 0 means the caller's.
	UID, GID uint32
	// FileMode and DirMode are the permission bits of files and
	// directories; 0 means 0644/0755, or 0444/0555 when ReadOnly.
	FileMode, DirMode os.FileMode
	// EntryTimeout and AttrTimeout are how long the kernel keeps names and
	// attributes: 0 means DefaultTimeout, a negative value turns caching off.
	EntryTimeout, AttrTimeout time.Duration
	Debug                     bool   // log every FUSE request and reply
	FSName                    string // the "Filesystem" column of df; "" means "oxyfs:" + the store's redacted URL
	// Logf receives what the mount has to say (the cause of every EIO, once);
	// nil means log.Printf.
	Logf func(format string, args ...any)
	// Log, if set, receives the failures of writes and of requests the
	// mount answers with an errno it explains (EIO, EFBIG, EAGAIN; errno.go)
	// as leveled records: ERROR for EIO, WARN otherwise, with the store
	// key as "entry" and the errno as attributes ("key" would read as a
	// secret's name to termsafe.Redact). Nil sends them to Logf as text.
	Log *slog.Logger
	// Observe, if set, is called when each FUSE operation counted in Ops
	// returns, with its name (a key of Ops) and how long it took. It must
	// be safe for concurrent use and quick.
	Observe func(op string, d time.Duration)
	// LeafIDs gives entry files no go-fuse node: the kernel holds each by
	// a node id the mount computes from the entry and its version
	// (leafids.go; docs/design.md §7 "No node per name"). Off by default.
	LeafIDs bool

	noAtomicTrunc bool             // tests: O_TRUNC as older kernels send it (SETATTR naming no file)
	noViewIDs     bool             // tests: go-fuse nodes for every directory, as before view ids
	viewKeyBits   uint             // tests: the key's bits in an object directory's view id; 0: viewKeyBits
	now           func() time.Time // tests: the clock of oxyHold; nil: time.Now
}

// DefaultTimeout is how long the kernel caches names and attributes. The
// tree changes only on a refresh or an own write, and the kernel is told
// then (see Invalidate), so the timeout can be long.
const DefaultTimeout = time.Hour

// maxWrite is the largest request or reply the kernel sends or takes (FUSE
// max_write, and max_pages, which caps a READDIRPLUS reply): go-fuse's
// default, set here because directories report it (dirBlksize).
const maxWrite = 128 << 10

// MaxWriteBytes caps what one open file may buffer: a write past it is EFBIG.
const MaxWriteBytes = 64 << 20

// Errors of Mount, for callers that want to tell them apart.
var (
	// ErrNoFUSE: /dev/fuse or fusermount3 is missing or cannot be used.
	ErrNoFUSE = errors.New("FUSE is not available")
	// ErrMountBusy: the mountpoint is already mounted (or a stale mount).
	ErrMountBusy = errors.New("mountpoint is busy")
)

// Server is a mounted index (what Mount returns). It is safe for concurrent use.
type Server struct {
	dir    string       // read-only after Mount
	ix     *index.Index // read-only after Mount
	server *fuse.Server // read-only after Mount
	root   *dirNode     // read-only after Mount

	ro                bool                                 // read-only after Mount
	overwrite         bool                                 // Options.AllowOverwrite; read-only after Mount
	debug             bool                                 // read-only after Mount
	entryTTL, attrTTL time.Duration                        // read-only after Mount
	fileMode, dirMode uint32                               // read-only after Mount
	uid, gid          uint32                               // read-only after Mount
	mtime             time.Time                            // read-only after Mount
	logf              func(format string, args ...any)     // read-only after Mount
	log               *slog.Logger                         // Options.Log; nil: events go to logf; read-only after Mount
	served            chan struct{}                        // closed when the serve loops have ended (the kernel closed the connection)
	helper            func(dir string) (*exec.Cmd, string) // unmountHelper, or a test's; read-only after Mount

	ops     opCounters      // atomic counters
	reqs    requestCounters // the kernel's requests by opcode (kernelreqs.go); atomic
	virt    virtualDirs     // locks itself (virtualDirs.mu)
	pending pendingWrites   // locks itself (pendingWrites.mu)
	// commits orders the commits of one name: a write holds its path's
	// lock from its PUT until it has superseded the others it landed
	// after (writeHandle.commitLocked). Two writes of a name committing at
	// once, the first's PUT answered last, made the first supersede the
	// second: the name stood for bytes the store no longer held until the
	// first's release. Locks itself.
	commits keylock.Map
	texts   oxyTexts       // what .oxy/ stats measured and opens read (oxyfile.go); locks itself
	lists   oxyLists       // the open .oxy/lists texts, one per list (oxylists.go); locks itself
	wbuf    writeBudget    // the bytes all open writes hold (write.go); atomic
	wgens   atomic.Uint64  // atomic: the last write's number, of its nodes' generation (writeHandle.gen)
	sides   sideFiles      // side files refused and logged (sidefiles.go); locks itself
	writes  sync.WaitGroup // Puts in flight: Add and Done by put, Wait by Unmount

	invalMu sync.Mutex    // serializes Invalidate: one walk of what the kernel holds at a time
	seenGen atomic.Uint64 // atomic: the index generation the last walk saw; stored under invalMu

	// With view ids (viewids.go, viewfs.go; nil without): the ids,
	// locking themselves; the leaves' directory and its bridge node id
	// (viewleaves.go), read-only after Mount; the listings being read of
	// view ids' directories, locking themselves.
	views    *viewIDs
	leaves   *gofs.Inode
	leavesID uint64
	// leafs are the leaf ids (leafids.go; Options.LeafIDs, with view ids
	// only), locking themselves; nil without. Read-only after Mount.
	leafs *leafIDs
	// links are the bridge node ids of the signers' directories, for the
	// link ids (linkids.go; with leaf ids only); locks itself.
	links    linkDirs
	partials viewPartials

	// life is the lifetime of the store reads of the requests in flight
	// (reqctx.go): cutReads swaps it for a new one and cancels it. Atomic.
	life atomic.Pointer[lifetime]

	quiet     atomic.Bool // atomic: an unmount is under way or done: the index's watcher tells the kernel nothing
	unmountMu sync.Mutex  // serializes Unmount
	unmounted bool        // guarded by unmountMu: Unmount succeeded
}

// Mount mounts ix at dir and returns once the kernel serves it. It loads the
// index first (Load), so the first ls answers at once and a store that
// cannot be read fails here.
func Mount(dir string, ix *index.Index, opts Options) (*Server, error) {
	if ix == nil {
		return nil, errors.New("mount: nil index")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	if err := preflight(abs); err != nil {
		return nil, fmt.Errorf("mount %s: %w", abs, err)
	}
	if err := ix.Load(context.Background()); err != nil {
		return nil, fmt.Errorf("mount %s: %w", abs, err)
	}
	m := newMount(abs, ix, opts)
	m.seenGen.Store(ix.Generation())
	if !opts.noViewIDs {
		m.views = new(viewIDs)
		m.views.init(ix, opts.viewKeyBits)
		if opts.LeafIDs {
			m.leafs = &leafIDs{ix: ix}
			m.leafs.state.init()
		}
	}
	root := &dirNode{base: base{m: m}, level: index.LevelRoot}
	m.root = root
	mo := fuse.MountOptions{
		AllowOther:           opts.AllowOther,
		FsName:               fsName(opts.FSName, ix),
		Name:                 "oxyfs",
		Debug:                opts.Debug,
		EnableSymlinkCaching: true, // a link's target is a function of its path
		MaxWrite:             maxWrite,
		// O_TRUNC comes with OPEN: else the kernel truncates with a SETATTR
		// that names no open file (fuse_setattr drops it for ATTR_OPEN).
		// A shared read-only mapping (MAP_SHARED, Python's mmap default)
		// of a file opened with direct I/O — a signature changed within
		// the hour, entryNode.readFlags — is ENODEV unless the kernel
		// allows it (FUSE_DIRECT_IO_ALLOW_MMAP, Linux 6.6+): its pages
		// then come through the page cache of the node, which is one
		// version, so a held mapping reads that version whole.
		ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
		Options:           []string{"default_permissions"},
		// As root, mount(2) directly (no fusermount3 needed: Debian's
		// fuse3 package is not installed by default), falling back to the
		// helper; every other user goes through fusermount3.
		DirectMount: os.Geteuid() == 0,
		// Every READ is answered from memory (fuse.ReadResultData), never
		// from a file descriptor: go-fuse would still write each reply's
		// header into a pipe, find it cannot splice the data, and drain
		// the pipe into /dev/null (three system calls a READ for nothing).
		DisableSplice: true,
		PanicHandler: func(v any) fuse.Status {
			m.logf("oxyfs: panic in a FUSE handler (EIO): %v\n%s", v, debug.Stack())
			return fuse.EIO
		},
	}
	if m.ro {
		mo.Options = append(mo.Options, "ro")
	}
	if opts.noAtomicTrunc {
		mo.ExtraCapabilities &^= fuse.CAP_ATOMIC_O_TRUNC
	}
	if opts.Logf != nil {
		mo.Logger = log.New(logWriter(m.logf), "", 0)
	}
	// Timeouts are left nil: go-fuse would replace every 0 we send (a
	// signature whose size is not known yet) with the default. Every reply
	// sets its own.
	// The root is inode 1, as on every local filesystem's mount point
	// (index.PathIno never returns 0 or 1).
	bridge := gofs.NewNodeFS(root, &gofs.Options{MountOptions: mo, UID: m.uid, GID: m.gid, Logger: mo.Logger,
		RootStableAttr: &gofs.StableAttr{Ino: 1}})
	var raw fuse.RawFileSystem = noOpendir{RawFileSystem: bridge, ops: &m.ops}
	if m.views != nil {
		// The leaves' directory, looked up once (before the kernel can
		// send anything): never forgotten.
		var out fuse.EntryOut
		if st := bridge.Lookup(nil, &fuse.InHeader{NodeId: 1}, leavesName, &out); !st.Ok() {
			return nil, fmt.Errorf("mount %s: the leaves' directory: %w", abs, syscall.Errno(st))
		}
		m.leavesID, m.leaves = out.NodeId, root.EmbeddedInode().GetChild(leavesName)
		raw = &viewFS{RawFileSystem: raw, m: m}
	}
	server, err := fuse.NewServer(countRequests{RawFileSystem: raw, n: &m.reqs}, abs, &mo)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", abs, mountErr(err))
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		// As gofs.Mount: the serve loop ends with the failed mount.
		return nil, fmt.Errorf("mount %s: %w", abs, mountErr(err))
	}
	m.server = server
	go func() {
		server.Wait()
		close(m.served)
	}()
	ix.Subscribe(m.indexChanged) // versions.go: each signature moved, each view published
	return m, nil
}

func newMount(dir string, ix *index.Index, opts Options) *Server {
	m := &Server{dir: dir, ix: ix, ro: opts.ReadOnly, overwrite: opts.AllowOverwrite, debug: opts.Debug, mtime: time.Now(), logf: opts.Logf, log: opts.Log, served: make(chan struct{}), helper: unmountHelper}
	m.ops.observe = opts.Observe
	m.life.Store(newLifetime())
	m.sides.allow = opts.AllowAnyName
	if m.logf == nil {
		m.logf = log.Printf
	}
	m.entryTTL, m.attrTTL = ttl(opts.EntryTimeout), ttl(opts.AttrTimeout)
	m.fileMode, m.dirMode = 0o644, 0o755
	if m.ro {
		m.fileMode, m.dirMode = 0o444, 0o555
	}
	if opts.FileMode != 0 {
		m.fileMode = uint32(opts.FileMode.Perm())
	}
	if opts.DirMode != 0 {
		m.dirMode = uint32(opts.DirMode.Perm())
	}
	m.uid, m.gid = opts.UID, opts.GID
	if m.uid == 0 {
		m.uid = uint32(os.Getuid())
	}
	if m.gid == 0 {
		m.gid = uint32(os.Getgid())
	}
	m.virt.init()
	m.pending.init()
	m.texts.now = opts.now
	if m.texts.now == nil {
		m.texts.now = time.Now
	}
	return m
}

func ttl(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultTimeout
	case d < 0:
		return 0
	}
	return d
}

// fsName is the mount's source in /proc/mounts and df, which every local
// user reads: secrets redacted (termsafe.Redact, whoever set the name), and
// safe for the -o list of fusermount (no commas).
func fsName(name string, ix *index.Index) string {
	if name == "" {
		name = "oxyfs:" + ix.Store().URL()
	}
	return strings.NewReplacer(",", "%2C", " ", "%20").Replace(termsafe.Redact(name))
}

type logWriter func(format string, args ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Dir is the mountpoint.
func (m *Server) Dir() string { return m.dir }

// Debug reports whether the mount logs every request.
func (m *Server) Debug() bool { return m.debug }

// Unmount waits for the writes in flight (a close waiting for its journal
// line), cuts short the store reads of the requests in flight (their
// callers get EINTR: cutReads), then unmounts. Closing the index is the
// caller's part.
//
// Root unmounts with umount(2) itself, as it mounts: go-fuse would fall back
// to a fusermount helper, which a fresh machine lacks and whose failure
// hides EBUSY. A busy mount is ErrMountBusy either way, with a hint that
// names what works for this user (umount -l for root, fusermount3 -uz
// otherwise). Unmount may be called again after a failure.
func (m *Server) Unmount() error {
	m.writes.Wait()
	m.unmountMu.Lock()
	defer m.unmountMu.Unlock()
	if m.unmounted {
		return nil
	}
	// While it unmounts, nothing is pushed to the kernel; a failed
	// unmount (busy) serves on, and pushes again.
	m.quiet.Store(true)
	defer func() { m.quiet.Store(m.unmounted) }()
	// A request waiting on a hung store holds the mount busy: its store
	// reads are cut short (EINTR), here and before each retry
	// (reqctx.go). Reads that come after are not.
	m.cutReads()
	// In a helper process, not waited for past the connection's close
	// (unmount.go): the kernel's freeing of what it cached of the mount
	// is not the mount's exit time.
	ok, err := m.unmountByHelper()
	switch {
	case ok && err == nil:
		m.unmounted = true
		return nil
	case ok && !errors.Is(err, errHelperFailed):
		return err
	}
	// No helper, or one that failed but not busy: as before, in this
	// process (its own errors).
	if os.Geteuid() == 0 {
		err := unmountDirect(m.dir)
		if err == nil {
			// As after any umount: the kernel ends the serve loop.
			m.server.Wait()
			m.unmounted = true
			return nil
		}
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("unmount %s: %w: files or directories under it are still in use (close them, or detach lazily with umount -l %s): %w", m.dir, ErrMountBusy, m.dir, err)
		}
		if !errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("unmount %s: %w", m.dir, err)
		}
		// EPERM: root of a user namespace that does not own the mount;
		// the helper may still do it.
	}
	if err := m.server.Unmount(); err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ") // fusermount's output spans lines
		if errors.Is(err, syscall.EBUSY) || strings.Contains(msg, "busy") {
			return fmt.Errorf("unmount %s: %w: files or directories under it are still in use (close them, or detach lazily with fusermount3 -uz %s): %s", m.dir, ErrMountBusy, m.dir, msg)
		}
		return fmt.Errorf("unmount %s: %s", m.dir, msg)
	}
	m.unmounted = true
	return nil
}

// Wait blocks until the file system is unmounted.
func (m *Server) Wait() { m.server.Wait() }

// bg is the context of the store reads that outlive the request that
// starts them or that other requests share (an .oxy text's rendering, an
// .oxy/lists text): they run to completion, as one caller's interrupt must
// not fail the others. Every other store read of a request asks under
// reqCtx (reqctx.go).
func bg(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
