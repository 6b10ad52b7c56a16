package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// The flags and -o options of `oxyfs mount`, on every OS (the mount itself
// is Linux's: mount.go, mount_other.go).

type mountFlags struct {
	indexFlags
	logFlags
	daemon     bool
	readOnly   bool
	overwrite  bool
	anyName    bool
	allowOther bool
	uid, gid   int
	fileMode   string
	dirMode    string
	debug      bool
	leafIDs    bool // --leaf-ids: entry files get no go-fuse node (fs.Options.LeafIDs)
	options    string
	credFile   string // -o credentials_file=, --credentials-file: environment variables for the store (credfile.go)
}

func parseMode(s string) (os.FileMode, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, usagef("bad mode %q: want octal permission bits such as 0644", termsafe.Value(s))
	}
	return os.FileMode(n), nil
}

// applyMountOptions reads fstab-style options (-o ro,allow_other,uid=1000).
// It returns the options it ignored that are not mount(8)'s either (a typo
// such as refresh_interval=10m), for the caller to name.
func applyMountOptions(mf *mountFlags, c *commonFlags, opts string) (unknown []string, err error) {
	if opts == "" {
		return nil, nil
	}
	// Options that set a flag, options that take a string as it is, and
	// the rest, which parse their value.
	set := map[string]func(){
		"ro": func() { mf.readOnly = true }, "rw": func() { mf.readOnly = false },
		"allow_other": func() { mf.allowOther = true }, "allow_overwrite": func() { mf.overwrite = true },
		"allow_any_name": func() { mf.anyName = true }, "debug": func() { mf.debug = true },
		"create":   func() { c.create = true },
		"leaf_ids": func() { mf.leafIDs = true }, "noleaf_ids": func() { mf.leafIDs = false },
	}
	text := map[string]*string{"layout": &c.layout, "log_file": &mf.file, "log_level": &mf.level, "log_format": &mf.format, "credentials_file": &mf.credFile}
	for _, o := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(o), "=")
		var err error
		if f, ok := set[k]; ok {
			f()
			continue
		}
		if t, ok := text[k]; ok {
			*t = v
			continue
		}
		switch k {
		case "uid":
			mf.uid, err = strconv.Atoi(v)
		case "gid":
			mf.gid, err = strconv.Atoi(v)
		case "refresh":
			mf.refresh, err = time.ParseDuration(v)
		case "timeout":
			c.timeout, err = time.ParseDuration(v)
		case "pipeline_depth":
			c.depth, err = strconv.Atoi(v)
		default:
			// mount(8) passes generic options (defaults, noauto, _netdev, …) too.
			if !genericMountOption(k) {
				unknown = append(unknown, o)
			}
		}
		if err != nil {
			return nil, usagef("mount option %q: %v", termsafe.Value(o), err)
		}
	}
	return unknown, nil
}

// genericMountOption reports whether k is an option of mount(8), systemd or
// the kernel's FUSE mount rather than oxyfs's, which oxyfs ignores quietly.
func genericMountOption(k string) bool {
	switch k {
	case "", "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "_netdev", "nofail",
		"suid", "nosuid", "dev", "nodev", "exec", "noexec", "sync", "async", "dirsync",
		"atime", "noatime", "relatime", "norelatime", "strictatime", "diratime", "nodiratime", "lazytime",
		"comment", "default_permissions", "max_read", "blksize", "fsname", "subtype":
		return true
	}
	return strings.HasPrefix(k, "x-") || strings.HasPrefix(k, "comment=")
}
