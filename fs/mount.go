package fs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log"
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
	// Observe, if set, is called when each FUSE operation counted in Ops
	// returns, with its name (a key of Ops) and how long it took. It must
	// be safe for concurrent use and quick.
	Observe func(op string, d time.Duration)

	noAtomicTrunc bool             // tests: O_TRUNC as older kernels send it (SETATTR naming no file)
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

	ro                bool                             // read-only after Mount
	overwrite         bool                             // Options.AllowOverwrite; read-only after Mount
	debug             bool                             // read-only after Mount
	entryTTL, attrTTL time.Duration                    // read-only after Mount
	fileMode, dirMode uint32                           // read-only after Mount
	uid, gid          uint32                           // read-only after Mount
	mtime             time.Time                        // read-only after Mount
	logf              func(format string, args ...any) // read-only after Mount

	ops     opCounters      // atomic counters
	reqs    requestCounters // the kernel's requests by opcode (kernelreqs.go); atomic
	virt    virtualDirs     // locks itself (virtualDirs.mu)
	pending pendingWrites   // locks itself (pendingWrites.mu)
	texts   oxyTexts        // what .oxy/ stats measured and opens read (oxyfile.go); locks itself
	lists   oxyLists        // the open .oxy/lists texts, one per list (oxylists.go); locks itself
	wbuf    writeBudget     // the bytes all open writes hold (write.go); atomic
	sides   sideFiles       // side files refused and logged (sidefiles.go); locks itself
	writes  sync.WaitGroup  // Puts in flight: Add and Done by put, Wait by Unmount

	invalMu sync.Mutex    // serializes Invalidate: one walk of what the kernel holds at a time
	seenGen atomic.Uint64 // atomic: the index generation the last walk saw; stored under invalMu

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
	raw := countRequests{RawFileSystem: noOpendir{RawFileSystem: bridge, ops: &m.ops}, n: &m.reqs}
	server, err := fuse.NewServer(raw, abs, &mo)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", abs, mountErr(err))
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		// As gofs.Mount: the serve loop ends with the failed mount.
		return nil, fmt.Errorf("mount %s: %w", abs, mountErr(err))
	}
	m.server = server
	ix.Subscribe(m.indexChanged) // versions.go: each signature moved, each view published
	return m, nil
}

func newMount(dir string, ix *index.Index, opts Options) *Server {
	m := &Server{dir: dir, ix: ix, ro: opts.ReadOnly, overwrite: opts.AllowOverwrite, debug: opts.Debug, mtime: time.Now(), logf: opts.Logf}
	m.ops.observe = opts.Observe
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
// line), then unmounts. Closing the index is the caller's part.
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

// unmountDirect is umount(2) of dir, tried a few times while it is busy:
// the kernel may not yet have seen the release of a file just closed (as
// go-fuse's own unmount does).
func unmountDirect(dir string) error {
	delay := 5 * time.Millisecond
	var err error
	for try := 0; try < 5; try++ {
		if err = syscall.Unmount(dir, 0); !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(delay)
		delay *= 2
	}
	if err != nil {
		return &os.PathError{Op: "umount", Path: dir, Err: err}
	}
	return nil
}

// Wait blocks until the file system is unmounted.
func (m *Server) Wait() { m.server.Wait() }

// unmountCommand is the command that unmounts dir for this user: umount for
// root (which needs no fusermount helper), else fusermount3 -u.
func unmountCommand(dir string) string {
	if os.Geteuid() == 0 {
		return "umount " + dir
	}
	return "fusermount3 -u " + dir
}

// preflight turns the usual reasons a mount fails into clear errors.
func preflight(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("%w: %s is a FUSE mount whose server is gone (transport endpoint is not connected); unmount it first: %s", ErrMountBusy, dir, unmountCommand(dir))
	case err != nil:
		return fmt.Errorf("mountpoint: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if mounted, _ := isMountPoint(dir); mounted {
		return fmt.Errorf("%w: %s is already a mount point; unmount it first (%s)", ErrMountBusy, dir, unmountCommand(dir))
	}
	return CheckFUSE()
}

// CheckFUSE reports whether this process can mount at all: /dev/fuse opens,
// and, unless it runs as root (which mounts with mount(2) directly), a
// fusermount3 helper is installed. The demo calls it before generating its
// store, so a machine without FUSE learns it before any work is done.
func CheckFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%w: no /dev/fuse: load the fuse module (modprobe fuse), or give the container the device (--device /dev/fuse --cap-add SYS_ADMIN)", ErrNoFUSE)
	case errors.Is(err, iofs.ErrPermission):
		return fmt.Errorf("%w: %w: cannot open /dev/fuse (%w): run as root or give your user access to the device", ErrNoFUSE, iofs.ErrPermission, err)
	case err != nil:
		return fmt.Errorf("%w: open /dev/fuse: %w", ErrNoFUSE, err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return fmt.Errorf("%w: neither fusermount3 nor fusermount is in PATH: install Debian's fuse3 package (apt-get install fuse3), or mount as root, which needs no helper", ErrNoFUSE)
			}
		}
	}
	return nil
}

