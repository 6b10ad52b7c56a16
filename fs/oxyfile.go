package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
)

// The files of .oxy/ report the exact length of what a read returns, so
// tools that trust st_size (cp, tar, wc -c, less, du) see every byte.
//
// status, journal and retired are texts made from memory (the index's
// status, the records as the current view read them; a journal longer than
// index.Options.KeepJournalText is not kept, so its stat reads the store's
// journal, one GET, and a lookup reports no size, so listing .oxy sends
// nothing): a stat renders the
// text and measures it, and every stat and open within oxyHold of that
// rendering gets the very same text, not a newer one — .oxy/status changes
// with every request, so a second rendering would rarely have the same
// length. While a file is open, every stat (fstat included: the kernel names
// no handle, go-fuse lends any open one) and every other open get the text
// it reads, so all readers agree with every size reported. After the last
// close, or oxyHold after a rendering no open is reading, the next stat or
// open renders afresh. Their attributes are not cached (timeout 0), so each
// stat asks. journal and retired are held only while the index's view
// holds the same text (oxySource): after a refresh that changed them, the
// next stat and open get the new one. Each of their texts is a node of its
// own (oxyFile.gen: a lookup names the current text's, and their names are
// not cached, so every path the kernel walks asks), and a node's open
// handles all read one text (oxyFile.shared): the handle go-fuse lends to
// an fstat names what that descriptor reads, while descriptors opened
// before a refresh keep reading the text they opened.
//
// A list's text is fixed by its name (the SHA-256 of the text), so its
// length is cached like any attribute: ix.ListTextSize knows it without a
// request on a folded store (the open decoded every live list); otherwise
// the first stat reads and decodes the list once. An open reads exactly
// that many bytes (format.NewEntryListTextOfSize): a list whose key came to
// hold other bytes fails the read (EIO) rather than return another length.
// Opens of a list share one read of it (oxylists.go).

// oxyHold is how long the text a stat measured is kept for the open that
// follows it (a tar, an rsync of one file, cp after test -s).
const oxyHold = 10 * time.Second

// oxyFile is one file of .oxy/: status, journal, retired or lists/<name>.
type oxyFile struct {
	base
	path string
	what string // "status", "journal", "retired", "list"
	key  string // lists: the list's name
	gen  uint64 // journal, retired: the text the lookup named (oxyTextGen); read-only

	// shared is the text the node's open handles read (status, journal,
	// retired), nil when none is: every open of the node reads it while
	// one is. Guarded by Server.texts.mu.
	shared *oxyText
	opens  int // handles open on the node; guarded by Server.texts.mu
}

var (
	_ = (gofs.NodeGetattrer)((*oxyFile)(nil))
	_ = (gofs.NodeSetattrer)((*oxyFile)(nil))
	_ = (gofs.NodeOpener)((*oxyFile)(nil))
)

func (f *oxyFile) setAttr(out *fuse.AttrOut, size int64, timeout time.Duration) {
	f.m.attr(&out.Attr, syscall.S_IFREG|(f.m.fileMode&0o444), 1, size)
	out.SetTimeout(timeout)
}

// lookupAttr is what a lookup answers: a list's size, or the journal's,
// when it is known without a request (else 0, not cached, so a stat asks
// Getattr, which measures it, as for a signature: a find or an ls of .oxy
// sends nothing); the others are measured as a stat.
func (f *oxyFile) lookupAttr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if f.what == oxyJournal && !f.m.ix.JournalTextKept() {
		f.gen = genUnrendered | f.m.ix.Generation()
		f.setAttr(out, 0, 0)
		return 0
	}
	if f.what != "list" {
		n, gen, err := f.m.texts.measure(f.path, f.source(ctx))
		if err != nil {
			return f.m.errno("stat", f.path, err)
		}
		f.gen = gen
		f.setAttr(out, int64(n), 0)
		return 0
	}
	if n, ok := f.m.ix.ListTextKnown(f.key); ok {
		f.setAttr(out, n, f.m.attrTTL)
	} else {
		f.setAttr(out, 0, 0)
	}
	return 0
}

