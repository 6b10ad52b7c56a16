package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// textLineRE is one text log line: time, level, "oxyfs: " and the message.
var textLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) (DEBUG|INFO|WARN|ERROR) oxyfs: (.*)$`)

func logLines(t *testing.T, b *bytes.Buffer) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// TestLogIsOneTimestampedLinePerEvent: text and JSON lines, the level of a
// printf line from its words, --log-level filtering, a multi-line message
// kept on one line, secrets redacted.
func TestLogIsOneTimestampedLinePerEvent(t *testing.T) {
	var text bytes.Buffer
	lg, err := newLog(&text, logFlags{level: "info", format: "text"}, false)
	if err != nil {
		t.Fatal(err)
	}
	lg.printf("oxyfs: write /%s: refused, the signature exists (EPERM)", "sig/ab/cd/alice")
	lg.std.Printf("refreshed (SIGHUP): list=0 get=2")
	lg.printf("invalidate (generation 3): 1 listings")                      // debug: filtered out
	lg.printf("panic in a FUSE handler (EIO): boom\ngoroutine 1 [running]") // one line still
	lg.Info("mounted s3://b?secret_access_key=hush at /mnt")
	lg.std.Print("warning: ", "list cache /c: mode drwxrwxrwx")         // the index's Warn
	lg.printf("oxyfs: warning: authentication failed for user %q", "u") // web's
	lines := logLines(t, &text)
	wantLevels := []string{"WARN", "INFO", "ERROR", "INFO", "WARN", "WARN"}
	if len(lines) != len(wantLevels) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantLevels), text.String())
	}
	for i, l := range lines {
		m := textLineRE.FindStringSubmatch(l)
		if m == nil || m[2] != wantLevels[i] {
			t.Errorf("line %d %q: want a text log line at %s", i, l, wantLevels[i])
		}
	}
	if !strings.Contains(lines[0], "oxyfs: write /sig/ab/cd/alice: refused, the signature exists (EPERM)") {
		t.Errorf("the message's words changed: %q", lines[0])
	}
	// The level says WARN: the word that marked it is not said again.
	for _, want := range []string{"WARN oxyfs: list cache /c: mode drwxrwxrwx", `WARN oxyfs: authentication failed for user "u"`} {
		if !strings.Contains(text.String(), want+"\n") {
			t.Errorf("no line ends %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "warning") {
		t.Errorf("a WARN line says warning again:\n%s", text.String())
	}
	if strings.Contains(text.String(), "hush") {
		t.Errorf("a secret is in the log:\n%s", text.String())
	}

	var js bytes.Buffer
	lg, err = newLog(&js, logFlags{level: "debug", format: "json"}, false)
	if err != nil {
		t.Fatal(err)
	}
	lg.printf("invalidate (generation 3): 1 listings")
	lg.printf("warning: a list is damaged\nsecond line")
	lines = logLines(t, &js)
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want 2:\n%s", len(lines), js.String())
	}
	for i, want := range []string{"DEBUG", "WARN"} {
		var rec struct{ Time, Level, Msg string }
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
		if _, err := time.Parse(time.RFC3339Nano, rec.Time); err != nil || rec.Level != want || strings.HasPrefix(rec.Msg, "oxyfs: ") || strings.HasPrefix(rec.Msg, "warning") {
			t.Errorf("line %d: %+v; want an RFC 3339 time, level %s, the message without the program's name (nor a warning's word)", i, rec, want)
		}
	}

	for _, bad := range []logFlags{{level: "loud", format: "text"}, {level: "info", format: "xml"}} {
		if _, err := newLog(&js, bad, false); err == nil {
			t.Errorf("newLog(%+v) accepted it", bad)
		}
	}
}

// TestLogFileIsOpenedBeforeTheMount: --log-file appends, and a path that
// cannot be written fails at once.
func TestLogFileIsOpenedBeforeTheMount(t *testing.T) {
	p := filepath.Join(t.TempDir(), "oxyfs.log")
	if err := os.WriteFile(p, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	lg, err := newLog(&stderr, logFlags{level: "info", format: "text", file: p}, false)
	if err != nil {
		t.Fatal(err)
	}
	lg.Info("hello")
	lg.close()
	lg.Info("after close: dropped")
	data, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || lines[0] != "before" || !textLineRE.MatchString(lines[1]) || stderr.Len() != 0 {
		t.Fatalf("log file:\n%s\nstderr: %q", data, stderr.String())
	}
	if _, err := newLog(&stderr, logFlags{file: filepath.Join(t.TempDir(), "no", "such", "dir", "x.log")}, false); err == nil {
		t.Fatal("a log file in a missing directory was accepted")
	}
}

// listenUnixgram listens on a datagram socket at path and returns what
// arrives, one datagram per receive.
func listenUnixgram(t *testing.T, path string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	return got
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived on the socket")
		return ""
	}
}

// TestDetachedLogGoesToSyslogAndSaysSo: without --log-file, a detaching
// mount says on stderr that it logs to syslog, and then does, each line at
// its priority; without a syslog socket it says it logs nowhere.
func TestDetachedLogGoesToSyslogAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	old := syslogSocket
	t.Cleanup(func() { syslogSocket = old })
	syslogSocket = filepath.Join(dir, "log")
	got := listenUnixgram(t, syslogSocket)

	var stderr bytes.Buffer
	lg, err := newLog(&stderr, logFlags{level: "info", format: "text"}, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lg.detach()
	if err != nil || out.Name() != os.DevNull {
		t.Fatalf("detach: %v %v; want /dev/null as the new stderr", out, err)
	}
	out.Close()
	if !strings.Contains(stderr.String(), "logging to syslog ("+syslogSocket+")") {
		t.Errorf("stderr does not say where the log goes:\n%s", stderr.String())
	}
	first := recv(t, got)
	lg.printf("write /sig/ab/cd/alice: refused (EPERM)")
	warn := recv(t, got)
	// <PRI>: facility daemon (3) * 8 + severity; info 6, warning 4.
	if !strings.HasPrefix(first, "<30>") || !strings.Contains(first, "logging here") ||
		!strings.HasPrefix(warn, "<28>") || !strings.Contains(warn, "oxyfs: write /sig/ab/cd/alice: refused (EPERM)") {
		t.Errorf("syslog got %q and %q", first, warn)
	}
	n := stderr.Len()
	lg.Info("not on stderr")
	if stderr.Len() != n {
		t.Errorf("a detached log still writes stderr: %q", stderr.String()[n:])
	}

	// With --log-file: both until it detaches, then the file alone.
	file := filepath.Join(dir, "mount.log")
	stderr.Reset()
	lg, err = newLog(&stderr, logFlags{level: "info", format: "text", file: file}, true)
	if err != nil {
		t.Fatal(err)
	}
	lg.Info("mounted file:///s at /m")
	if out, err = lg.detach(); err != nil || out.Name() != file {
		t.Fatalf("detach with a log file: %v %v; want the log file as the new stderr", out, err)
	}
	lg.Info("refreshed (SIGHUP): list=0 get=2")
	lg.close()
	data, _ := os.ReadFile(file)
	if !strings.Contains(stderr.String(), "mounted file:///s") || !strings.Contains(stderr.String(), "logging to log file "+file) ||
		strings.Contains(stderr.String(), "refreshed") ||
		!strings.Contains(string(data), "mounted file:///s") || !strings.Contains(string(data), "refreshed (SIGHUP)") {
		t.Errorf("stderr:\n%s\nlog file:\n%s\nwant the start on both, what follows in the file only", stderr.String(), data)
	}
	if n := strings.Count(string(data), "detached (pid"); n != 1 {
		t.Errorf("the log file says it detached %d times, want once:\n%s", n, data)
	}

	syslogSocket = filepath.Join(dir, "none")
	stderr.Reset()
	lg, _ = newLog(&stderr, logFlags{level: "info", format: "text"}, false)
	if out, err = lg.detach(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if !strings.Contains(stderr.String(), "logging to nowhere") {
		t.Errorf("stderr does not say the log goes nowhere:\n%s", stderr.String())
	}
}

// TestSdNotifyTellsTheServiceManager: READY=1 reaches $NOTIFY_SOCKET, a
// path or an abstract name; without one nothing is sent and nothing fails.
func TestSdNotifyTellsTheServiceManager(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notify")
	got := listenUnixgram(t, p)
	t.Setenv("NOTIFY_SOCKET", p)
	if err := sdNotify("READY=1"); err != nil {
		t.Fatal(err)
	}
	if s := recv(t, got); s != "READY=1" {
		t.Errorf("got %q", s)
	}
	abstract := "oxyfs-test-" + filepath.Base(t.TempDir())
	gotA := listenUnixgram(t, "\x00"+abstract)
	t.Setenv("NOTIFY_SOCKET", "@"+abstract)
	if err := sdNotify("STOPPING=1"); err != nil {
		t.Fatal(err)
	}
	if s := recv(t, gotA); s != "STOPPING=1" {
		t.Errorf("abstract socket got %q", s)
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if err := sdNotify("READY=1"); err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v", err)
	}
}

// TestHelperArgsDropWhatMountAdds: mount(8) runs a helper as
// `mount.fuse.oxyfs STORE DIR -o OPTS -t fuse.oxyfs` (and may add -n, -s,
// -f, -v); oxyfs mount gets STORE DIR -o OPTS.
//
// testwatch: mounts nothing (flags and usage only).
func TestHelperArgsDropWhatMountAdds(t *testing.T) {
	got, ok := helperArgs("/sbin/mount.fuse.oxyfs", []string{"file:///s", "/mnt", "-n", "-o", "rw,log_file=/l", "-t", "fuse.oxyfs"})
	if want := []string{"file:///s", "/mnt", "-o", "rw,log_file=/l"}; !ok || !slices.Equal(got, want) {
		t.Errorf("helperArgs = %q %v, want %q", got, ok, want)
	}
	if _, ok := helperArgs("oxyfs", []string{"mount", "file:///s", "/mnt"}); ok {
		t.Error("oxyfs mount … was taken for the helper")
	}
	if code := runHelper(nil, &bytes.Buffer{}); code != 2 {
		t.Errorf("mount.oxyfs without arguments: exit %d, want 2 (it must not mount the demo)", code)
	}
}

// FuzzLogLineIsOneLine: whatever a message or attribute holds (a store's
// names may hold any byte but NUL and /), it is one line, text or JSON, with
// no control character left raw, and JSON that decodes.
func FuzzLogLineIsOneLine(f *testing.F) {
	f.Add("refreshed (SIGHUP): list=0 get=2", "key", "v a l")
	f.Add("oxyfs: bad\xffvalue\x1b[2J\nsecond line\r", "k\n", "\x00\u009b")
	f.Fuzz(func(t *testing.T, msg, key, val string) {
		for _, format := range []string{"text", "json"} {
			var b bytes.Buffer
			lg, err := newLog(&b, logFlags{level: "debug", format: format}, false)
			if err != nil {
				t.Fatal(err)
			}
			lg.Info(msg, key, val)
			lg.printf("%s", msg)
			out := b.String()
			if strings.Count(out, "\n") != 2 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("%s: want 2 lines, got %q", format, out)
			}
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				for _, r := range l {
					if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
						t.Fatalf("%s: control character %U in %q", format, r, l)
					}
				}
				if format == "json" {
					var v map[string]any
					if err := json.Unmarshal([]byte(l), &v); err != nil {
						t.Fatalf("json line %q: %v", l, err)
					}
				} else if !textLineRE.MatchString(l) {
					t.Fatalf("text line %q is not TIME LEVEL oxyfs: MSG", l)
				}
			}
		}
	})
}

// TestMountOptionsOfAnFstabLine: the log options and the others of an fstab
// line are read; mount(8)'s and systemd's are ignored quietly, and one that
// is nobody's (a typo) is returned to be named.
func TestMountOptionsOfAnFstabLine(t *testing.T) {
	var mf mountFlags
	var c commonFlags
	unknown, err := applyMountOptions(&mf, &c, "ro,refresh=2s,log_file=/var/log/oxy.log,log_level=debug,log_format=json,noauto,_netdev,x-systemd.automount,nofail,refresh_interval=10m")
	if err != nil {
		t.Fatal(err)
	}
	if !mf.readOnly || mf.refresh != 2*time.Second || mf.file != "/var/log/oxy.log" || mf.level != "debug" || mf.format != "json" {
		t.Errorf("options read as %+v", mf)
	}
	if !slices.Equal(unknown, []string{"refresh_interval=10m"}) {
		t.Errorf("unknown options %q, want the typo alone", unknown)
	}
	if _, err := applyMountOptions(&mf, &c, "refresh=soon"); err == nil {
		t.Error("refresh=soon was accepted")
	}
}

// TestFailedServeSaysWhyInTheLogFile (issue 38): a serve that fails says
// why on stderr and in its --log-file, as a mount does — a service's
// stderr is often read by nobody.
func TestFailedServeSaysWhyInTheLogFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-store")
	logFile := filepath.Join(t.TempDir(), "serve.log")
	_, stderr, code := runCLI(t, "serve", "--http", "127.0.0.1:0", "--cache-dir", "", "--log-file", logFile, "file://"+missing)
	if code == 0 {
		t.Fatalf("serve of a missing store exited 0; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, missing) {
		t.Errorf("stderr does not name the missing store %s:\n%s", missing, stderr)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logged := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var failed []string
	for _, l := range logged {
		if strings.Contains(l, " ERROR oxyfs: serve failed: ") {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], missing) {
		t.Errorf("the log file holds %q; want one ERROR line that says serve failed and names %s", data, missing)
	}
}

// TestAFailedWriteIsNeverInfo: a printf line naming the errno a write or
// request failed with is a WARN (ERROR for EIO), whichever errno it is. A
// full store's "(EDQUOT)", a busy store's "(EAGAIN)" were INFO.
func TestAFailedWriteIsNeverInfo(t *testing.T) {
	for _, c := range []struct {
		line string
		want slog.Level
	}{
		{`write /sig/ab/cd/alice: put "sig/ab/cd/alice": no space left on device (ENOSPC)`, slog.LevelWarn},
		{`write /sig/ab/cd/alice: put "sig/ab/cd/alice": disk quota exceeded (EDQUOT)`, slog.LevelWarn},
		{`read /sig/ab/cd/alice: the store is busy (EAGAIN)`, slog.LevelWarn},
		{`open /sig/ab/cd/alice for writing: refused (ESTALE)`, slog.LevelWarn},
		{`write /sig/ab/cd/alice: put: connection refused (EIO)`, slog.LevelError},
	} {
		if got, _ := leveled("oxyfs: " + c.line); got != c.want {
			t.Errorf("%q: level %v, want %v", c.line, got, c.want)
		}
	}
}

// TestAFailedWritesEntryIsShownInTheTextLog: the store key a failed write
// names (fs's "entry" attribute) reaches the text log on stderr whole,
// through the redaction of secrets; an attribute named "key" was printed
// key=REDACTED (user trial 52).
func TestAFailedWritesEntryIsShownInTheTextLog(t *testing.T) {
	var out bytes.Buffer
	lg, err := newLog(termsafe.Writer{W: &out}, logFlags{level: "info", format: "text"}, false)
	if err != nil {
		t.Fatal(err)
	}
	key := "sig/08/cec8615944afd824418e33fbc726361200d5ca3145afa0b734d0d0c166a384/signer-00"
	lg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "open /"+key+" for writing: refused (EPERM)",
		slog.String("entry", key), slog.String("errno", "EPERM"))
	if line := out.String(); !strings.Contains(line, " entry="+key+" errno=EPERM") || strings.Contains(line, termsafe.Redacted) {
		t.Fatalf("the text log line is %q; want it to end entry=%s errno=EPERM, nothing redacted", line, key)
	}
}
