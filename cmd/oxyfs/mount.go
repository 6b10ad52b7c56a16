//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/metrics"
	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/refreshloop"
	"github.com/oxyfs/oxyfs/fs"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/holders"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

func init() {
	register(&command{
		name:    "mount",
		args:    "[STORE MOUNTPOINT]",
		summary: "mount the store's entries (sig/, seal/, …, by-signer/, .oxy/) at MOUNTPOINT, in the foreground (--daemon: detached once it serves); without arguments, a demo store generated on first run",
		run:     runMount,
	})
}

func runMount(ctx context.Context, e *env, args []string) (err error) {
	var mf mountFlags
	f := e.flags
	f.BoolVar(&mf.readOnly, "read-only", false, "refuse every write (EROFS)")
	f.BoolVar(&mf.overwrite, "allow-overwrite", false, "let a write replace an existing signature (without it: EPERM/EEXIST, only new entries)")
	f.BoolVar(&mf.anyName, "allow-any-name", false, "let a create take a name editors and systems write as side files (.x.swp, 4913, x~, .#x, #x#, ._x, .DS_Store, Thumbs.db, ~$x); without it: EPERM, logged once per name")
	f.BoolVar(&mf.allowOther, "allow-other", false, "let other users see the mount (needs user_allow_other in /etc/fuse.conf for non-root)")
	f.IntVar(&mf.uid, "uid", os.Getuid(), "owner of every file")
	f.IntVar(&mf.gid, "gid", os.Getgid(), "group of every file")
	f.StringVar(&mf.fileMode, "file-mode", "", "permission bits of files, octal (default 0644, 0444 read-only)")
	f.StringVar(&mf.dirMode, "dir-mode", "", "permission bits of directories, octal (default 0755, 0555 read-only)")
	f.BoolVar(&mf.debug, "debug", false, "log every FUSE operation")
	f.BoolVar(&mf.leafIDs, "leaf-ids", true, "give entry files and by-signer links no per-file node in the mount's memory: the kernel holds them by ids computed from the entry and its version (--leaf-ids=false: a node per file the kernel holds, as before)")
	f.BoolVar(&mf.daemon, "daemon", false, "detach once the mount serves, as the fstab helper (mount.oxyfs) always does; the log then goes to --log-file, else to syslog when /dev/log is there, else nowhere")
	mf.indexFlags.register(f)
	e.registerCreate()
	mf.logFlags.register(f)
	f.StringVarP(&mf.options, "options", "o", "", "mount options as in fstab: ro, rw, allow_other, allow_overwrite, allow_any_name, noleaf_ids, uid=N, gid=N, refresh=DURATION (0: only on SIGHUP), timeout=DURATION, pipeline_depth=N, layout=L, create, log_file=PATH, log_level=L, log_format=F, credentials_file=PATH, debug (others are ignored)")
	f.StringVar(&mf.credFile, "credentials-file", "", "read the store's credentials from this file of NAME=VALUE lines (AWS_SECRET_ACCESS_KEY=..., mode 0600, yours or root's) into the environment (fstab: credentials_file=PATH): a password in the store URL is in /etc/fstab and in every process's command line that local users read")
	pos, err := e.parse(args, 0, 2)
	if err != nil {
		return err
	}
	unknown, err := applyMountOptions(&mf, &e.common, mf.options)
	if err != nil {
		return err
	}
	for _, o := range unknown {
		fmt.Fprintf(e.stderr, "oxyfs: mount option %q is neither oxyfs's nor mount(8)'s; ignored\n", termsafe.Value(o))
	}
	if err := mf.checkMetricsAddr(); err != nil {
		return err
	}
	child := detachedChild()
	if mf.daemon && child == nil {
		return exitCode(runDetached(append([]string{"mount"}, args...), e.stderr))
	}
	// A log nobody reads any more (a closed pipe) must not stop the mount.
	ignoreSIGPIPE()
	lg, err := newLog(e.stderr, mf.logFlags, child != nil)
	if err != nil {
		return err
	}
	defer lg.close()
	// A mount that fails before it serves says why on stderr (the
	// command's error); the --log-file gets the line too, else a detached
	// mount's log says nothing of it. Once a detached mount serves, its
	// stderr is the log file: nothing more to write there.
	served := false
	defer func() {
		if err != nil && !(served && child != nil) {
			lg.toFile(slog.LevelError, "mount failed: "+err.Error())
		}
	}()
	if mf.file != "" && child == nil {
		fmt.Fprintf(e.stderr, "oxyfs: logging to %s\n", mf.file)
	}
	var storeURL, dir string
	switch len(pos) {
	case 0:
		// Check FUSE before generating the demo store: no work wasted.
		if err := fs.CheckFUSE(); err != nil {
			return fmt.Errorf("mount the demo store: %w", err)
		}
		if storeURL, dir, err = demoStore(ctx, e); err != nil {
			return err
		}
	case 2:
		storeURL, dir = childStoreURL(pos[0]), pos[1]
	default:
		return usagef("want STORE MOUNTPOINT, or no arguments for the demo store")
	}
	opts := fs.Options{ReadOnly: mf.readOnly, AllowOverwrite: mf.overwrite, AllowAnyName: mf.anyName, AllowOther: mf.allowOther, UID: uint32(mf.uid), GID: uint32(mf.gid), Debug: mf.debug, LeafIDs: mf.leafIDs}
	if opts.FileMode, err = parseMode(mf.fileMode); err != nil {
		return err
	}
	if opts.DirMode, err = parseMode(mf.dirMode); err != nil {
		return err
	}
	logger := lg.std
	opts.Logf = lg.printf
	opts.Log = lg.Logger // failed writes at WARN or ERROR, with the key (fs/errno.go failed)

	// Check the mountpoint before sending the store anything.
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	// The index works on its own context: SIGINT must flush pending
	// writes, not cancel them.
	bg := context.Background()
	var met *metrics.Metrics
	sopts := store.Options{ReadOnly: mf.readOnly}
	if mf.metricsAddr != "" {
		met = metrics.New()
		sopts.Observe, opts.Observe = met.ObserveStore, met.ObserveFUSE
	}
	if mf.credFile != "" {
		if err := loadCredentialsFile(mf.credFile); err != nil {
			return err
		}
	}
	st, err := e.openStore(bg, storeURL, sopts)
	if err != nil {
		return err
	}
	defer st.Close()
	opts.FSName = "oxyfs:" + st.URL()
	ix, err := index.Open(bg, st, mf.indexOptions(logger))
	if err != nil {
		return err
	}
	openTime, err := loadIndex(bg, ix)
	if err != nil {
		return err
	}
	if err := e.openedIndex(bg, ix, true, lg.printf); err != nil {
		ix.Close()
		return err
	}
	m, err := fs.Mount(dir, ix, opts)
	if err != nil {
		ix.Close()
		return err
	}
	s := ix.Status()
	lg.Info(fmt.Sprintf("mounted %s at %s (%s, %s layout, %s; open took %s and %s; %s)",
		st.URL(), dir, s.Mode, s.Layout, s.EntriesText(), openTime.Round(time.Millisecond), strings.TrimPrefix(s.OpenRequests.String(), "requests: "), listsNote(s.ListCache)))
	if mf.metricsAddr != "" {
		met.Watch(ix, m.Ops)
		met.WatchRequests(m.Requests)
		stop, err := serveMetrics(mf.metricsAddr, met, logger)
		if err != nil {
			m.Unmount()
			ix.Close()
			return err
		}
		defer stop()
	}
	if err := sdNotify("READY=1"); err != nil {
		lg.Warn(err.Error())
	}
	if child != nil {
		child.serving(lg)
	}
	served = true
	return serveMount(ctx, ix, m, mf.refresh, lg)
}

