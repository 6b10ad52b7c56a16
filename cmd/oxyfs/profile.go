package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile of the whole process when
// OXYFS_CPUPROFILE names a file (for scripts/ and for operators chasing a
// slow mount or fold); the returned function stops it and writes the file.
// A profile that cannot be started is a warning, never a failed command.
func startProfile(stderr io.Writer) (stop func()) {
	name := os.Getenv("OXYFS_CPUPROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintf(stderr, "oxyfs: warning: cpu profile %q: %v\n", name, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "oxyfs: warning: cpu profile %q: %v\n", name, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "oxyfs: warning: cpu profile %q: %v\n", name, err)
		}
	}
}
