// Package fs mounts an index (package index) as a directory tree with FUSE
// (go-fuse/v2), so that ls, find, cat, stat and cp work on a store's
// signatures and index entries (DESIGN §4):
//
//	MOUNT/
//	  sig/<hh>/<rest>/<signer>          the signature bytes
//	  seal/ receipt/ approval/ cert/ accepted/
//	       <hh>/<rest>/<value>          empty files
//	  by-signer/<signer>/<hh><rest>     symlink to ../../sig/<hh>/<rest>/<signer>
//	  .oxy/status                       JSON of index.Status, with the mount's FUSE operations
//	                                    and the kernel's FUSE requests by opcode
//	  .oxy/journal  .oxy/retired        the records as the index read them, as text
//	  .oxy/lists/<name>                 each live entry list, decompressed
//
// Mount returns a *Server, subscribed to its index (index.Subscribe:
// indexChanged): each signature whose version moves has its name dropped
// (sigChanged), and each view the index publishes has what the kernel
// caches of what it changed dropped (Invalidate), from the index's own
// goroutine, after the view is published and before ix.Refresh returns;
// nobody calls Invalidate by hand. Unmount waits for the writes in flight,
// then unmounts in a helper process (umount -i as root, else fusermount3
// -u) and returns once the kernel has closed the connection, not after the
// kernel has freed the inodes it cached (unmount.go; closing the index is
// the caller's). Root mounts with mount(2) itself, so needs no fusermount
// helper; a busy unmount is ErrMountBusy with or without one.
//
// # Files
//
//	mount.go        Options, Server, Mount and Unmount: the mount's lifecycle
//	mountpoint.go   the mountpoint's checks before a mount, umount(2), mount errors
//	unmount.go      Unmount's helper process: not waited for past the connection's close
//	tree.go         directories: Lookup, Readdir's entries, attributes (a cat starts here)
//	entry.go        entry files: Getattr, Open, Read, Release of a signature or an index entry
//	versions.go     a signature's versions: which node is current, adopt, ESTALE, the subscription
//	beside.go       reads beside this mount's own write: the write's bytes, live
//	xattr.go, link.go  entries' extended attributes; by-signer/ links
//	dirhandle.go    READDIR(PLUS) handles and the listings the kernel keeps
//	invalidate.go   Invalidate: what a refresh changed, told to the kernel
//	write.go        writes: create, write, flush (a per-key PUT + a journal line)
//	pending.go      the writes open, by path (pendingWrites): what stat and lookup see
//	reserve.go      opens for writing (openWrite); a write beside held readers reserves a node of its own (reserveWrite)
//	virtualdirs.go  the directories mkdir made that hold no entry yet
//	sidefiles.go    editors' side files (refused unless AllowAnyName)
//	oxy.go, oxyfile.go, oxylists.go   the .oxy/ debug view
//	errno.go        the errno of each class of error (index.Classify)
//	reqctx.go       the context of a request's store reads: its interrupt, and an unmount's cut (reqCtx, cutReads)
//	opcounts.go, kernelreqs.go, rawfs.go   FUSE operation and request counters
//	viewids.go      view ids: the node ids of the kind, <hh> and object directories, from their path
//	viewfs.go       viewFS: every request on a view id, answered without a go-fuse node
//	viewleaves.go   the leaves' directory (entry files' nodes) and kernelDir, a directory to notify
//	viewinval.go    Invalidate with view ids: the views' keys compared
//	leafids.go      leaf ids (Options.LeafIDs, off by default): entry files' node ids, from the entry and its version
//	leafstate.go    the leaf ids' kept nodes (while descriptors or a moved version need one) and their handles
//	leaffs.go       viewFS's answers on a leaf id: the entryNode's, with no go-fuse node
//	linkids.go      link ids (with leaf ids): by-signer symlinks' node ids, from their signature's leaf id
//
// # Model
//
// The FUSE layer holds no store logic and no copy of the tree. The
// directories of the index tree below the root (a kind's, an <hh>, an
// object's) have no node: the kernel holds them by view ids, computed from
// their path, on which viewFS answers every request itself (viewids.go,
// viewfs.go; DESIGN §7 "No node per name"). The root, .oxy/, by-signer/
// and its directories, and every entry file are go-fuse nodes; an entry
// file's node hangs under the leaves' directory, which the kernel never
// sees (viewleaves.go) — or, with leaf ids (Options.LeafIDs), an entry
// file has no go-fuse node: the kernel holds it by an id computed from the
// entry and its version, and viewFS answers it with an entryNode made for
// the request, or kept while descriptors are open on it (leafids.go,
// leafstate.go, leaffs.go); the names whose id would not lead back to them
// (and writes in progress) keep go-fuse nodes under the leaves' directory.
// With leaf ids a by-signer symlink has no node either: a link id, from
// its signature's leaf id, answered by viewFS as linkNode answers
// (linkids.go; a LOOKUP in a signer's directory, a go-fuse node, is told
// from the bridge node ids of those directories, linkDirs). A directory (node or view id) is a path and a
// level (index.Level); Lookup and readdir ask
// the index (ix.Stat, ix.ReadDir) each time the kernel asks, a child's level
// comes from index.Path.Child, and mkdir and create ask index.Path.Make what
// may be made. Nodes are made by Lookup with NewInode (never persistent),
// numbered with the index's stable inode numbers (index.Node.Ino, and
// index.PathIno for what the index does not hold), and go-fuse drops them when
// the kernel forgets them. A signature's node is one version of it: its
// generation is index.SigVersion, so a new version is a new node (see
// "Versions" below and versions.go). A node holds no attributes: go-fuse may hand back
// an older node of the same number, so sizes are asked of the index afresh.
// Each LOOKUP, GETATTR and OPEN of a signature takes one look at it
// (entry.go, look): what the index knows of it (index.SigState: version,
// identity, size, time, under one lock; a LOOKUP and a GETATTR ask
// index.StatSig, which gives the name's node with that state, its size the
// state's, in the same one holding of the lock) and the write this mount
// has open on the name (pendingWrites.look, under its lock), and decides
// from it;
// only a request that had to read the signature — a GETATTR that learnt the
// size, an OPEN whose bytes are another version's than the look's — asks
// the index's state once more, after the read (and an OPEN whose look
// found a write the kernel released before it could read beside it looks
// again). A LOOKUP takes its look
// before the Stat of its name: the version a node is made with and the
// size its reply carries are then of one moment, or the size is newer
// (which makes the node stale: the kernel looks it up again).
// The only state of the mount's own is what the index cannot know yet: the
// directories mkdir made (virtual, in memory until unmount: an object's
// directory exists in the index only once it holds an entry) and the files
// open for writing.
//
// # Memory
//
// There is no per-entry state, and none per directory of the index tree:
// those the kernel holds are view ids, of which the mount keeps nothing
// but, for the few whose key does not lead back to them (viewIDs: two
// objects sharing a key, own writes a view's set does not hold yet,
// mkdir's directories, a store not folded), an id table entry while the
// kernel holds them, and the listings being read (viewPartials, at most
// 4096). go-fuse keeps one Inode for each other name the kernel holds
// (~770 bytes of heap with its node and tables): by-signer/'s directories
// and the entry files stat'd or opened and by-signer's links (with leaf
// ids, neither: leaf ids and link ids), until the kernel forgets them
// (memory pressure, an invalidation, drop_caches). READDIRPLUS gives nodes
// (view ids) to directories only (.oxy/'s files get none either,
// oxyDirHandle): after a find over the whole tree the kernel holds every
// directory (~0.8 per entry) and the mount ~6 bytes of heap for each
// (BenchmarkFind), no file, until something stats them. Invalidate
// compares the view before a publish (index.Change.Prev, which the index
// keeps only until it is told) with the current one: the older set's
// arrays stay in memory only while it runs.
// A signature open for reading holds a handle on its bytes (index.OpenSig):
// one copy per version, shared by every descriptor on it, the signature
// cache's own when cached; all of them together stay within the index's
// readers' budget, and an open past it is EAGAIN (logged), refused before
// its body is read. A write holds its bytes (up to MaxWriteBytes, and all
// writes together up to MaxWriteBuffers, 256 MiB), until its release and
// the release of every read opened beside it (beside.go), which reads
// them, not a copy. The opens of one
// .oxy/lists/<name> share one text of it (oxylists.go: one GET while one is
// open and 10 s after): the list's compressed bytes, one zstd decoder, a
// checkpoint per 1 MiB block the stream passed and a window of 8 decoded
// blocks from one 64 MiB pool (format.EntryListText), never the whole text:
// a read at any offset decodes at most one block. .oxy/status, journal and retired
// keep the text a stat measured or an open reads (oxyTexts: three at most;
// journal and retired are the index's own strings, not copies).
//
// # Kernel caching
//
// The tree changes only on a refresh or an own write, and the kernel is told
// when it does, so caching is long (Options.EntryTimeout and AttrTimeout,
// DefaultTimeout = 1h) for names, directory attributes, index entries (size
// 0) and signatures whose size is known. In detail:
//
//   - Names: positive lookups are cached for EntryTimeout. Failed lookups are
//     not cached (no negative timeout), so a name added by a refresh or by
//     another writer needs no notice.
//   - Listings: the first OPENDIR is answered ENOSYS (noOpendir), so the
//     kernel opens directories itself, sends no OPENDIR or RELEASEDIR, and
//     keeps every listing it read (FOPEN_CACHE_DIR|FOPEN_KEEP_CACHE): a warm
//     ls or find of a directory sends no request at all. A cold listing is
//     one READDIRPLUS (more for a listing longer than the reply: up to
//     128 KiB, ~800 names, as directories report that st_blksize, which
//     sizes glibc's getdents buffer; dirBlksize) and the empty one that
//     finds its end, which the kernel always sends; the requests of one
//     listing read one snapshot (dirHandle). The kernel
//     resets a listing itself after a CREATE or MKDIR in it; a signature
//     write also invalidates by-signer/ and by-signer/<signer>/
//     (NotifyContent) before close returns; a create that fails drops its
//     name and its directory's listing; and Invalidate drops every listing
//     the kernel holds whose content changed (each node remembers a hash of
//     the listing it served; .oxy/lists/ too). A listing made while a
//     refresh moved the generation is made again before it is served
//     (dirHandle.load), so one made from the view before a refresh
//     whose Invalidate has already run is never what the kernel keeps.
//   - Signature sizes are not known until the bytes are read, and a lookup
//     never reads them: a signature whose size the index does not know yet
//     is reported with size 0 and attribute timeout 0, so stat calls Getattr,
//     which reads it (ix.SigStat: one GET, kept by the index's cache) and
//     returns the real size for AttrTimeout. When a signature is replaced
//     its version moves (next item). A listing of sig/<hh>/<rest>/ tells
//     the index (ix.SigsListed, dirHandle.load): once a signature was
//     stated since the previous such listing (ls -l, ls -lR, du, find
//     -size), the index fetches the listed signatures' bytes, and
//     read-ahead's window after them, before the kernel asks for their
//     attributes, so their LOOKUPs find the size known and no GETATTR
//     waits; otherwise the first stat of one of them does. A walk that
//     stats no signature (find -type f, ls -R) still sends nothing
//     (index's doc, "Read-ahead").
//   - Versions: a signature's node is one version of its bytes (its
//     generation is ix.SigVersion, which moves when a refresh shows it
//     replaced, on an own write, and when a read finds other bytes than the
//     last). A new version is a new node ID, as a file renamed over
//     another is a new inode: the index pushes each change to the kernel as
//     it sees it (index.Subscribe: NotifyEntry of the name; Invalidate
//     does the same for what a refresh changed), and a node of an older
//     version answers a stat or an open by name with ESTALE, on which the
//     kernel looks the name up again and gets the new node — but for a
//     version that moved to the same bytes, which the node takes as its
//     own at an open (versions.go: sameVersion). The kernel looks a name
//     up again only once: a node a lookup returned within retryWindow
//     (5 s) whose version moved again is not ESTALE — a stat says the
//     current size, uncached, and an open makes the current version the
//     node's own (versions.go: adopt; the kernel's pages and attributes of
//     the node dropped) and reads it, never an older version descriptors
//     still hold — so no open fails because a signature changed. A node
//     is one version for every descriptor on it (their pages are the
//     node's, and fstat's GETATTR names no descriptor), so the adoption
//     waits up to 100 ms for the descriptors holding the node's version to
//     be released; past that (one held open across the move) the open is
//     ESTALE, and the kernel looks the name up again. A descriptor
//     held open keeps its node and its handle: it reads the version it
//     opened, whole, and fstat on it answers from the handle — the kernel
//     sends fstat's GETATTR without the file and go-fuse passes the node's
//     first open file, which may be a refused write's whose RELEASE has not
//     come; a node of an older version with descriptors open for reading
//     answers their size then, not ESTALE (entryNode.Getattr). A write
//     in progress keeps its node current (a refresh's Invalidate leaves
//     its name); when it ends without landing (refused, or closed with
//     nothing) the name is dropped if the version moved meanwhile
//     (sigChanged, from a goroutine: not from inside the request).
//   - A name this mount is writing (beside.go): while a write is open on
//     it (a create, or a re-sign with --allow-overwrite; not refused) the
//     name's contents are the write's bytes, live, as on a local
//     filesystem and as gcsfuse or rclone mount serve a file being
//     written. A lookup meanwhile gives a node of the write (its
//     generation is the write's, no version's), and an open for reading
//     reads the write's buffer at each READ (direct I/O), so read(2),
//     fstat, stat by path and a MAP_SHARED mapping sized by fstat agree.
//     An open beside the write on a node whose version descriptors hold
//     is ESTALE (the kernel looks the name up and opens the write's
//     node): the write's bytes never share their pages. When the write
//     lands (close), the name is the landed version at once (the node's
//     GETATTR answers the index's state of the landed bytes, no notice
//     awaited). When it is refused, fails, or ends with nothing written,
//     the name is the store's version again: before close returns the
//     kernel is told to drop the attributes and pages of the write's
//     nodes (NotifyContent from the FLUSH, with no lock held), a stat by
//     path says the store's size, and an open reads the store's bytes;
//     readers opened during the write keep reading what it held (its
//     buffer and its share of MaxWriteBuffers stay until the last is
//     released), and their fstat says the name's size then (GETATTR
//     names no descriptor: a stat by path is lent the same handle).
//     Readers opened before the write began keep the version they opened,
//     whole, and their fstat says its size; as go-fuse would lend their
//     handle to a stat by path too, the write drops the name of their node
//     when it begins (writeHandle.setSize; from a goroutine, so a stat
//     just after the open may still say theirs), and the kernel's next
//     lookup gets the write's node.
//   - Content: a signature is read once, at open (ix.OpenSig), into a
//     handle shared by every open of the version. The kernel reads it through its page cache, so cat's second
//     read (the one that finds the end) costs no request — unless the size
//     the kernel holds may be stale: a signature that changed (a refresh
//     showed it replaced, an own write, a read whose size differed from the
//     one remembered) within AttrTimeout + a minute of the open, or one
//     being written, is opened with FOPEN_DIRECT_IO, which reads exactly the
//     handle's bytes whatever size the kernel holds (entryNode.readFlags).
//     The page cache is safe otherwise because the kernel reads at most the
//     size it holds while its attributes are fresh and asks (GETATTR)
//     before reading past it when they are not (a lookup's size 0 has
//     timeout 0): every size it can hold is that of the bytes ReadSig
//     returns. The pages are kept across opens (FOPEN_KEEP_CACHE): a node
//     is one version, whose bytes never change (a replaced signature is a
//     new node, and a node takes a later version only of the same bytes),
//     so a replaced signature's old bytes are never served from them, and
//     a second read of a signature the kernel holds sends no READ.
//     Reads of a signature, an index entry and an .oxy file are opened with
//     FOPEN_NOFLUSH: their close sends no FLUSH (a reader has nothing to
//     write). A file opened with direct I/O can still be mapped, shared
//     or private: the mount asks for FUSE_DIRECT_IO_ALLOW_MMAP (Linux
//     6.6+; an older kernel answers a MAP_SHARED mapping of it ENODEV),
//     and the mapping's pages are the node's, one version, so a mapping
//     held across a replacement reads its version whole. A node that was
//     ever read beside a write (previous item) never keeps its pages
//     across an open: they may hold the write's bytes. Index entries are
//     empty and opened without direct I/O: the kernel answers their reads
//     itself. Writes use direct I/O (the bytes go to the open file's
//     buffer); a reader beside one reads its bytes so far (previous
//     item). .oxy files are sized exactly and read with direct I/O (next
//     item).
//   - .oxy files report the exact length of what a read returns, so cp,
//     tar, wc -c, less and du see every byte (oxyfile.go). status, journal
//     and retired are texts from memory, with attribute timeout 0: a stat
//     renders and measures the text, and every stat and open within
//     oxyHold (10 s) of that rendering, or while the file is open, gets that
//     same text — .oxy/status changes with every request, and the kernel
//     asks for attributes again on its own (a permission check at open), so
//     a fresh rendering per call would disagree with the caller's stat.
//     A listing of .oxy/ renders nothing (its READDIRPLUS gives the files
//     no node), so a status read after a find has the counts of then.
//     journal and retired are the records as the index read them (open or
//     last refresh), not the store's latest: they agree with the tree and
//     status, and cost no request. They are held only while the view's
//     text is the same: the first stat or open after a refresh that
//     changed them gets the new text (a descriptor opened before reads
//     its own, whole; a stat, which names no descriptor, says the new
//     size). A list's text is fixed by its name (its
//     SHA-256), so its size is cached for AttrTimeout: known from the open
//     on a folded store; otherwise a lookup answers 0, not cached, and the
//     stat's Getattr reads and decodes the list once. An open reads exactly
//     that many bytes: a list whose key came to hold other bytes fails the
//     read (EIO, logged) instead of returning another length.
//   - Symlinks: a link's target is a function of its path, so the kernel
//     caches it (EnableSymlinkCaching).
//
// Invalidate runs in memory on a folded store: it walks only the go-fuse
// nodes the kernel holds (by-signer/'s and the entry files), checks each
// name with ix.Stat and each listing the kernel read against ix.ReadDir,
// and compares the keys of the last view it saw with the new one's to drop
// the listings and names of the view ids' directories that changed
// (viewinval.go). On a store that is not folded a check would list a
// prefix, so it drops every cached name under the kind and by-signer
// directories and every cached listing instead.
//
// # Writes
//
// Creating sig/<hh>/<rest>/<signer> (cp, a shell redirect) buffers the bytes
// in memory (MaxWriteBytes, else EFBIG; MaxWriteBuffers across every file
// open for writing, else ENOSPC, logged — a sparse write holds its whole
// size, the PUT its close sends); the first close (FLUSH) after a
// change writes them with ix.Put (the per-object key, then the journal line,
// grouped with concurrent writers), and close returns 0 only when both
// landed. A later close of a dup'ed descriptor with nothing new writes
// nothing and returns the same result. Once a process has written, a close
// by a process that has not (a child that inherited the descriptor and
// closes it when it execs or exits) writes nothing, so a half-written
// signature is never committed. From a refused write on (EFBIG, ENOSPC),
// the open file no longer stands for the entry: stat, opens and versions
// follow the index, not its bytes, until the kernel's RELEASE, which comes
// after close returns (pendingWrites.writing). A signature that exists is replaced only
// on a mount with Options.AllowOverwrite (--allow-overwrite): otherwise
// opening it for writing is EPERM (logged with the flag to pass) and a
// create of its name EEXIST, and nothing is sent — an auditor's stray
// redirect does not replace a signature. With it, O_TRUNC (cp over a file,
// >) replaces the signature without reading it; a write without O_TRUNC
// (>>, dd conv=notrunc) reads it first (one GET unless cached). An empty file created
// under seal/ receipt/ approval/ cert/ accepted/ writes that entry; closing
// an existing one writes nothing. mkdir makes <hh> and <rest> directories.
// chmod, chown and utimes are EPERM (modes, owners and times are the
// mount's; the store keeps none, and a call that returned 0 and changed
// nothing would tell cp -p, cp -a and rsync -t they had), except setting
// an entry's times to now while it is open for writing, which is what
// touch does after opening the file it creates or touches. A signature's
// mtime, ctime and atime are its key's own Last-Modified, read with its bytes
// (index.SigStat: no extra request); every other node's are the store's
// last change (tree.go, "Attributes"). Writing through a
// by-signer link writes the signature it points to. Tools that write a
// temporary name and rename it (rsync without --inplace, most editors) write
// an entry under the temporary name and then fail at the rename: use cp, a
// redirect, or rsync --inplace.
//
// # Concurrency
//
// go-fuse calls the nodes' and handles' methods from many goroutines at
// once, and a Server is safe for concurrent use. It holds little of its
// own: nodes keep no attributes, and sizes and listings are asked of the
// index, which locks itself (index's doc, "Locks"). A struct's fields say
// what guards them: "guarded by mu" after the lock that "protects the
// following", "atomic", "read-only after Mount", or "locks itself". The
// locks, in the order in which they may be held together:
//
//  1. Server.unmountMu serializes Unmount, which first waits, outside it,
//     for the Puts in flight (Server.writes).
//  2. Server.invalMu serializes Invalidate: one walk of what the kernel
//     holds at a time.
//     Under it the walk asks the index (its locks below, loadMu first), the virtual directories and the pending writes, and
//     sends the kernel notifications. No FUSE method takes it, so a
//     notification that waits for the kernel never waits for a request
//     that waits for invalMu; the index's goroutine (indexChanged) calls it
//     with no lock of the index held. sigChanged notifies
//     with no lock held.
//  3. writeHandle.mu, one handle's reads, writes and commit, is held across
//     its PUT (ix.Put) and its lazy read of an existing signature, so the
//     index's locks are taken under it. The reads beside the write take it
//     too (besideHandle: READ, and a GETATTR's size of it), so they wait
//     for a PUT in flight, which waits for no request. Release notifies
//     the kernel from a goroutine of its own, never under it: an entry
//     notification waits for the directory's lock, which the kernel may
//     hold while it waits for the release. A FLUSH whose write failed
//     drops the kernel's attributes and pages of the write's nodes
//     (NotifyContent) itself, after letting the lock go: the kernel then
//     waits for pages a READ beside the write is filling, and that READ
//     takes the lock. oxyTexts.mu stands at the same rank: it is held
//     while a .oxy text renders (index.Status, the records).
//     Under a handle's lock its commit takes its path's lock
//     (Server.commits), held across the PUT and the supersede of the
//     name's other writes; under it only the index's locks and the leaves
//     are taken, never another handle's lock, so a commit that waits for
//     another of its name waits for no request of the kernel.
//  4. leafState.mu (leaf ids' kept nodes and handles, leafstate.go; the
//     index is asked outside it): pendingWrites.mu is taken under it (a
//     kept node is dropped only when no write of its name is open:
//     idleLeaf), nothing else of the mount's.
//  5. The leaves: viewIDs.mu (the index is asked outside it), leafIDs.ringMu,
//     viewPartials.mu, linkDirs.mu (link ids' signers' directories),
//     virtualDirs.mu, pendingWrites.mu (a handle's size is read
//     atomically under it, never its lock), oxyLists.mu (a list is read
//     outside it; dropping an idle text closes it under it), sideFiles.mu
//     (logf is called under it), reqContext.mu (a request context's
//     lazily made Done channel: nothing is taken under it), and the
//     index's locks.
//
// Counters (opCounters, writeBudget, the pending writes' and virtual
// directories' versions, a directory's listed hash) and Server.life (the
// lifetime cutReads swaps) are atomics.
//
// # Error handling
//
// Nothing panics (go-fuse's panic handler logs and answers EIO). Index and
// store errors map to errnos in one place (Server.errno), by their class
// (index.Classify, which serve's statuses follow too): fs.ErrNotExist and
// store.ErrNotFound are ENOENT, format.ErrBadKey EINVAL, store.ErrReadOnly
// and store.ErrConditionsIgnored (a server found to ignore the conditions
// of its writes: every write refused, nothing written; the store logs why)
// EROFS, index.ErrNotDir ENOTDIR, store.ErrTooLarge EFBIG (a signature over
// format.MaxEntryBytes: stat, open and read; logged with the size and the
// cap), an error of no such class that wraps ENOSPC or EDQUOT (a file://
// store's filesystem full, its quota spent) that errno, as a full local
// disk answers (logged by close), anything else EIO, whose cause is logged
// once (close does not retry, so each failure is logged once): through
// Options.Log when set, at ERROR for EIO and WARN for any other errno, with
// the entry's key and the errno as attributes (errno.go failed), else as a
// line of Options.Logf ending in the errno's name, "(ENOSPC)". A request's
// store reads ask under reqCtx (reqctx.go): done when the kernel
// interrupts the request of a dying caller (a fatal signal pending:
// Ctrl-C on a cat of a hung store, kill; a signal the caller handles, as
// Go programs' SIGURG, leaves the read to go on: callerDying) or when
// Unmount cuts the reads in flight (cutReads, so that
// a hung GET does not hold the mount busy until the store's timeout); the
// request is then EINTR, not logged (index.ClassCanceled). The index
// shares a key's GET among its readers and cancels it only when the last
// has left, so an interrupt fails no other reader. Writes (ix.Put), an
// .oxy text's rendering and an .oxy/lists text, which other opens share,
// run to completion (bg). Refused operations send nothing:
//
//	operation                                           errno (read-only mount: EROFS for all)
//	rm, rmdir, rename, link, symlink, mknod             EPERM
//	create or mkdir where the tree has no such level    EPERM (root, sig/, sig/<hh>/ for files,
//	                                                    objects for directories, by-signer/)
//	create of a side file's name (.x.swp, 4913, x~, .#x, EPERM (logged once per name; not with
//	  #x#, ._x, .DS_Store, Thumbs.db, ~$x: sidefiles.go)   Options.AllowAnyName)
//	a name that breaks DESIGN §3 (uppercase or odd hex,  EINVAL
//	  NUL, CR, LF, > 255 bytes, not UTF-8)
//	bytes written into an index entry                   EINVAL (and close writes nothing)
//	close of an empty signature                         EINVAL (nothing written; logged at
//	                                                    release if it stays empty, so a dup'ed
//	                                                    descriptor's first close logs nothing)
//	truncate of an index entry to a size > 0            EINVAL
//	truncate of a signature by name (not open)          EPERM
//	a write past MaxWriteBytes                          EFBIG
//	a write past MaxWriteBuffers (all open writes)      ENOSPC (logged; close writes nothing)
//	  (a refusal stays: a later write that fits does not clear it; close reports the first)
//	anything that writes under .oxy/                    EROFS
//	setxattr / removexattr of user.oxy.*                EPERM
//	setxattr of any other name                          ENOTSUP (cp -a, rsync -X carry on)
//	getxattr of another user.* name                     ENODATA
//	getxattr of another namespace (security.*, system.*) ENOTSUP (no xattrs kept there: ls -l stops asking)
//	close when the key or the journal line failed       EIO (cause logged once)
//	  because the store's filesystem is full            ENOSPC (EDQUOT: its quota spent; logged once)
//	open of a signature past the readers' budget        EAGAIN (logged; retry once readers closed)
//	a stat or open waiting on the store when its caller  EINTR (not logged; the GET goes on for
//	  is killed (Ctrl-C), or when Unmount begins          other readers of the key)
//	stat or open by name of a replaced version's node   ESTALE (the kernel looks the name up again)
//	stat or open of a signature listed but missing       ENOENT (a journal line or list names it, its
//	  from the store (index.ErrListedMissing)             key is gone; the index warns once per key)
//
// # Requests
//
// What each operation costs in store requests, on a folded bucket store
// (one not folded answers lookups and listings by listing prefixes, and a
// directory store lists its directories):
//
//	mount (ix.Load)                       1 LIST + 2 GET + 1 GET per live list
//	ls, readdir, lookup, find, ls -R      0
//	stat of an index entry, a link, a dir 0
//	stat of a signature                   at most 1 GET per signature per index open
//	                                      (the size is kept after the bytes leave the cache);
//	                                      ls -l, ls -lR, du: the GETs of a directory's
//	                                      signatures start at its listing, in parallel
//	cat of a signature                    the same GET: 0 once stated or read, unless the
//	                                      bytes were evicted from the index's byte cache
//	readlink, getxattr, listxattr         0
//	write of an entry                     1 PUT of its key + its share of one journal
//	                                      update (a GET and a PUT, more on contention)
//	stat or read of .oxy/status           0
//	stat or read of .oxy/journal, retired 0 (the index's copy)
//	stat of .oxy/lists/<name>             0 (prefix modes: 1 GET once per list, decoded to count)
//	read of .oxy/lists/<name>             1 GET each open
//
// Ops reports the FUSE operations answered, by name ("readdir" counts the
// listings made, not READDIR requests; "lookup" counts the entries a
// READDIRPLUS gave a node too). Requests reports the requests the kernel
// sent, by opcode ("LOOKUP", "READDIRPLUS", …; countRequests says which
// go-fuse answers itself and are not counted), and ListingEnds those
// READDIR(PLUS) answered with no entry, one per listing the kernel read to
// its end. .oxy/status shows the three as fuse_ops, fuse_requests and
// fuse_listing_ends. A cold find over the tree sends, per directory, one
// READDIRPLUS per reply its names fill and the empty one, and no LOOKUP
// (TestKernelRequestsOfAColdWalk).
package fs
