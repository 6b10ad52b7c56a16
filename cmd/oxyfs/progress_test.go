package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// maintenanceRuns are gen, check, fold and gc of one new store at url:
// the four commands that draw a progress bar.
func maintenanceRuns(url string) [][]string {
	return [][]string{
		{"gen", "--layout", "bucket", "--entries", "300", "--signers", "4", url},
		{"check", "--layout", "bucket", url},
		{"fold", "--layout", "bucket", url},
		{"gc", "--layout", "bucket", url},
	}
}

// TestProgressQuietInPipe: with stderr a pipe (an *os.File, not a
// terminal), gen, check, fold and gc print nothing on it.
func TestProgressQuietInPipe(t *testing.T) {
	for _, args := range maintenanceRuns("file://" + t.TempDir() + "/s") {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(r); got <- b }()
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, w)
		w.Close()
		if b := <-got; code != 0 || len(b) > 0 {
			t.Errorf("oxyfs %q: exit %d, stderr %q; want 0 and nothing", args, code, b)
		}
		r.Close()
		if out.Len() == 0 {
			t.Errorf("oxyfs %q printed no report", args)
		}
	}
}

// TestProgressOnTerminal: with stderr a terminal (a pty), gen, check, fold
// and gc draw their bar ("\rLABEL PHASE …") and clear its line at the end;
// the report still goes to stdout alone.
func TestProgressOnTerminal(t *testing.T) {
	for _, args := range maintenanceRuns("file://" + t.TempDir() + "/s") {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Fatal("open a pty:", err)
		}
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(ptmx); got <- b }() // ends with EIO once tty is closed
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, tty)
		tty.Close()
		b := <-got
		ptmx.Close()
		if code != 0 {
			t.Fatalf("oxyfs %q: exit %d: %q", args, code, b)
		}
		if s := string(b); !strings.HasPrefix(s, "\r"+args[0]+" ") || !strings.HasSuffix(s, "\r\x1b[K") {
			t.Errorf("oxyfs %q on a terminal: stderr %q; want a progress line cleared at the end", args, s)
		}
		if strings.Contains(out.String(), "\r") {
			t.Errorf("oxyfs %q: the bar went to stdout: %q", args, out.String())
		}
	}
}
