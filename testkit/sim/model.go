package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// The key universe every run draws from: few enough objects and values that
// operations keep meeting each other's keys (re-signs, forgetting an object
// that has entries, two objects under one <hh>), and <hh> directories shared
// by several objects so that listings of one <hh> span pages on the paged
// backend.
var (
	objects = []string{"aa01", "aa02", "ab03", "cd0405", "cd06", "ef07"}
	values  = []string{"alice", "bob", "carol"}
)

// entry is what the model knows of one per-object key that exists.
type entry struct {
	// covered: a reader of a folded store finds the key — a journal line
	// names it (this implementation's writers add one after the key), or a
	// complete fold listed it since it was written. An older writer's key
	// (no journal line) is not covered until the next complete fold: the
	// spec's one allowed difference (§13.7 "Older writers").
	covered bool
	data    []byte // a signature's bytes as last written; nil for other kinds
}

// model is the reference of spec §13.7 the simulation holds the real code
// to. It is deliberately small: a set of keys, a flag per key, and whether
// the store is folded.
type model struct {
	e      map[string]*entry
	folded bool // a complete list is live: set by a complete fold; cleared only by a fold that reports Unfolded

	// Byte mode's hook (bytes.go): a key's bytes were written. nil
	// otherwise.
	onWrite func(key string, data []byte, journaled bool)
}

func newModel() *model { return &model{e: map[string]*entry{}} }

// expected is the exact set of entry keys every reader must show now:
// every key on a store that is not folded (readers list the prefixes), and
// every covered key on a folded one.
func (m *model) expected() map[string]bool {
	out := make(map[string]bool, len(m.e))
	for k, en := range m.e {
		if !m.folded || en.covered {
			out[k] = true
		}
	}
	return out
}

// lag is the set of existing keys a folded reader is allowed to miss.
func (m *model) lag() []string {
	var out []string
	for k, en := range m.e {
		if !en.covered {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// written records a key that landed. journaled: a journal line for it
// landed too.
func (m *model) written(key string, data []byte, journaled bool) {
	en := m.e[key]
	if en == nil {
		en = &entry{}
		m.e[key] = en
	}
	en.data = data
	en.covered = en.covered || journaled
	if m.onWrite != nil {
		m.onWrite(key, data, journaled)
	}
}

// completeFold records a complete fold that made its list live: every key
// that exists was listed, so every key is covered.
func (m *model) completeFold() {
	m.folded = true
	for _, en := range m.e {
		en.covered = true
	}
}

// forget drops the keys of a forgotten object's kinds.
func (m *model) forget(obj string, kinds []format.Kind) []string {
	var gone []string
	for k := range m.e {
		if forgets(k, obj, kinds) {
			gone = append(gone, k)
			delete(m.e, k)
		}
	}
	slices.Sort(gone)
	return gone
}

// forgets reports whether forgetting obj's kinds (nil: all) covers key.
func forgets(key, obj string, kinds []format.Kind) bool {
	e, err := format.ParseKey(key)
	if err != nil || e.Object != obj {
		return false
	}
	return len(kinds) == 0 || slices.Contains(kinds, e.Kind)
}

// keyOf builds an entry key of the universe.
func keyOf(kind format.Kind, obj, val string) string {
	return format.Entry{Kind: kind, Object: obj, Value: val}.Key()
}

// diff returns what want has that got lacks (missing) and the reverse
// (extra), each sorted.
func diff(want, got map[string]bool) (missing, extra []string) {
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

func describeDiff(missing, extra []string) string {
	var b strings.Builder
	if len(missing) > 0 {
		fmt.Fprintf(&b, "missing %v", missing)
	}
	if len(extra) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "extra %v", extra)
	}
	return b.String()
}

func union(sets ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range sets {
		for k := range s {
			out[k] = true
		}
	}
	return out
}

func setOf(keys []string) map[string]bool {
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}