// isMountPoint reports whether dir is the mount point of some mount, from
// /proc/self/mountinfo (field 5, octal escapes for space, tab, newline, \).
func isMountPoint(dir string) (bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == real {
			return true, nil
		}
	}
	return false, sc.Err()
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountErr names what a failed mount most likely lacked.
func mountErr(err error) error {
	s := err.Error()
	switch {
	case strings.Contains(s, "Permission denied") || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%w: %w (mounting needs root, or fusermount3 with access to /dev/fuse; --allow-other needs user_allow_other in /etc/fuse.conf)", iofs.ErrPermission, err)
	case strings.Contains(s, "busy") || errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("%w: %w", ErrMountBusy, err)
	case strings.Contains(s, "fusermount") && strings.Contains(s, "not found"):
		return fmt.Errorf("%w: %w", ErrNoFUSE, err)
	}
	return err
}

// errno maps an index or store error to the errno a caller sees, by its
// class (index.Classify, which serve's statuses follow too), logging the
// cause of every EFBIG, EAGAIN and EIO (the caller logs each failure once:
// it is not retried). An error of no class of its own (ClassUnavailable)
// that wraps ENOSPC or EDQUOT — a file:// store's filesystem is full, or
// its quota spent — is that errno (storeFull), not EIO: the application
// sees that the disk is full.
func (m *Server) errno(op, p string, err error) syscall.Errno {
	class := index.Classify(err)
	if class == index.ClassNone {
		return 0
	}
	e, ok := classErrno[class]
	if !ok {
		e = syscall.EIO
	}
	if class == index.ClassUnavailable {
		if full := storeFull(err); full != 0 {
			e = full
		}
	}
	if e == syscall.EFBIG || e == syscall.EAGAIN || e == syscall.EIO {
		m.logf("oxyfs: %s /%s: %v (%s)", op, p, err, errnoName[e])
	}
	return e
}

// classErrno is the errno of each class of error (index.Classify) but
// ClassNone; a class not listed is EIO.
var classErrno = map[index.Class]syscall.Errno{
	index.ClassNotFound: syscall.ENOENT,
	index.ClassInvalid:  syscall.EINVAL,
	index.ClassReadOnly: syscall.EROFS,
	index.ClassNotDir:   syscall.ENOTDIR,
	index.ClassTooLarge: syscall.EFBIG,
	index.ClassBusy:     syscall.EAGAIN,
}

// storeFull is ENOSPC or EDQUOT if err wraps it (the store's filesystem
// is full, or the quota spent), else 0.
func storeFull(err error) syscall.Errno {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return e
		}
	}
	return 0
}

// errnoName names the errnos whose cause the mount logs.
var errnoName = map[syscall.Errno]string{syscall.EFBIG: "EFBIG", syscall.EAGAIN: "EAGAIN", syscall.EIO: "EIO"}

// refused is the errno of a write the mount never does: EROFS on a read-only
// mount, else EPERM.
func (m *Server) refused() syscall.Errno {
	if m.ro {
		return syscall.EROFS
	}
	return syscall.EPERM
}

// bg is the context of store requests: a FUSE request's context is
// cancelled by any signal the caller receives (Go programs get SIGURG all the
// time), and a store request is never left half done, so requests run to
// completion.
func bg(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// The FUSE operations Ops counts.
const (
	opLookup = iota
	opGetattr
	opSetattr
	opReaddir
	opOpen
	opRead
	opWrite
	opFlush
	opRelease
	opCreate
	opMkdir
	opReadlink
	opGetxattr
	opListxattr
	opSetxattr
	opRemovexattr
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opMknod
	opStatfs
	opOpendir
	numOps
)

var opNames = [numOps]string{"lookup", "getattr", "setattr", "readdir", "open", "read", "write", "flush", "release",
	"create", "mkdir", "readlink", "getxattr", "listxattr", "setxattr", "removexattr", "unlink", "rmdir", "rename",
	"link", "symlink", "mknod", "statfs", "opendir"}

type opCounters struct {
	n       [numOps]atomic.Int64             // atomic
	observe func(op string, d time.Duration) // Options.Observe; read-only after Mount
}

// start counts an operation and returns what to call when it returns
// (deferred: `defer m.ops.start(opLookup)()`), which reports its time
// to Options.Observe, if set.
func (c *opCounters) start(op int) func() {
	c.n[op].Add(1)
	if c.observe == nil {
		return noop
	}
	began := time.Now()
	return func() { c.observe(opNames[op], time.Since(began)) }
}

func noop() {}

// Ops returns how many FUSE operations of each kind the mount answered.
func (m *Server) Ops() map[string]int64 {
	out := make(map[string]int64, numOps)
	for i, name := range opNames {
		out[name] = m.ops.n[i].Load()
	}
	return out
}
