// Package storegen writes synthetic stores: entries as current writers write them
// (per-object keys and journal lines, partially folded past
// format.PartialFoldThreshold), as older writers do, as older one-list keys,
// and optionally the complete list a fold would write. The same options write
// the same store. `oxyfs gen`, the mount's demo store, benchmarks and tests
// use it; it stands on store and store/journal alone, so the index's own
// tests can use it.
package storegen

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// Options describe a synthetic store for Generate.
type Options struct {
	Entries     int   // entries written as a current writer does: per-object key + journal line (or, with Fold, the list)
	Seed        int64 // the same seed writes the same store
	Signers     int   // distinct signers; 0 = 16
	Unjournaled int   // entries written as an older writer does: per-object key only, in no list or journal line
	Legacy      int   // older one-list keys (sigs/, seals/, ...), 1–2 lines each
	// Fold writes, as a complete fold would, one complete list of the
	// Entries (and of the legacy keys' contents, copied into per-object
	// entries, with the marker pack-legacy-folded) and no journal lines.
	Fold bool
	// SkipObjects writes only the journal or list, not the per-object keys:
	// for benchmarks of an open, which never reads them (signature bytes
	// then cannot be read).
	SkipObjects bool
	Parallel    int                                // concurrent writes; 0 = 32
	Progress    func(done, total int)              // called as writes land (at most ~1000 times), and at the end
	OnEntry     func(e format.Entry, where string) // each entry generated: "journal", "list", "unjournaled", "legacy"
}

// Report says what Generate wrote.
type Report struct {
	Entries       int            `json:"entries"`
	Unjournaled   int            `json:"unjournaled"`
	LegacyKeys    int            `json:"legacy_keys"`
	LegacyEntries int            `json:"legacy_entries"`
	PerKind       map[string]int `json:"per_kind"`
	Objects       int            `json:"objects_written"` // per-object keys written
	JournalLines  int            `json:"journal_lines"`
	List          string         `json:"list,omitempty"`
	ListEntries   int            `json:"list_entries"`
	Marker        bool           `json:"marker"`
	KeyTextBytes  int64          `json:"key_text_bytes"` // of the Entries' keys
	Requests      store.Counts   `json:"requests"`
	Elapsed       time.Duration  `json:"elapsed_ns"`
}

// genWrite is one key Generate writes.
type genWrite struct {
	key  string
	data []byte
}

// entryWrite is one entry drawn, with a signature's bytes.
type entryWrite struct {
	Entry format.Entry
	Data  []byte
}

// generator draws entries from one seeded source, in a fixed order.
type generator struct {
	rng     *rand.Rand
	signers []string
	runners []string
	certs   []string
}

func newGenerator(g Options) *generator {
	n := g.Signers
	if n <= 0 {
		n = 16
	}
	gen := &generator{rng: rand.New(rand.NewPCG(uint64(g.Seed), uint64(g.Seed)^0x9e3779b97f4a7c15))}
	for i := 0; i < n; i++ {
		gen.signers = append(gen.signers, fmt.Sprintf("signer-%02d", i))
	}
	for i := 0; i < 8; i++ {
		gen.runners = append(gen.runners, fmt.Sprintf("runner-%d", i))
	}
	for i := 0; i < 2*n; i++ {
		gen.certs = append(gen.certs, gen.hex(8))
	}
	return gen
}

func (g *generator) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return hex.EncodeToString(b)
}

// kind draws a kind: ~70% sig, the rest spread over the other kinds.
func (g *generator) kind() format.Kind {
	switch r := g.rng.IntN(100); {
	case r < 70:
		return format.KindSig
	case r < 80:
		return format.KindSeal
	case r < 88:
		return format.KindReceipt
	case r < 94:
		return format.KindApproval
	case r < 97:
		return format.KindCert
	}
	return format.KindAccepted
}

