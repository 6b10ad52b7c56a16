package fileblob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// ListPaged implements driver.Bucket: one page of a walk, in key order,
// from the deepest directory the prefix names (listStart, per platform).
func (b *fileBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts.Delimiter != "" && opts.Delimiter != "/" {
		return nil, fileErr(gcerrors.Unimplemented, "file store: list delimiter %q (only \"/\")", opts.Delimiter)
	}
	if opts.BeforeList != nil {
		if err := opts.BeforeList(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	l := &fileLister{ctx: ctx, root: b.root, fault: b.opts.Fault, prefix: opts.Prefix, delim: opts.Delimiter != "", token: string(opts.PageToken), size: opts.PageSize}
	if l.size <= 0 {
		l.size = 1000
	}
	start := ""
	if i := strings.LastIndexByte(l.prefix, '/'); i >= 0 {
		start = l.prefix[:i+1]
	}
	d, done, err := b.listStart(l, start)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return &driver.ListPage{}, nil
	}
	err = l.walk(d, start)
	done()
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, fmt.Errorf("list %q: %w", l.prefix, err)
	}
	page := &driver.ListPage{Objects: l.out}
	if l.more {
		page.NextPageToken = []byte(l.out[len(l.out)-1].Key)
	}
	return page, nil
}

// listDir is one directory of a listing walk, as the platform holds it (a
// descriptor on unix, a path on Windows): its entries in key order, a
// subdirectory, and a file's listing entry.
type listDir interface {
	entries(dirKey string) ([]fileDirent, error)
	sub(name, p string) (d listDir, done func(), err error)
	object(name, key string) (*driver.ListObject, error)
}

// walk lists the directory d, whose keys start with dirKey, in key order:
// the keys past the token under the prefix, a directory as one common
// prefix when the listing is delimited (if it holds a key), and stops with
// errPageFull once the page is full (add).
func (l *fileLister) walk(d listDir, dirKey string) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	ents, err := d.entries(dirKey)
	if err != nil {
		return err
	}
	for _, e := range ents {
		key := dirKey + e.name
		if e.dir {
			p := key + "/"
			switch {
			case !strings.HasPrefix(p, l.prefix):
				continue
			case p < l.token && !strings.HasPrefix(l.token, p):
				continue // every key under p sorts before the token
			case l.delim:
				if p <= l.token {
					continue
				}
				sd, done, err := d.sub(e.name, p)
				if err != nil {
					return err
				}
				ok, err := holdsKey(sd, p)
				done()
				if err != nil {
					return err
				}
				if ok {
					if err := l.add(&driver.ListObject{Key: p, IsDir: true}); err != nil {
						return err
					}
				}
				continue
			}
			if tooDeep(p) {
				// Shown, not entered: one irregular item (a reader warns
				// of it once) instead of a descriptor per level.
				if key <= l.token {
					continue
				}
				if err := l.add(&driver.ListObject{Key: key, AsFunc: fileEntryMode(fs.ModeDir)}); err != nil {
					return err
				}
				continue
			}
			sd, done, err := d.sub(e.name, p)
			if err != nil {
				return err
			}
			err = l.walk(sd, p)
			done()
			if err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(key, l.prefix) || key <= l.token {
			continue
		}
		if err := l.injected("stat", key); err != nil {
			return &fs.PathError{Op: "stat", Path: key, Err: err}
		}
		obj, err := d.object(e.name, key)
		if err != nil {
			return err
		}
		if err := l.add(obj); err != nil {
			return err
		}
	}
	return nil
}

// MaxDepth is how many directories deep below a store's root a listing
// goes. The layout's deepest key, <kind>/<hh>/<rest>/<value>, is three
// directories deep; a deeper tree holds no key of a store, and a walk holds
// a descriptor and a directory's entries per level (21,000 nested empty
// folders under sig/ab/ made every command fail with "too many open files"
// at ~900 MB, issue 41). A directory at depth MaxDepth is not entered: a
// listing returns it as one item whose mode is a directory (ListItem.
// Irregular), which a reader reports once as a key it cannot read.
const MaxDepth = 16

// tooDeep reports whether the directory of key prefix p ("a/b/") is deeper
// than MaxDepth.
func tooDeep(p string) bool { return strings.Count(p, "/") > MaxDepth }

// holdsKey reports whether the directory d (keys prefix p) holds any key,
// at any depth: a delimited listing names a directory only then, as a
// bucket names a common prefix only if a key has it.
func holdsKey(d listDir, p string) (bool, error) {
	ents, err := d.entries(p)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if !e.dir {
			return true, nil
		}
	}
	for _, e := range ents {
		if tooDeep(p + e.name + "/") {
			return true, nil // listed, it shows as the irregular item walk gives it
		}
		sd, done, err := d.sub(e.name, p+e.name+"/")
		if err != nil {
			return false, err
		}
		ok, err := holdsKey(sd, p+e.name+"/")
		done()
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}