// serveMount runs until the kernel unmounts or SIGINT/SIGTERM arrives;
// SIGHUP and the refresh interval re-read the store (refreshloop).
func serveMount(ctx context.Context, ix *index.Index, m *fs.Server, every time.Duration, lg *oxyLog) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// Every SIGINT/SIGTERM tries to unmount. The first reaches us through
	// ctx (signal.NotifyContext in main), whose cancel runs on a goroutine
	// of its own: ctx.Err() looked at once here may not say so yet (a
	// mount interrupted right after "mounted" never unmounted), so
	// ctx.Done() is waited on. term is registered only once ctx is done:
	// the signal package delivers under a lock Notify takes too, so the
	// first signal never reaches term as well (a second unmount attempt
	// for one signal), and every later one does.
	term := make(chan os.Signal, 1)
	defer signal.Stop(term)
	ctxDone := ctx.Done()
	if ctxDone == nil { // a context that is never done: no signal reaches us through it
		signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	}
	// Each refresh drops what the kernel caches of what changed: the
	// mount subscribes to its index (fs.Mount). A quiet store is refreshed
	// every interval (on by default): an interval refresh is logged only
	// when it changed the view; SIGHUP's always.
	rc := refreshloop.Config{Every: every, Hangup: hup, Logf: lg.printf, Quiet: true}
	stopRefresh := refreshloop.Start(ix, rc)
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	for {
		select {
		case <-done:
			_ = sdNotify("STOPPING=1")
			lg.Info(fmt.Sprintf("unmounted from outside (umount %s); exiting", m.Dir()))
			stopRefresh()
			return ix.Close()
		case <-ctxDone:
			ctxDone = nil
			signal.Notify(term, os.Interrupt, syscall.SIGTERM)
		case <-term:
		}
		// Unmount first (it waits for the writes in flight), and only
		// then close the index: a mount still in use keeps serving. A
		// refresh in flight ends before the unmount begins.
		_ = sdNotify("STOPPING=1")
		lg.Info("unmounting: flushing pending writes")
		stopRefresh()
		if err := m.Unmount(); err != nil {
			lg.Error(fmt.Sprintf("%v; still mounted and serving: close what uses it (%s) and send the signal again (SIGINT or SIGTERM)", err, holders.Of(m.Dir())))
			_ = sdNotify("READY=1")
			stopRefresh = refreshloop.Start(ix, rc)
			continue
		}
		<-done
		err := ix.Close()
		lg.Info(fmt.Sprintf("unmounted %s; exiting", m.Dir()))
		return err
	}
}