// value draws a value of a kind: signers and approvers from the signers,
// runners, certificate key ids from a small pool, attestation ids unique.
func (g *generator) value(k format.Kind) string {
	switch k {
	case format.KindSig, format.KindApproval:
		return g.signers[g.rng.IntN(len(g.signers))]
	case format.KindReceipt:
		return g.runners[g.rng.IntN(len(g.runners))]
	case format.KindCert:
		return g.certs[g.rng.IntN(len(g.certs))]
	}
	return g.hex(32)
}

func (g *generator) sig() []byte {
	b := make([]byte, 64+g.rng.IntN(65))
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

// object draws one object and 1–2 entries of one kind on it (distinct values).
func (g *generator) object(max int) []entryWrite {
	k := g.kind()
	obj := g.hex(32)
	n := 1
	if max > 1 && g.rng.IntN(4) == 0 {
		n = 2
	}
	var ws []entryWrite
	for len(ws) < n {
		v := g.value(k)
		if slices.ContainsFunc(ws, func(w entryWrite) bool { return w.Entry.Value == v }) {
			if k == format.KindReceipt || k == format.KindCert || len(g.signers) < 2 {
				break
			}
			continue
		}
		w := entryWrite{Entry: format.Entry{Kind: k, Object: obj, Value: v}}
		if k == format.KindSig {
			w.Data = g.sig()
		}
		ws = append(ws, w)
	}
	return ws
}

// Generate writes a synthetic store: Entries entries as current writers
// write them (their journal lines through journal.Append, so more than
// format.PartialFoldThreshold of them are partially folded, as a writer's
// are), Unjournaled as older writers do, Legacy older one-list keys; with
// Fold, the complete list a fold would write. Writes run in parallel;
// the store written depends only on the options. Fold describes a fold of
// what this call wrote: use it on an empty store.
func Generate(ctx context.Context, st *store.Store, g Options) (Report, error) {
	start, before := time.Now(), st.Counts()
	gn := &generation{g: g, rep: &Report{PerKind: map[string]int{}}}
	if g.Entries < 0 || g.Unjournaled < 0 || g.Legacy < 0 {
		return *gn.rep, errors.New("generate: negative count")
	}
	gn.src = newGenerator(g)
	gn.drawCurrent()
	gn.drawUnjournaled()
	gn.drawLegacy()
	err := gn.write(ctx, st)
	if err == nil {
		err = gn.index(ctx, st)
	}
	if err != nil {
		return *gn.rep, err
	}
	gn.rep.Requests, gn.rep.Elapsed = st.Counts().Sub(before), time.Since(start)
	return *gn.rep, nil
}

// generation is Generate as it goes: the entries drawn, in a fixed order
// from one seeded source, then written. Each field is set by the step
// named; the draws run in that order, so the same options draw the same.
type generation struct {
	g   Options
	src *generator
	rep *Report // filled in as the steps go
	// drawCurrent, drawUnjournaled, drawLegacy: the keys to write, in the
	// order drawn.
	writes []genWrite
	// drawCurrent, drawLegacy (with Fold): the keys journaled or listed.
	keys []string
}

// note tells OnEntry of an entry drawn, and counts it by kind.
func (gn *generation) note(w entryWrite, where string) {
	if gn.g.OnEntry != nil {
		gn.g.OnEntry(w.Entry, where)
	}
	gn.rep.PerKind[w.Entry.Kind.String()]++
}

// drawCurrent draws the Entries, as current writers write them: each key
// journaled (or, with Fold, listed), and written unless SkipObjects.
func (gn *generation) drawCurrent() {
	g, rep := gn.g, gn.rep
	where := "journal"
	if g.Fold {
		where = "list"
	}
	for rep.Entries < g.Entries {
		for _, w := range gn.src.object(g.Entries - rep.Entries) {
			gn.note(w, where)
			key := w.Entry.Key()
			gn.keys = append(gn.keys, key)
			rep.KeyTextBytes += int64(len(key))
			if !g.SkipObjects {
				gn.writes = append(gn.writes, genWrite{key, w.Data})
			}
			rep.Entries++
		}
	}
}

// drawUnjournaled draws the Unjournaled entries, as older writers write
// them: the per-object key alone.
func (gn *generation) drawUnjournaled() {
	g, rep := gn.g, gn.rep
	for rep.Unjournaled < g.Unjournaled {
		for _, w := range gn.src.object(g.Unjournaled - rep.Unjournaled) {
			gn.note(w, "unjournaled")
			gn.writes = append(gn.writes, genWrite{w.Entry.Key(), w.Data})
			rep.Unjournaled++
		}
	}
}

// drawLegacy draws the Legacy older one-list keys, 1–2 entries each; with
// Fold, their entries are copied into per-object keys and listed, as a
// complete fold copies them.
func (gn *generation) drawLegacy() {
	for i := 0; i < gn.g.Legacy; i++ {
		ws := gn.src.object(2)
		e := ws[0].Entry
		key := format.LegacyKey(e.Kind, e.Object)
		var data []byte
		if e.Kind == format.KindSig {
			var sigs []format.LegacySig
			for _, w := range ws {
				sigs = append(sigs, format.LegacySig{Signer: w.Entry.Value, Sig: w.Data})
			}
			data = format.LegacySigs(sigs)
		} else {
			var vals []string
			for _, w := range ws {
				vals = append(vals, w.Entry.Value)
			}
			data = format.LegacyValues(vals)
		}
		gn.writes = append(gn.writes, genWrite{key, data})
		gn.rep.LegacyKeys++
		for _, w := range ws {
			gn.note(w, "legacy")
			gn.rep.LegacyEntries++
			if gn.g.Fold {
				// A complete fold copies the legacy contents into entries.
				gn.writes = append(gn.writes, genWrite{w.Entry.Key(), w.Data})
				gn.keys = append(gn.keys, w.Entry.Key())
			}
		}
	}
}

// write writes every key drawn, in parallel (genPut).
func (gn *generation) write(ctx context.Context, st *store.Store) error {
	if err := genPut(ctx, st, gn.writes, gn.g); err != nil {
		return err
	}
	gn.rep.Objects = len(gn.writes)
	return nil
}

// index names the keys journaled or listed as their writer or a fold
// would: with Fold, the complete list (and, over older lists, the marker);
// else in the bucket layout one journal update, partially folded past
// format.PartialFoldThreshold lines. In the directory layout a writer
// keeps no journal (as index.Index.PutBatch): the keys are all.
func (gn *generation) index(ctx context.Context, st *store.Store) error {
	rep, keys := gn.rep, gn.keys
	switch {
	case gn.g.Fold:
		slices.Sort(keys)
		keys = slices.Compact(keys)
		id, data, err := format.EncodeEntryListSorted(keys)
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		rep.List, rep.ListEntries = format.EntryListName(id, true), len(keys)
		if err := st.Put(ctx, rep.List, data); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		if gn.g.Legacy > 0 {
			if err := st.Put(ctx, format.LegacyFoldedMarker, nil); err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			rep.Marker = true
		}
	case len(keys) > 0 && st.Layout() == store.LayoutBucket:
		if _, err := journal.Append(ctx, st, keys); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		rep.JournalLines = len(keys)
	}
	return nil
}

// genPut writes keys with bounded parallelism, stopping at the first error.
func genPut(ctx context.Context, st *store.Store, writes []genWrite, g Options) error {
	workers := g.Parallel
	if workers <= 0 {
		workers = 32
	}
	var done atomic.Int64
	var mu sync.Mutex
	step := max(1, len(writes)/1000)
	return par.ForEach(ctx, len(writes), workers, func(ctx context.Context, i int) error {
		if err := st.Put(ctx, writes[i].key, writes[i].data); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		if d := int(done.Add(1)); g.Progress != nil && (d%step == 0 || d == len(writes)) {
			mu.Lock()
			g.Progress(d, len(writes))
			mu.Unlock()
		}
		return nil
	})
}
