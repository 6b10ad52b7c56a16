package fs

import (
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Side files: names that editors and operating systems write beside a file
// they edit or show, never a signer or an index entry's value. Created in
// an object's directory they would be stored (a vim swap file .alice.swp
// as the signature of a signer ".alice.swp"), so a create of one is EPERM,
// logged once per name (the line names the first path refused), unless
// Options.AllowAnyName.

// maxSideLogged bounds the names logged: past it, one line says further
// refusals go unlogged (a sync client writing .DS_Store everywhere must not
// grow the set without bound).
const maxSideLogged = 4096

// sideFiles is the mount's policy on side files and the names it logged.
type sideFiles struct {
	allow bool // Options.AllowAnyName: take every name; read-only after Mount

	mu     sync.Mutex      // protects the following; held while a refusal is logged (logf)
	logged map[string]bool // names whose refusal was logged; guarded by mu
	full   bool            // maxSideLogged reached and said; guarded by mu
}

// refuse is EPERM when name is a side file (logged, with its path p, the
// first time the name is refused), else 0.
func (s *sideFiles) refuse(m *Server, p, name string) syscall.Errno {
	if s.allow {
		return 0
	}
	what, ok := sideFile(name)
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.logged[name]:
	case len(s.logged) >= maxSideLogged:
		if !s.full {
			s.full = true
			m.logf("oxyfs: %d side files refused; further ones are refused without a word", maxSideLogged)
		}
	default:
		if s.logged == nil {
			s.logged = make(map[string]bool)
		}
		s.logged[name] = true
		m.logf("oxyfs: create /%s: refused (EPERM): a side file (%s), not an entry; mount with --allow-any-name to store such names", p, what)
	}
	return syscall.EPERM
}

// sideFile reports whether name is one editors or operating systems write
// as a side file, and whose.
func sideFile(name string) (string, bool) {
	switch name {
	case ".DS_Store", ".localized":
		return "macOS Finder's", true
	case "Thumbs.db", "ehthumbs.db", "desktop.ini":
		return "Windows Explorer's", true
	case ".directory":
		return "KDE Dolphin's", true
	}
	switch {
	case len(name) > 4 && name[0] == '.' && vimSwap(name):
		return "vim's swap file", true
	case vimProbe(name):
		return "vim's write probe", true
	case len(name) > 1 && strings.HasSuffix(name, "~"):
		return "an editor's backup", true
	case len(name) > 2 && strings.HasPrefix(name, ".#"):
		return "Emacs' lock", true
	case len(name) > 2 && name[0] == '#' && name[len(name)-1] == '#':
		return "Emacs' auto-save", true
	case len(name) > 2 && strings.HasPrefix(name, "._"):
		return "macOS' AppleDouble", true
	case len(name) > 2 && strings.HasPrefix(name, "~$"):
		return "Microsoft Office's owner file", true
	case strings.HasPrefix(name, ".~lock.") && strings.HasSuffix(name, "#"):
		return "LibreOffice's lock", true
	case strings.HasPrefix(name, ".goutputstream-"):
		return "GNOME's temporary", true
	case strings.HasPrefix(name, ".fuse_hidden"):
		return "libfuse's hidden file", true
	case sedTemp(name):
		return "sed -i's temporary", true
	}
	return "", false
}

// sedTemp: GNU sed -i writes its output to "sed" and six random letters or
// digits (mkostemp) beside the file, then renames it over the file — a
// rename the mount refuses, which left the temporary stored as a signer.
func sedTemp(name string) bool {
	if len(name) != 9 || !strings.HasPrefix(name, "sed") {
		return false
	}
	for _, c := range name[3:] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// vimSwap: .NAME.swp, and .swo … .swa as vim counts down when one exists.
func vimSwap(name string) bool {
	ext := name[len(name)-4:]
	return ext[:3] == ".sw" && ext[3] >= 'a' && ext[3] <= 'p'
}

// vimProbe: vim checks that it may create a file in a directory by creating
// "4913" (then 4913+123, 4913+246, … while one exists) and deleting it.
func vimProbe(name string) bool {
	if len(name) < 4 || len(name) > 5 || name[0] == '0' {
		return false
	}
	n, err := strconv.Atoi(name)
	return err == nil && n >= 4913 && (n-4913)%123 == 0
}
