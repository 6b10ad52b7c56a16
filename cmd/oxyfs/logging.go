package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// The log of `oxyfs mount` and `oxyfs serve` (log/slog): one timestamped
// line per event, as text or JSON, at --log-level and above, to stderr or
// --log-file. A detached mount (--daemon, the fstab helper) logs to
// --log-file, else to syslog when /dev/log is there, else nowhere, and says
// which before it detaches. A failed write of a log line is dropped: a log
// nobody reads (a closed pipe, a full disk) never stops a mount.

// logFlags are the log flags of mount and serve.
type logFlags struct {
	level  string
	format string
	file   string
}

func (l *logFlags) register(f *flag.FlagSet) {
	f.StringVar(&l.level, "log-level", "info", "log events of this level and above: debug, info, warn or error")
	f.StringVar(&l.format, "log-format", "text", "one line per event: text (time, level, message) or json (an object with time, level and msg)")
	f.StringVar(&l.file, "log-file", "", "append the log to this file instead of stderr (fstab: log_file=PATH); a detached mount (mount --daemon, fstab) without it logs to syslog when /dev/log is there, else nowhere")
}

// parseLevel reads a --log-level.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usagef("--log-level %q: want debug, info, warn or error", termsafe.Value(s))
}

// syslogSocket is where a detached mount looks for syslog (the journal
// listens there too); tests point it elsewhere.
var syslogSocket = "/dev/log"

// logSink is where log lines go; a detached mount switches it once.
type logSink struct {
	mu   sync.Mutex
	w    io.Writer     // guarded by mu; nil with sys nil: nowhere
	sys  *syslogWriter // guarded by mu; set: syslog, by each line's level
	file *os.File      // guarded by mu; the --log-file, if any
	tee  io.Writer     // guarded by mu; also written, ignoring w's errors: the file while a detaching mount still logs to stderr
	name string        // guarded by mu; what the sink is, for messages: "stderr", the file's path, "syslog", "nowhere"
}

// write writes one line; a failure is dropped (the package doc says why).
func (s *logSink) write(level slog.Level, line, bare []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sys != nil:
		msg := string(bytes.TrimSuffix(bare, []byte("\n")))
		switch {
		case level >= slog.LevelError:
			_ = s.sys.Err(msg)
		case level >= slog.LevelWarn:
			_ = s.sys.Warning(msg)
		case level >= slog.LevelInfo:
			_ = s.sys.Info(msg)
		default:
			_ = s.sys.Debug(msg)
		}
	case s.w != nil:
		_, _ = s.w.Write(line)
	}
	if s.tee != nil {
		_, _ = s.tee.Write(line)
	}
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name
}

// logHandler is the slog.Handler of the log: text or JSON lines, secrets
// redacted (termsafe.Redact) and control characters escaped (termsafe).
type logHandler struct {
	sink  *logSink
	level slog.Leveler
	json  bool
	attrs []slog.Attr // from WithAttrs, keys prefixed with their groups
	group string      // from WithGroup: "g." prefixes later keys
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), h.prefixed(as)...)
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

func (h *logHandler) prefixed(as []slog.Attr) []slog.Attr {
	if h.group == "" {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: h.group + a.Key, Value: a.Value}
	}
	return out
}

// Handle writes one line: text is "TIME LEVEL oxyfs: MSG k=v…", JSON is
// {"time":…,"level":…,"msg":…,"k":v…}. For syslog, which has its own time
// and priority, the text line goes without them.
func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := append([]slog.Attr(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, h.prefixed([]slog.Attr{a})...)
		return true
	})
	msg := strings.TrimPrefix(termsafe.Redact(r.Message), "oxyfs: ")
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	var line, bare []byte
	if h.json {
		line = h.jsonLine(t, r.Level, msg, attrs)
		bare = line
	} else {
		var b strings.Builder
		b.WriteString("oxyfs: ")
		b.WriteString(termsafe.Escape(msg))
		for _, a := range attrs {
			b.WriteByte(' ')
			b.WriteString(termsafe.Escape(a.Key))
			b.WriteByte('=')
			b.WriteString(textValue(termsafe.Redact(a.Value.Resolve().String())))
		}
		b.WriteByte('\n')
		bare = []byte(b.String())
		line = append([]byte(t.Format("2006-01-02T15:04:05.000Z07:00")+" "+r.Level.String()+" "), bare...)
	}
	h.sink.write(r.Level, line, bare)
	return nil
}

