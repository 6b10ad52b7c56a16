package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"
)

func init() {
	register(&command{
		name:    "man",
		args:    "DIR",
		summary: "write a man page for oxyfs and for each of its commands into DIR (oxyfs.1, oxyfs-mount.1, …); SOURCE_DATE_EPOCH sets their date",
		run:     runMan,
		hidden:  true,
	})
}

// runMan writes the man pages of the command tree (cobra/doc), one per
// command, named as man(1) finds them: oxyfs.1, oxyfs-mount.1, …
func runMan(_ context.Context, e *env, args []string) error {
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	dir := pos[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	header := &doc.GenManHeader{Section: "1", Source: "oxyfs " + buildVersion().Version, Manual: "oxyfs manual"}
	if err := doc.GenManTreeFromOpts(e.root, doc.GenManTreeOptions{Header: header, Path: dir, CommandSeparator: "-"}); err != nil {
		return fmt.Errorf("man pages in %s: %w", dir, err)
	}
	return nil
}
