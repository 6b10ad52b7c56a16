package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func init() {
	register(&command{
		name:    "ls",
		args:    "STORE [PATH] [-R] [-l] [--json]",
		summary: "list a directory of the tree (sig/, seal/, …, by-signer/); -R prints every entry below PATH, one path per line as find prints them",
		run:     runLs,
	})
	register(&command{
		name:    "cat",
		args:    "STORE PATH",
		summary: "print an entry's bytes (a signature; other kinds are empty)",
		run:     runCat,
	})
}

// openIndex opens STORE and an index over it, with warnings on stderr.
func (e *env) openIndex(ctx context.Context, url string, opts store.Options) (*index.Index, error) {
	st, err := e.openStore(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	logger := log.New(e.stderr, "oxyfs: ", 0)
	ix, err := index.Open(ctx, st, index.Options{Warn: func(msg string) { logger.Print("warning: ", msg) }})
	if err != nil {
		st.Close()
		return nil, err
	}
	return ix, nil
}

// openReader is openIndex for a command that reads the tree (ls, cat): it
// loads the index, refuses a location holding no store (requireStore) and,
// with browsing, says what browsing an unfolded store costs.
func (e *env) openReader(ctx context.Context, url string, browsing bool) (*index.Index, error) {
	ix, err := e.openIndex(ctx, url, store.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	err = ix.Load(ctx)
	if err == nil {
		err = e.openedIndex(ctx, ix, browsing, nil)
	}
	if err != nil {
		ix.Close()
		ix.Store().Close()
		return nil, err
	}
	return ix, nil
}

// cleanPath turns a user's path into a tree path ("" = root).
func cleanPath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

// lsRow is one line of `oxyfs ls`, and its JSON form. ModTime is a
// signature's key's own Last-Modified (read by the GET its size costs, no
// other request); every other node's, and a signature's whose backend
// gives no time, is the store's last change (index.Index.ModTime), as on
// the mount.
type lsRow struct {
	Path    string    `json:"path"`
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime,omitzero"`
	Key     string    `json:"key,omitempty"`
	Target  string    `json:"target,omitempty"`
	Source  string    `json:"source,omitempty"`
}

// lsTimeFormat is how `oxyfs ls -l` prints a time: RFC 3339 in UTC, to the
// second, which sorts as it reads.
const lsTimeFormat = "2006-01-02T15:04:05Z"

func runLs(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	recursive := e.flags.BoolP("recursive", "R", false, "print every entry below PATH, one path per line, relative to the mount root")
	long := e.flags.BoolP("long", "l", false, "long format: type, size, time, source and name (a signature's size and time cost one GET)")
	e.registerCreate()
	pos, err := e.parse(args, 1, 2)
	if err != nil {
		return err
	}
	dir := ""
	if len(pos) == 2 {
		dir = cleanPath(pos[1])
	}
	ix, err := e.openReader(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer ix.Close()
	defer ix.Store().Close()

	var rows []lsRow
	// A row whose signature cannot be read (listed but missing from the
	// store, say) is said on stderr and left out; the others are printed,
	// and ls exits 1 at the end, as ls(1) does.
	failed := 0
	emit := func(p string, n index.Node) error {
		r := lsRow{Path: p, Type: n.Type.String(), Size: n.Size, ModTime: n.ModTime, Target: n.Target, Source: n.Source}
		if n.Type == index.NodeFile {
			r.Key = n.Entry.Key()
			if r.Size < 0 && (*long || e.common.json) {
				var serr error
				if r.Size, r.ModTime, serr = ix.SigStat(ctx, n.Entry); serr != nil {
					if ctx.Err() != nil {
						return serr
					}
					failed++
					fmt.Fprintf(e.stderr, "oxyfs: ls: cannot access %s: %s\n", termsafe.Quote(p), termsafe.Line(serr.Error()))
					return nil
				}
			}
		}
		if r.ModTime.IsZero() {
			r.ModTime = ix.ModTime()
		}
		if !r.ModTime.IsZero() {
			r.ModTime = r.ModTime.UTC()
		}
		if n.Type == index.NodeDir {
			r.Size = 0
		}
		if e.common.json || *long {
			rows = append(rows, r)
			return nil
		}
		if *recursive {
			fmt.Fprintln(e.stdout, termsafe.Quote(p))
		} else {
			fmt.Fprintln(e.stdout, termsafe.Quote(n.Name))
		}
		return nil
	}

	top, err := ix.Stat(ctx, dir)
	if err != nil {
		return unnamedKey(ctx, ix, "ls", dir, err)
	}
	switch {
	case top.Type != index.NodeDir:
		if err := emit(dir, top); err != nil {
			return err
		}
	case *recursive:
		var skipped []string
		err = walk(ctx, ix, dir, func(p string, n index.Node) error {
			if n.Type == index.NodeDir {
				return nil
			}
			return emit(p, n)
		}, func(p string) { skipped = append(skipped, p) })
		if len(skipped) > 0 {
			fmt.Fprintf(e.stderr, "oxyfs: warning: skipped %s no valid entry (first: %s); oxyfs check names what their keys hold (on a directory-layout store: oxyfs check --layout bucket)\n", english.Count(len(skipped), "object that holds", "objects that hold"), termsafe.Quote(skipped[0]))
		}
	default:
		nodes, err := ix.ReadDir(ctx, dir)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if err := emit(path.Join(dir, n.Name), n); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if e.common.json {
		if rows == nil {
			rows = []lsRow{}
		}
		if err := e.printJSON(rows); err != nil {
			return err
		}
		return lsFailed(failed)
	}
	if *long {
		w := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
		for _, r := range rows {
			name := r.Path
			if !*recursive {
				name = path.Base(r.Path)
			}
			name = termsafe.Quote(name)
			if r.Target != "" {
				name += " -> " + termsafe.Quote(r.Target)
			}
			when := "-"
			if !r.ModTime.IsZero() {
				when = r.ModTime.Format(lsTimeFormat)
			}
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", r.Type, r.Size, when, r.Source, name)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return lsFailed(failed)
}

// lsFailed is ls's end: exit 1 when rows could not be read (each said on
// stderr already).
func lsFailed(n int) error {
	if n == 0 {
		return nil
	}
	return exitCode(1)
}

// walk visits every node below dir in name order. With dir at the root it
// skips by-signer/, whose symlinks repeat the sig/ entries.
//
// A directory listed by its parent that turns out to hold no valid entry is
// skipped and passed to skip (DESIGN §3: skip, say so, go on). A listing by
// prefix names an object from any key under it, valid or not: an older
// one-list key with no lines, a lone symlink or subdirectory of a
// directory-layout store, an S3 console "folder" key (sig/ab/cdef/).
func walk(ctx context.Context, ix *index.Index, dir string, fn func(p string, n index.Node) error, skip func(p string)) error {
	nodes, err := ix.ReadDir(ctx, dir)
	if err != nil {
		return err
	}
	return walkNodes(ctx, ix, dir, nodes, fn, skip)
}

// walkNodes visits nodes, the listing of dir, and below them. A directory
// is read before it is visited (one read each): one that holds nothing is
// not shown at all.
func walkNodes(ctx context.Context, ix *index.Index, dir string, nodes []index.Node, fn func(p string, n index.Node) error, skip func(p string)) error {
	for _, n := range nodes {
		p := path.Join(dir, n.Name)
		if dir == "" && n.Name == index.BySigner {
			continue
		}
		if n.Type != index.NodeDir {
			if err := fn(p, n); err != nil {
				return err
			}
			continue
		}
		children, err := ix.ReadDir(ctx, p)
		if errors.Is(err, iofs.ErrNotExist) {
			skip(p)
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(p, n); err != nil {
			return err
		}
		if err := walkNodes(ctx, ix, p, children, fn, skip); err != nil {
			return err
		}
	}
	return nil
}

func runCat(ctx context.Context, e *env, args []string) error {
	e.registerCreate()
	pos, err := e.parse(args, 2, 2)
	if err != nil {
		return err
	}
	ix, err := e.openReader(ctx, pos[0], false)
	if err != nil {
		return err
	}
	defer ix.Close()
	defer ix.Store().Close()
	p := cleanPath(pos[1])
	if p == ".oxy" || strings.HasPrefix(p, ".oxy/") {
		return catOxy(ctx, e, ix, p)
	}
	n, err := ix.Stat(ctx, p)
	if err != nil {
		return unnamedKey(ctx, ix, "cat", p, err)
	}
	if n.Type == index.NodeSymlink {
		p = cleanPath(path.Join(path.Dir(p), n.Target))
		if n, err = ix.Stat(ctx, p); err != nil {
			return err
		}
	}
	if n.Type != index.NodeFile {
		return fmt.Errorf("cat %s: %w", p, errIsDir)
	}
	if n.Entry.Kind != format.KindSig {
		return nil // index entries are empty: the value is in the key
	}
	data, err := ix.ReadSig(ctx, n.Entry)
	if err != nil {
		return err
	}
	_, err = e.rawStdout.Write(data) // the store's own bytes, exactly
	return err
}

var errIsDir = errors.New("is a directory")

// unnamedKey is the error of cat or ls (op) for a path p the index does not show
// (err): an entry path whose key exists in the store, which no live list or
// journal line names (an older writer's key, one whose journal line was
// lost, or one its writer is journaling now), says so and what shows it;
// anything else is err. Only this not-found path costs a request (one HEAD).
func unnamedKey(ctx context.Context, ix *index.Index, op, p string, err error) error {
	if !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	en, perr := index.ParseEntryPath(p)
	if perr != nil {
		return err
	}
	st := ix.Store()
	if ok, herr := st.Exists(ctx, en.Key()); herr != nil || !ok {
		return err
	}
	return fmt.Errorf("%s %s: the key exists in the store, but no live list or journal line names it (not folded or journaled yet: an older writer's key, or one whose journal line was lost), so readers of the folded store do not show it; a complete fold lists it: oxyfs fold %s", op, p, fold.ShellArg(st.URL()))
}

// entryOf parses a tree path of an entry: <kind>/<hh>/<rest>/<value>.
func entryOf(p string) (format.Entry, error) {
	p = strings.TrimPrefix(p, "/")
	e, err := index.ParseEntryPath(p)
	if err != nil {
		return format.Entry{}, usagef("%s is not an entry path <kind>/<hh>/<rest>/<value>: %v", termsafe.Quote(p), err)
	}
	return e, nil
}

// catOxy prints a file of the mount's .oxy/ view (status, journal, retired,
// lists/<name>), as cat of it through a mount would: .oxy/status is the
// index's status as JSON (a mount adds its mountpoint and FUSE counters),
// the records their text, a list its decompressed text, streamed.
func catOxy(ctx context.Context, e *env, ix *index.Index, p string) error {
	st := ix.Store()
	switch {
	case p == ".oxy/status":
		if err := ix.Load(ctx); err != nil {
			return err
		}
		data, err := json.MarshalIndent(ix.Status(), "", "  ")
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(append(data, '\n'))
		return err
	case p == ".oxy/journal" || p == ".oxy/retired":
		key := format.JournalKey
		if p == ".oxy/retired" {
			key = format.RetiredKey
		}
		data, err := st.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil // absent means empty
		}
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(data)
		return err
	case strings.HasPrefix(p, ".oxy/lists/") && !strings.Contains(p[len(".oxy/lists/"):], "/"):
		name := p[len(".oxy/lists/"):]
		if _, _, ok := format.ParseEntryListName(name); !ok {
			return fmt.Errorf("cat %s: %w", p, iofs.ErrNotExist)
		}
		data, err := st.Get(ctx, name)
		if err != nil {
			return fmt.Errorf("cat %s: %w", p, err)
		}
		t, err := format.NewEntryListText(data)
		if err != nil {
			return fmt.Errorf("cat %s: %w", p, err)
		}
		defer t.Close()
		_, err = io.Copy(e.stdout, io.NewSectionReader(t, 0, 1<<62))
		return err
	}
	return fmt.Errorf("cat %s: %w", p, iofs.ErrNotExist)
}