// demoStore returns the embedded default: a local store generated on the
// first run in a private folder of the user's cache directory
// (demoStoreDir), and a mountpoint beside the
// working directory.
func demoStore(ctx context.Context, e *env) (string, string, error) {
	dir, err := demoStoreDir()
	if err != nil {
		return "", "", err
	}
	url := "file://" + dir
	if e.common.layout == "auto" {
		e.common.layout = "bucket"
	}
	if _, err := os.Stat(filepath.Join(dir, format.JournalKey)); err != nil {
		fmt.Fprintf(e.stderr, "oxyfs: generating the demo store in %s (first run)\n", dir)
		st, err := e.openStore(ctx, url, store.Options{Create: true})
		if err != nil {
			return "", "", err
		}
		_, err = storegen.Generate(ctx, st, storegen.Options{Entries: 2000, Seed: 1, Signers: 8, Fold: true})
		if err == nil {
			// A few writes after the fold, so the demo has a journal too.
			_, err = storegen.Generate(ctx, st, storegen.Options{Entries: 20, Seed: 2, Signers: 8})
		}
		if err != nil {
			return "", "", fmt.Errorf("generate the demo store: %w", err)
		}
	}
	abs, err := demoMountpoint()
	if err != nil {
		return "", "", err
	}
	fmt.Fprintf(e.stderr, "oxyfs: demo: try `ls %s/sig`, `find %s -type f | head`, `cat %s/.oxy/status`; Ctrl-C unmounts\n", abs, abs, abs)
	return url, abs, nil
}
