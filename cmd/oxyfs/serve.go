package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/metrics"
	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/refreshloop"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/web"
)

func init() {
	register(&command{
		name:    "serve",
		args:    "STORE [--http ADDR] [--webdav] [--refresh-interval D] [--metrics-addr ADDR]",
		summary: "serve the tree read-only over HTTP (directory pages, signature bytes, /.oxy/status) and WebDAV (/dav/, or every path with --webdav), in the foreground, for machines without FUSE",
		run:     runServe,
	})
}

// defaultServeAddr is where `oxyfs serve` listens unless told otherwise.
const defaultServeAddr = "127.0.0.1:8080"

type serveFlags struct {
	indexFlags
	logFlags
	addr       string
	webdavRoot bool
	limits     web.Limits
	auth       serveAuth
}

func runServe(ctx context.Context, e *env, args []string) (err error) {
	var sf serveFlags
	f := e.flags
	f.StringVar(&sf.addr, "http", defaultServeAddr, "listen at this address (host:port; port 0 picks a free one)")
	f.BoolVar(&sf.webdavRoot, "webdav", false, "serve WebDAV at every path, so a client can mount http://ADDR/ itself (it is always served under /dav/)")
	sf.indexFlags.register(f)
	e.registerCreate()
	sf.logFlags.register(f)
	registerLimits(f, &sf.limits)
	sf.auth.register(f)
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	htp, tlsConf, err := sf.auth.load()
	if err != nil {
		return err
	}
	var warnings []string
	loopback, err := checkServeAddr(sf.addr, sf.allowRemote, htp != nil, tlsConf != nil, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		return err
	}
	var met *metrics.Metrics
	sopts := store.Options{ReadOnly: true}
	if err := sf.checkMetricsAddr(); err != nil {
		return err
	}
	if sf.metricsAddr != "" {
		met = metrics.New()
		sopts.Observe = met.ObserveStore
	}
	// A log nobody reads any more (a closed pipe) must not stop the server.
	ignoreSIGPIPE()
	lg, err := newLog(e.stderr, sf.logFlags, false)
	if err != nil {
		return err
	}
	defer lg.close()
	// A server that fails says why on stderr (the command's error), and in
	// the --log-file too, as a mount does: a service's stderr is often
	// nowhere anyone reads.
	defer func() {
		if err != nil {
			lg.toFile(slog.LevelError, "serve failed: "+err.Error())
		}
	}()
	if sf.file != "" {
		fmt.Fprintf(e.stderr, "oxyfs: logging to %s\n", sf.file)
	}
	logger := lg.std
	for _, w := range warnings {
		lg.Warn(w)
	}

	// The index works on its own context: a signal stops the server, and
	// requests in flight finish on their own contexts.
	bg := context.Background()
	st, err := e.openStore(bg, pos[0], sopts)
	if err != nil {
		return err
	}
	defer st.Close()
	ix, err := index.Open(bg, st, sf.indexOptions(logger))
	if err != nil {
		return err
	}
	defer ix.Close()
	openTime, err := loadIndex(ctx, ix)
	if err != nil {
		return err
	}
	if err := e.openedIndex(ctx, ix, true, lg.printf); err != nil {
		return err
	}
	if met != nil {
		met.Watch(ix, nil)
		stop, err := serveMetrics(sf.metricsAddr, met, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := web.Listen(sf.addr, sf.limits)
	if err != nil {
		return err
	}
	// The Host check (DNS rebinding) stays on whenever --http is loopback,
	// whatever --allow-remote says: that flag lets a listener be remote
	// (--http, --metrics-addr), and only a remote --http needs other Hosts.
	srv := web.NewServer(web.Handler(ix, web.Options{WebDAVRoot: sf.webdavRoot, LoopbackOnly: loopback,
		Logf: lg.printf, MaxRequestBody: sf.limits.MaxRequestBody, Htpasswd: htp}), sf.limits, logger)
	served := make(chan error, 1)
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
		srv.TLSConfig = tlsConf
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	s := ix.Status()
	lg.Info(fmt.Sprintf("serving %s at %s://%s/%s", st.URL(), scheme, ln.Addr(), authNote(htp != nil)))
	lg.Info(fmt.Sprintf("%s, %s layout, %s; open took %s and %s; %s; WebDAV at %s://%s%s/",
		s.Mode, s.Layout, s.EntriesText(), openTime.Round(time.Millisecond), strings.TrimPrefix(s.OpenRequests.String(), "requests: "), listsNote(s.ListCache), scheme, ln.Addr(), davAt(sf.webdavRoot)))
	if err := sdNotify("READY=1"); err != nil {
		lg.Warn(err.Error())
	}
	return serveHTTP(ctx, ix, srv, served, sf.refresh, lg)
}

// serveHTTP runs until ctx ends (SIGINT, SIGTERM) or the server fails;
// SIGHUP and the refresh interval re-read the store (refreshloop).
func serveHTTP(ctx context.Context, ix *index.Index, srv *http.Server, served <-chan error, every time.Duration, lg *oxyLog) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// A quiet store is refreshed every interval: say so only when something
	// changed, or when asked.
	stopRefresh := refreshloop.Start(ix, refreshloop.Config{Every: every, Hangup: hup, Logf: lg.printf, Quiet: true})
	defer stopRefresh()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		_ = sdNotify("STOPPING=1")
		lg.Info("stopping: finishing the requests in flight")
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = srv.Close()
		}
		return err
	}
}

func authNote(on bool) string {
	if on {
		return " (users of --htpasswd only)"
	}
	return ""
}

func davAt(root bool) string {
	if root {
		return ""
	}
	return web.DAVPrefix
}

// registerLimits adds the flags of web.Limits (zero: web.DefaultLimits()).
func registerLimits(f *flag.FlagSet, l *web.Limits) {
	d := web.DefaultLimits()
	f.IntVar(&l.MaxConns, "max-connections", d.MaxConns, "serve at most this many connections at once: a new one closes the connection idle longest, or waits until one closes or is idle (negative: no cap)")
	f.Int64Var(&l.MaxRequestBody, "max-request-body", d.MaxRequestBody, "refuse (413) a request body longer than this many bytes (a PROPFIND's XML is a few hundred; negative: no limit)")
	f.DurationVar(&l.ReadTimeout, "read-timeout", d.ReadTimeout, "close a connection whose request (headers and body) takes longer than this to arrive (its headers: at most 10s)")
	f.DurationVar(&l.WriteTimeout, "write-timeout", d.WriteTimeout, "close a connection whose response takes longer than this to be read")
	f.DurationVar(&l.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a kept-alive connection idle this long")
}

// checkListenAddr refuses a listen address that is not loopback unless
// allowRemote (what flag names it, what is served there without
// authentication), and reports whether it is loopback. `oxyfs serve --http`
// and `oxyfs mount --metrics-addr` share it: ":PORT" (every interface) is
// refused the same way, with the flag to pass.
func checkListenAddr(flagName, addr string, allowRemote bool, what string) (bool, error) {
	loopback, err := loopbackAddr(addr)
	if err != nil {
		return false, usagef("%s %q: %v", flagName, addr, err)
	}
	if !loopback && !allowRemote {
		return false, usagef("%s %s is not a loopback address; %s without authentication, so pass --allow-remote to serve it there (or listen on 127.0.0.1)", flagName, addr, what)
	}
	return loopback, nil
}

// loopbackAddr checks a listen address and reports whether it is loopback:
// localhost or a loopback IP. An empty host (every interface) is not.
func loopbackAddr(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if port == "" {
		return false, errors.New("missing port")
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
