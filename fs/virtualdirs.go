package fs

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/index"
)

// virtualDirs are the directories mkdir made that hold no entry yet, by
// parent path. They live in memory until unmount.
type virtualDirs struct {
	mu      sync.Mutex          // protects the following; a leaf: nothing else is locked under it
	m       map[string][]string // parent -> sorted names; guarded by mu
	version atomic.Uint64       // atomic: bumped by every add (see listVersion)
}

func (v *virtualDirs) init() { v.m = make(map[string][]string) }

func (v *virtualDirs) add(p string) {
	dir, name := index.SplitPath(p)
	v.mu.Lock()
	defer v.mu.Unlock()
	names := v.m[dir]
	if i, ok := slices.BinarySearch(names, name); !ok {
		v.m[dir] = slices.Insert(names, i, name)
		v.version.Add(1)
	}
}

func (v *virtualDirs) has(p string) bool {
	dir, name := index.SplitPath(p)
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := slices.BinarySearch(v.m[dir], name)
	return ok
}

func (v *virtualDirs) children(dir string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.m[dir])
}