func (f *oxyFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer f.m.ops.start(opGetattr)()
	switch h := fh.(type) {
	case *oxyHandle:
		// The kernel names no handle (fstat and stat alike; go-fuse lends
		// one of the node's): every handle open on this node reads h's
		// text (oxyFile.shared). A stat by path after a refresh asks a
		// lookup first, which names the new text's node (oxyFile.gen).
		f.setAttr(out, int64(len(h.text)), 0)
		return 0
	case *listHandle:
		f.setAttr(out, h.s.size, f.m.attrTTL)
		return 0
	}
	return f.stat(ctx, out)
}

// stat measures the file as a stat with no open handle sees it.
func (f *oxyFile) stat(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	m := f.m
	if f.what == "list" {
		rc := m.reqCtx(ctx)
		defer rc.end()
		n, err := m.ix.ListTextSize(rc, f.key)
		if err != nil {
			return m.errno("stat", f.path, err)
		}
		f.setAttr(out, n, m.attrTTL)
		return 0
	}
	n, _, err := m.texts.measure(f.path, f.source(ctx))
	if err != nil {
		return m.errno("stat", f.path, err)
	}
	f.setAttr(out, int64(n), 0)
	return 0
}

func (f *oxyFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	defer f.m.ops.start(opSetattr)()
	return syscall.EROFS
}

func (f *oxyFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := f.m
	defer m.ops.start(opOpen)()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EROFS
	}
	if f.what == "list" {
		return f.openList(ctx)
	}
	x, err := m.texts.open(f, f.source(ctx))
	if err != nil {
		return nil, 0, m.errno("read", f.path, err)
	}
	// Direct I/O: reads come here whatever size the kernel last saw.
	return &oxyHandle{m: m, f: f, text: x.text, x: x}, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
}

// source is how f's text renders (oxySource).
func (f *oxyFile) source(ctx context.Context) oxySource {
	src := oxySource{render: func() (string, error) { return f.render(bg(ctx)) }}
	switch f.what {
	case oxyRetired:
		src.follows, src.cheap = true, true
	case oxyJournal:
		src.follows, src.cheap = true, f.m.ix.JournalTextKept()
		src.gen = f.m.ix.Generation()
	}
	return src
}

// statusDoc is .oxy/status: the index's status, with the mount's own.
type statusDoc struct {
	index.Status
	Mountpoint string           `json:"mountpoint"`
	ReadOnly   bool             `json:"read_only"`
	FuseOps    map[string]int64 `json:"fuse_ops"`
	// FuseRequests are the kernel's requests by opcode (Server.Requests).
	FuseRequests map[string]int64 `json:"fuse_requests"`
	// FuseListingEnds are the READDIR(PLUS) requests answered with no
	// entry (Server.ListingEnds).
	FuseListingEnds map[string]int64 `json:"fuse_listing_ends"`
}

// render makes the text of status, journal or retired, as of now.
func (f *oxyFile) render(ctx context.Context) (string, error) {
	m := f.m
	switch f.what {
	case oxyStatus:
		doc := statusDoc{Status: m.ix.Status(), Mountpoint: m.dir, ReadOnly: m.ro, FuseOps: m.Ops(), FuseRequests: m.Requests(), FuseListingEnds: m.ListingEnds()}
		data, err := json.MarshalIndent(doc, "", "  ")
		return string(append(data, '\n')), err
	case oxyJournal:
		return m.ix.JournalText(ctx)
	case oxyRetired:
		return m.ix.RetiredText(ctx)
	}
	return "", fmt.Errorf("no content for %s", f.what)
}

// oxyHandle is an open status, journal or retired: the text it reads.
type oxyHandle struct {
	m    *Server
	f    *oxyFile // the node it is open on
	text string
	x    *oxyText // the rendering it reads (oxyTexts.release)
}

var (
	_ = (gofs.FileReader)((*oxyHandle)(nil))
	_ = (gofs.FileReleaser)((*oxyHandle)(nil))
)

