package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// A tree is every name a handle shows under its root but .oxy/, by path:
// "dir", "file:" and the file's bytes, or "link:" and the link's target.
type tree map[string]string

// indexTree walks an index handle: ReadDir from the root, every signature
// read with ReadSig (index entries are empty).
func indexTree(ctx context.Context, ix *index.Index) (tree, error) {
	out := tree{}
	var walk func(dir string) error
	walk = func(dir string) error {
		nodes, err := ix.ReadDir(ctx, dir)
		if err != nil {
			return fmt.Errorf("readdir %q: %w", dir, err)
		}
		for _, n := range nodes {
			p := path.Join(dir, n.Name)
			if dir == "" && n.Name == ".oxy" {
				continue
			}
			switch n.Type {
			case index.NodeDir:
				out[p] = "dir"
				if err := walk(p); err != nil {
					return err
				}
			case index.NodeSymlink:
				out[p] = "link:" + n.Target
			default:
				if n.Entry.Kind != format.KindSig {
					out[p] = "file:"
					continue
				}
				data, err := ix.ReadSig(ctx, n.Entry)
				if err != nil {
					return fmt.Errorf("read %s: %w", p, err)
				}
				out[p] = "file:" + string(data)
			}
		}
		return nil
	}
	return out, walk("")
}

// mountTree walks a mount through the kernel: a ReadDir walk, every file
// read whole by name (as cat does), every link read.
func mountTree(mnt string) (tree, error) {
	out := tree{}
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		switch {
		case rel == ".":
			return nil
		case rel == ".oxy":
			return filepath.SkipDir
		case d.IsDir():
			out[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file:" + string(data)
		}
		return nil
	})
	return out, err
}

// serveTree walks `oxyfs serve` at base over HTTP: every directory's
// listing (?format=json), every file's bytes by GET.
func serveTree(ctx context.Context, base string) (tree, error) {
	out := tree{}
	get := func(p string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", p, resp.Status, clip(string(body), 200))
		}
		return body, nil
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		u := "/" + dir + "/?format=json"
		if dir == "" {
			u = "/?format=json"
		}
		body, err := get(u)
		if err != nil {
			return err
		}
		var page struct {
			Entries []struct {
				Name, Type, Target string
			} `json:"entries"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("decode %s: %w", u, err)
		}
		for _, e := range page.Entries {
			p := path.Join(dir, e.Name)
			if dir == "" && e.Name == ".oxy" {
				continue
			}
			switch e.Type {
			case "dir":
				out[p] = "dir"
				if err := walk(p); err != nil {
					return err
				}
			case "symlink":
				out[p] = "link:" + e.Target
			case "file":
				data, err := get("/" + p)
				if err != nil {
					return err
				}
				out[p] = "file:" + string(data)
			default:
				return fmt.Errorf("%s: type %q", p, e.Type)
			}
		}
		return nil
	}
	return out, walk("")
}

// treeDiff says how got differs from want ("" if it does not), at most 20
// lines, the bytes shortened.
func treeDiff(want, got tree) string {
	short := func(v string) string {
		if rest, ok := strings.CutPrefix(v, "file:"); ok {
			return fmt.Sprintf("%d bytes %q", len(rest), clip(rest, 24))
		}
		return v
	}
	var d []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			d = append(d, "missing "+p+" ("+short(w)+")")
		case g != w:
			d = append(d, fmt.Sprintf("%s: %s, want %s", p, short(g), short(w)))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p+" ("+short(g)+")")
		}
	}
	slices.Sort(d)
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("… and %d more", len(d)-20))
	}
	return strings.Join(d, "\n")
}