func (h *logHandler) jsonLine(t time.Time, level slog.Level, msg string, attrs []slog.Attr) []byte {
	var b bytes.Buffer
	put := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			vb, _ = json.Marshal(fmt.Sprint(v))
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('{')
	put("time", t.Format(time.RFC3339Nano))
	put("level", level.String())
	put("msg", msg)
	for _, a := range attrs {
		v := a.Value.Resolve().Any()
		if s, ok := v.(string); ok {
			v = termsafe.Redact(s)
		} else if err, ok := v.(error); ok {
			v = termsafe.Redact(err.Error())
		}
		put(a.Key, v)
	}
	b.WriteString("}\n")
	return termsafe.JSON(b.Bytes())
}

// textValue writes an attribute's value as slog's text handler does: bare
// unless it needs quotes.
func textValue(s string) string {
	if s == "" || strings.ContainsAny(s, " =\"") || !termsafe.Safe(s) {
		return strconv.Quote(s)
	}
	return s
}

// errnoNamedRE matches a line naming the errno a request failed with, as
// fs does: "(ENOSPC)", "(EDQUOT)", "(EAGAIN)"…: a failure the caller saw,
// never INFO.
var errnoNamedRE = regexp.MustCompile(`\(E[A-Z0-9]+\)`)

// levelOf is the level of a line from the packages that log with printf
// (fs, web, index, refreshloop): they name an error's errno or say
// "warning: ". TODO(issue 26): classified errors should carry their level.
func levelOf(msg string) slog.Level {
	switch {
	case strings.Contains(msg, "(EIO)"), strings.Contains(msg, "panic"),
		strings.Contains(msg, "still serving what was read before"), strings.Contains(msg, "still mounted and serving"),
		strings.HasPrefix(msg, "metrics server:"):
		return slog.LevelError
	case strings.HasPrefix(msg, "warning"), strings.Contains(msg, "refused"), errnoNamedRE.MatchString(msg):
		return slog.LevelWarn
	case strings.HasPrefix(msg, "invalidate ("):
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// leveled is a printf line's level (levelOf) and its message for the log:
// a leading "warning: ", which marks the level, is dropped, since the line
// says WARN already ("WARN oxyfs: warning: …" said it twice). The "oxyfs: "
// of a package that names the program is dropped too (the handler adds it).
func leveled(line string) (slog.Level, string) {
	msg := strings.TrimPrefix(line, "oxyfs: ")
	level := levelOf(msg)
	if level == slog.LevelWarn {
		if rest, ok := strings.CutPrefix(msg, "warning: "); ok && rest != "" {
			msg = rest
		}
	}
	return level, msg
}

// oxyLog is the log of one mount or serve.
type oxyLog struct {
	*slog.Logger
	sink *logSink
	// std is the same log as a *log.Logger, for the packages that take
	// one or a printf: each line is one event, its level from levelOf.
	std *log.Logger
}

// newLog makes the log that lf asks for; it writes to stderr unless
// --log-file names a file, which it opens (appending) now, so a path that
// cannot be written fails before anything is mounted. A mount that will
// detach writes both until it does (the user sees how the mount began).
func newLog(stderr io.Writer, lf logFlags, detaching bool) (*oxyLog, error) {
	level, err := parseLevel(lf.level)
	if err != nil {
		return nil, err
	}
	var asJSON bool
	switch lf.format {
	case "text", "":
	case "json":
		asJSON = true
	default:
		return nil, usagef("--log-format %q: want text or json", termsafe.Value(lf.format))
	}
	sink := &logSink{w: stderr, name: "stderr"}
	if lf.file != "" {
		f, err := openLogFile(lf.file)
		if err != nil {
			return nil, fmt.Errorf("log file: %w", err)
		}
		sink.w, sink.file, sink.name = f, f, lf.file
		if detaching {
			sink.w, sink.tee = stderr, f
		}
	}
	l := &oxyLog{Logger: slog.New(&logHandler{sink: sink, level: level, json: asJSON}), sink: sink}
	l.std = log.New(printfWriter{l.Logger}, "", 0)
	return l, nil
}

// printf logs one printf-style line at its levelOf.
func (l *oxyLog) printf(format string, args ...any) {
	level, msg := leveled(fmt.Sprintf(format, args...))
	l.Log(context.Background(), level, msg)
}

// printfWriter makes each Write of a *log.Logger one event.
type printfWriter struct{ l *slog.Logger }

func (w printfWriter) Write(p []byte) (int, error) {
	level, msg := leveled(strings.TrimRight(string(p), "\n"))
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}

// toFile logs msg at level to the --log-file alone (nothing without one):
// for what the command also says on stderr, such as why a mount failed.
func (l *oxyLog) toFile(level slog.Level, msg string) {
	l.sink.mu.Lock()
	f := l.sink.file
	l.sink.mu.Unlock()
	h, ok := l.Handler().(*logHandler)
	if f == nil || !ok || !h.Enabled(context.Background(), level) {
		return
	}
	c := *h
	c.sink = &logSink{w: f, name: f.Name()}
	_ = c.Handle(context.Background(), slog.NewRecord(time.Now(), level, msg, 0))
}

// close closes the log file, if any.
func (l *oxyLog) close() {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	if l.sink.file != nil {
		l.sink.file.Close()
		l.sink.file, l.sink.w, l.sink.tee = nil, nil, nil
	}
}

// detach moves the log off stderr for a mount that is about to detach: to
// the --log-file it already writes, else to syslog at syslogSocket, else
// nowhere. It says where on the old sink first (the mount helper shows
// that to the user) and again on the new one. It returns the file that
// should become the process's standard output and error from now on: the
// log file, or /dev/null.
func (l *oxyLog) detach() (*os.File, error) {
	l.sink.mu.Lock()
	file := l.sink.file
	l.sink.mu.Unlock()
	var sys *syslogWriter
	where := ""
	switch {
	case file != nil:
		where = "log file " + file.Name()
	default:
		var err error
		if sys, err = dialSyslog(syslogSocket); err == nil {
			where = "syslog (" + syslogSocket + ")"
		} else {
			where = fmt.Sprintf("nowhere (no --log-file, and no syslog: %v)", err)
		}
	}
	pid := os.Getpid()
	l.Info(fmt.Sprintf("detached (pid %d); logging to %s", pid, where))
	l.sink.mu.Lock()
	switch {
	case file != nil:
		l.sink.w, l.sink.tee, l.sink.name = file, nil, file.Name()
	case sys != nil:
		l.sink.sys, l.sink.w, l.sink.name = sys, nil, "syslog"
	default:
		l.sink.w, l.sink.name = nil, "nowhere"
	}
	l.sink.mu.Unlock()
	if sys != nil { // a log file had the line above already (the tee)
		l.Info(fmt.Sprintf("detached (pid %d); logging here", pid))
	}
	if file != nil {
		return file, nil
	}
	return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
}

// sigpipe receives SIGPIPE for ignoreSIGPIPE (nobody reads it).
var sigpipe = make(chan os.Signal, 1)

// ignoreSIGPIPE makes a write to a closed pipe fail with EPIPE instead of
// killing the process. Go kills a program that writes to a broken pipe on
// fd 1 or 2 unless SIGPIPE is Notify'd (os/signal); a mount whose stderr was
// a pipe that is gone (the mount helper's, `| head -1`) must go on serving.
func ignoreSIGPIPE() { signal.Notify(sigpipe, syscall.SIGPIPE) }