func (h *oxyHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	if off < 0 || off >= int64(len(h.text)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(dest[:copy(dest, h.text[off:])]), 0
}

func (h *oxyHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	h.m.texts.release(h.f, h.x)
	return 0
}

// oxyTexts keeps, for each of status, journal and retired, the text last
// measured or opened, so that stat and read agree (see the top of this
// file). It holds at most three texts, and the older texts handles still
// read; journal and retired share the view's memory.
type oxyTexts struct {
	mu  sync.Mutex          // protects the following and each oxyText; held while a text renders (index locks under it)
	now func() time.Time    // read-only after Mount (tests set it first)
	m   map[string]*oxyText // by path: the current text; guarded by mu
	// serial is the last oxyText.gen given; guarded by mu. Below
	// genUnrendered.
	serial uint64
}

// genUnrendered marks the gen of a journal node looked up unrendered (a
// journal the view does not keep): the index's generation, under which
// its text stays the same.
const genUnrendered = 1 << 63

// oxyText is one rendering of a file; its open handles point to it.
type oxyText struct {
	text  string
	gen   uint64    // names it among the file's texts (oxyTexts.serial), and its node (oxyFile.gen)
	at    time.Time // when it was rendered
	ixGen uint64    // oxySource.gen it was rendered at
	open  int       // handles reading it
	valid bool      // false: rendered for an open that has been closed since
}

// oxySource renders a file's text. A source that follows the store
// (journal, retired) is held only while it renders the same text — after a
// refresh a stat and an open get what the view holds now, not the text
// of up to oxyHold before — or, when rendering costs a request (a journal
// the view does not keep: cheap false), while the index's generation has
// not moved. status is held as it is: it changes with every request.
type oxySource struct {
	render  func() (string, error)
	follows bool   // journal, retired
	cheap   bool   // render sends no request: compare the text itself
	gen     uint64 // ix.Generation() now (follows && !cheap)
}

func (t *oxyTexts) get(p string) *oxyText {
	if t.m == nil {
		t.m = make(map[string]*oxyText)
	}
	x := t.m[p]
	if x == nil {
		x = &oxyText{}
		t.m[p] = x
	}
	return x
}

// measure is a stat: the length of the current text (current), kept for
// the open that follows, and the text's gen.
func (t *oxyTexts) measure(p string, src oxySource) (int, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x, err := t.current(p, src)
	if err != nil {
		return 0, 0, err
	}
	return len(x.text), x.gen, nil
}

// open returns the text an open of node f reads: the one f's open handles
// read, else the current one (current).
func (t *oxyTexts) open(f *oxyFile, src oxySource) (*oxyText, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x := f.shared
	if x == nil {
		var err error
		if x, err = t.current(f.path, src); err != nil {
			return nil, err
		}
		f.shared = x
	}
	f.opens++
	x.open++
	return x, nil
}

// current is the text open handles read, or else the one rendered less
// than oxyHold ago, or else a new rendering. A stat does not render afresh
// within oxyHold either: the kernel asks for attributes again on its own
// (open checks permissions with a GETATTR when they are not cached), and
// the open that follows must read what the caller's stat saw. A source
// that follows the store renders afresh when the store's text moved
// (oxySource); handles open on the older text keep reading it. t.mu is
// held.
func (t *oxyTexts) current(p string, src oxySource) (*oxyText, error) {
	x := t.get(p)
	held := x.open > 0 || x.valid && t.now().Sub(x.at) < oxyHold
	switch {
	case held && !src.follows:
		return x, nil
	case held && src.cheap:
		text, err := src.render()
		if err != nil {
			return nil, err
		}
		if text == x.text {
			return x, nil
		}
		return t.replace(p, x, text, src.gen), nil
	case held && src.gen == x.ixGen:
		return x, nil
	}
	text, err := src.render()
	if err != nil {
		return nil, err
	}
	return t.replace(p, x, text, src.gen), nil
}

// replace makes text the current one of p, rendered now. t.mu is held.
func (t *oxyTexts) replace(p string, x *oxyText, text string, gen uint64) *oxyText {
	if x.open > 0 {
		// Handles read x: theirs stays theirs.
		x = &oxyText{}
		t.m[p] = x
	}
	t.serial++
	x.text, x.at, x.ixGen, x.gen, x.valid = text, t.now(), gen, t.serial, true
	return x
}

// release is the close of an open of x on node f: after the last one, the
// next open renders afresh.
func (t *oxyTexts) release(f *oxyFile, x *oxyText) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.opens--; f.opens <= 0 {
		f.opens, f.shared = 0, nil
	}
	if x.open--; x.open <= 0 {
		x.open, x.valid, x.text = 0, false, ""
	}
}
