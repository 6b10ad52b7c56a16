package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestRunStepKeepsNoOutput runs a step whose command prints 64 MiB (find's
// output at ~700,000 paths) and checks that this process, the one mountmem
// measures, allocated far less than that while it ran, and counted the lines.
func TestRunStepKeepsNoOutput(t *testing.T) {
	const lines, lineLen = 1 << 22, 16 // "0123456789abcde\n"
	cmd := exec.Command("sh", "-c", "yes 0123456789abcde | head -n 4194304")
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	n, err := runStep(cmd)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	if n != lines {
		t.Fatalf("counted %d lines, want %d", n, lines)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > lines*lineLen/8 {
		t.Fatalf("running the step allocated %d bytes for %d bytes of output: it keeps the output", alloc, lines*lineLen)
	}
}

// TestRunStepErrorHasStderrTail checks that a failed step's error ends
// with what it last wrote to stderr, and holds no more than tailBytes of it.
func TestRunStepErrorHasStderrTail(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200 ]; do echo noise $i >&2; i=$((i+1)); done; echo the last words >&2; exit 3")
	_, err := runStep(cmd)
	if err == nil {
		t.Fatal("a step that exits 3 did not fail")
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "the last words\n") || strings.Contains(msg, "noise 0\n") || len(msg) > tailBytes+100 {
		t.Fatalf("error %q (%d bytes): want the last %d bytes of stderr", msg, len(msg), tailBytes)
	}
}
