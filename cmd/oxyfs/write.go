package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"io"
	"os"
	"strings"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

func init() {
	register(&command{
		name:    "put",
		args:    "STORE PATH [FILE|-] | STORE --batch LIST|-",
		summary: "write an entry: its own key, then a journal line; a signature's bytes come from FILE or stdin. --batch writes many entries with one journal update: LIST has lines PATH or PATH<TAB>FILE",
		run:     runPut,
	})
	register(&command{
		name:    "gen",
		args:    "STORE --entries N [--seed S] [--signers K] [--unjournaled U] [--legacy L] [--fold]",
		summary: "build a synthetic store for demos and benchmarks",
		run:     runGen,
	})
}

const maxSigBytes = 64 << 20

func readData(in io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(in, maxSigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxSigBytes {
		return nil, usagef("%s is larger than %d bytes", name, maxSigBytes)
	}
	return data, nil
}

func openData(e *env, file string) ([]byte, error) {
	if file == "-" {
		return readData(e.stdin, "stdin")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readData(f, file)
}

// checkData: a signature needs bytes, an index entry has none.
func checkData(en format.Entry, data []byte, haveFile bool) error {
	if en.Kind == format.KindSig && !haveFile {
		return usagef("%s: a signature needs its bytes (FILE or -)", termsafe.Quote(en.Key()))
	}
	if en.Kind == format.KindSig && len(data) == 0 {
		return usagef("%s: a signature needs its bytes, and the file given is empty", termsafe.Quote(en.Key()))
	}
	if en.Kind != format.KindSig && len(data) > 0 {
		return usagef("%s: %s entries are empty keys; the value is in the key", termsafe.Quote(en.Key()), en.Kind)
	}
	return nil
}

func runPut(ctx context.Context, e *env, args []string) error {
	batch := e.flags.String("batch", "", "write every entry listed in this file (- for stdin) with one journal update")
	force := e.flags.Bool("force", false, "replace signatures that exist (a signer signs again); without it an existing signature is refused")
	pos, err := e.parse(args, 1, 3)
	if err != nil {
		return err
	}
	var ws []index.Write
	if *batch != "" {
		if len(pos) != 1 {
			return usagef("--batch takes STORE only")
		}
		if ws, err = readBatch(e, *batch); err != nil {
			return err
		}
	} else {
		if len(pos) < 2 {
			return usagef("want STORE PATH [FILE|-]")
		}
		en, err := entryOf(cleanPath(pos[1]))
		if err != nil {
			return err
		}
		var data []byte
		if len(pos) == 3 {
			if data, err = openData(e, pos[2]); err != nil {
				return err
			}
		}
		if err := checkData(en, data, len(pos) == 3); err != nil {
			return err
		}
		ws = []index.Write{{Entry: en, Data: data}}
	}
	ix, err := e.openIndex(ctx, pos[0], store.Options{})
	if err != nil {
		return err
	}
	defer ix.Store().Close()
	if !*force {
		if err := refuseExisting(ctx, ix, ws); err != nil {
			ix.Close()
			return err
		}
	}
	err = ix.PutBatch(ctx, ws)
	if cerr := ix.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", english.Count(len(ws), "entry", "entries"))
	return nil
}

// readBatch reads lines "PATH" or "PATH<TAB>FILE".
func readBatch(e *env, name string) ([]index.Write, error) {
	var ws []index.Write
	err := eachLine(e, name, 1<<20, func(n int, line string) error {
		if line == "" {
			return nil
		}
		p, file, hasFile := strings.Cut(line, "\t")
		en, err := entryOf(cleanPath(p))
		if err != nil {
			return usagef("%s line %d: %v", name, n, err)
		}
		var data []byte
		if hasFile {
			if data, err = openData(e, file); err != nil {
				return fmt.Errorf("%s line %d: %w", name, n, err)
			}
		}
		if err := checkData(en, data, hasFile); err != nil {
			return usagef("%s line %d: %v", name, n, err)
		}
		ws = append(ws, index.Write{Entry: en, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// eachLine calls fn with each line of the file name ("-": stdin), numbered
// from 1, lines of at most maxLine bytes (0: bufio.MaxScanTokenSize). An
// error of fn stops it and is returned.
func eachLine(e *env, name string, maxLine int, fn func(n int, line string) error) error {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	if maxLine > 0 {
		sc.Buffer(make([]byte, 64<<10), maxLine)
	}
	for n := 1; sc.Scan(); n++ {
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

func runGen(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	var g storegen.Options
	e.flags.IntVar(&g.Entries, "entries", 1000, "entries written as a current writer does (per-object key + journal line, or the list with --fold)")
	e.flags.Int64Var(&g.Seed, "seed", 1, "the same seed writes the same store")
	e.flags.IntVar(&g.Signers, "signers", 16, "distinct signers")
	e.flags.IntVar(&g.Unjournaled, "unjournaled", 0, "entries written as an older writer does: per-object key only")
	e.flags.IntVar(&g.Legacy, "legacy", 0, "older one-list keys (sigs/, seals/, …)")
	e.flags.BoolVar(&g.Fold, "fold", false, "write one complete list of the entries, as a fold would, instead of journal lines")
	e.flags.IntVar(&g.Parallel, "parallel", 32, "concurrent writes")
	force := e.flags.Bool("force", false, "write into a location that is not empty (its synthetic entries mix with what is there)")
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if g.Entries < 0 || g.Unjournaled < 0 || g.Legacy < 0 || g.Signers < 1 || g.Parallel < 1 {
		return usagef("counts must be positive")
	}
	st, err := e.openStore(ctx, pos[0], store.Options{Create: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if !*force {
		p, err := st.Presence(ctx)
		if err != nil {
			return err
		}
		if !p.Empty {
			return fmt.Errorf("%s is not empty (it holds %s…): gen writes synthetic entries, so it refuses to mix them with what is there; pass --force to write anyway", st.URL(), strings.Join(p.Names, ", "))
		}
	}
	bar := e.newProgress("gen")
	g.Progress = func(done, total int) { bar.update(int64(done), int64(total), "writing") }
	rep, err := storegen.Generate(ctx, st, g)
	bar.done()
	if err != nil {
		return err
	}
	if e.common.json {
		return e.printJSON(rep)
	}
	fmt.Fprintf(e.stdout, "generated %d entries (%d unjournaled, %d legacy keys) in %s: %d per-object keys, %d journal lines",
		rep.Entries, rep.Unjournaled, rep.LegacyKeys, rep.Elapsed.Round(1e6), rep.Objects, rep.JournalLines)
	if rep.List != "" {
		fmt.Fprintf(e.stdout, ", complete list %s (%d entries)", rep.List, rep.ListEntries)
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// refuseExisting fails when a signature to write exists already (one HEAD
// of its per-object key, the truth: no open of the lists): replacing one
// needs --force, as a mount needs --allow-overwrite. Index entries are empty
// keys: writing one that exists changes nothing, so they pass.
func refuseExisting(ctx context.Context, ix *index.Index, ws []index.Write) error {
	for _, w := range ws {
		if w.Entry.Kind != format.KindSig {
			continue
		}
		ok, err := ix.Store().Exists(ctx, w.Entry.Key())
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s exists: pass --force to replace the signature", termsafe.Quote(w.Entry.Key()))
		}
	}
	return nil
}
