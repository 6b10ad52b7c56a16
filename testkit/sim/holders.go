package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// holdersOf names the processes that hold anything under dir: an open
// descriptor, a working or root directory, or a mapping. A busy unmount
// reports it, so a violation says who kept the mount busy (this
// simulation's child, another simulation's child between fork and exec,
// or a process outside the test) rather than only that it was busy.
//
// It reads /proc only: readlink of /proc/PID/fd/N and the paths in
// /proc/PID/maps are the kernel's names of what is held, and send the
// FUSE server no request. Processes that end while it reads are skipped.
func holdersOf(dir string) string {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Sprintf("(cannot read /proc: %v)", err)
	}
	under := func(p string) bool {
		p = strings.TrimSuffix(p, " (deleted)")
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	var out []string
	self := os.Getpid()
	for _, pe := range procs {
		pid, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		base := filepath.Join("/proc", pe.Name())
		var held []string
		for _, l := range []string{"cwd", "root"} {
			if t, err := os.Readlink(filepath.Join(base, l)); err == nil && under(t) {
				held = append(held, l+" "+t)
			}
		}
		if fds, err := os.ReadDir(filepath.Join(base, "fd")); err == nil {
			for _, fd := range fds {
				if t, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil && under(t) {
					held = append(held, "fd "+fd.Name()+" "+t)
				}
			}
		}
		if maps, err := os.ReadFile(filepath.Join(base, "maps")); err == nil {
			for _, line := range strings.Split(string(maps), "\n") {
				if i := strings.Index(line, " /"); i >= 0 && under(strings.TrimSpace(line[i:])) {
					held = append(held, "map "+strings.TrimSpace(line[i:]))
				}
			}
		}
		if len(held) == 0 {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(base, "comm"))
		who := fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm)))
		if pid == self {
			who += " [this test process]"
		}
		if len(held) > 4 {
			held = append(held[:4], fmt.Sprintf("and %d more", len(held)-4))
		}
		out = append(out, who+": "+strings.Join(held, ", "))
	}
	if len(out) == 0 {
		return "no process holds anything under it now"
	}
	return strings.Join(out, "; ")
}
