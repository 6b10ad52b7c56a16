//go:build !unix

package main

import (
	"context"
	"io"
)

// readerGone: only a write says the reader has gone on this system.
func readerGone(context.Context, io.Writer) <-chan struct{} { return nil }
