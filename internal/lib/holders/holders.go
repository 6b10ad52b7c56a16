package holders

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NoneNow is what Of says when no process it can read holds anything.
const NoneNow = "no process holds anything under it now"

// Of names the processes that hold anything under dir: an open
// descriptor, a working or root directory, or a mapping, as "pid N (comm):
// cwd /mnt/x, fd 3 /mnt/x/f; …" (at most four things a process), or "no
// process holds anything under it now". Processes of other users are not
// readable unless the caller is root; they are left out.
func Of(dir string) string {
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
			who += " [this process]"
		}
		if len(held) > 4 {
			held = append(held[:4], fmt.Sprintf("and %d more", len(held)-4))
		}
		out = append(out, who+": "+strings.Join(held, ", "))
	}
	if len(out) == 0 {
		return NoneNow
	}
	return strings.Join(out, "; ")
}
