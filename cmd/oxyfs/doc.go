// Command oxyfs mounts the signatures and index entries of an oxy store as a
// directory tree, and inspects, writes, folds and checks such stores.
//
// Exit codes: 0 success, 1 the operation failed, 2 usage error (diff: 0
// equal, 1 different, 2 an error, as diff(1)). A failure
// because the store's filesystem is full (ENOSPC) or its quota spent
// (EDQUOT) is said first, "no space left on the store's filesystem" (or
// "disk quota exceeded on the store's filesystem"), then the operation and
// the key (storefull.go).
//
// # Commands
//
// Each command registers itself (register, a command: name, argument
// synopsis, summary, run) in the file of what it does: mount.go, serve.go,
// browse.go (ls, cat), write.go (put, gen), status.go, maintain.go (fold,
// gc, check), watch.go (watch: a loop of refreshes, each compared with the
// last state reported; index/viewdiff.go), diff.go (diff: two key streams
// compared in order, exit 0/1/2 as diff(1); index/keystream.go), man.go
// (the hidden man). A command's run registers its flags
// on env.flags, then parses (env.parse: pflag; a usage error exits 2, with
// the nearest flag suggested for a misspelled one; --help prints the usage
// on stderr and exits 0), then works.
//
// The tree is cobra's (cli.go): it finds the command, prints completion
// scripts (oxyfs completion bash|zsh|fish|powershell) and answers them
// (the hidden __complete), and writes the man pages (oxyfs man DIR: oxyfs.1,
// oxyfs-mount.1, …; SOURCE_DATE_EPOCH dates them). cobra parses no flag of
// ours: each command's cobra.Command has DisableFlagParsing and a copy of
// its flags, declared by running it up to its parse (declareFlags,
// errDeclared), for completion and the man pages. So the flags, defaults,
// help texts and exit codes are those of the command's own parse. Without a
// command, oxyfs prints the usage (exit 2; with -h, --help or help, exit 0)
// or names the nearest command to an unknown one (exit 2).
//
// oxyfs version and --version say the version, commit, commit and build
// time, Go version and OS/arch (version.go): from the build info, or set at
// link time with -ldflags "-X main.version=V -X main.commit=C -X main.date=D".
//
// gen, check, fold and gc draw a progress bar on stderr when it is a
// terminal, and nothing in a pipe (common.go: progress; maintain.go:
// runReported).
//
// Run as mount.oxyfs or mount.fuse.oxyfs, or with a store URL first, oxyfs
// is mount(8)'s helper and mounts detached (daemon.go).
package main
