package store

// A listing is checked before it is used (adr-0055 D6: nothing is planned
// from an answer that did not fully succeed). Every page, on every driver
// (ListPage):
//
//	- each key and common prefix lies under the prefix asked for;
//	- its continuation differs from the one it was asked with.
//
// Every listing walked whole (List), besides:
//
//	- no continuation comes back twice (a cycle of any length);
//	- at most maxListPages pages and maxListKeys keys;
//	- at most maxEmptyRun empty pages in a row that still say "more".
//
// S3 adds one the SDK hides: a page marked truncated with no continuation
// (driver_s3_list.go), which gocloud takes as the last. Each failure is an
// error wrapping ErrBadListing that names what was wrong: the listing
// fails, it is never taken as "no more keys".

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
)

// ErrBadListing is wrapped when the server's answer to a LIST cannot be trusted (a key
// outside the prefix, a continuation that repeats or is missing, more
// pages or keys than a listing can hold).
var ErrBadListing = errors.New("listing cannot be trusted")

// The bounds of one listing walked whole.
const (
	maxListPages = 1 << 20 // a billion keys at 1000 a page
	maxListKeys  = 1 << 28
	maxEmptyRun  = 64 // empty pages in a row that still say "more"
)

// checkPage checks one page of a listing of prefix asked with token.
func checkPage(prefix string, token []byte, items []ListItem, next []byte) error {
	for _, it := range items {
		if !strings.HasPrefix(it.Key, prefix) {
			return fmt.Errorf("%w: the server listed %q, which is not under the prefix %q asked for", ErrBadListing, it.Key, prefix)
		}
	}
	if next != nil && string(next) == string(token) {
		return fmt.Errorf("%w: the server answered with the continuation it was asked with (%d bytes): the listing would never end", ErrBadListing, len(next))
	}
	return nil
}

// listCheck follows the pages of one listing (List). Not safe for
// concurrent use: one listing's pages come one after another.
type listCheck struct {
	prefix string
	tokens map[[16]byte]struct{} // a digest of every continuation seen
	pages  int
	keys   int
	empty  int // empty pages in a row, each with a continuation
}

func newListCheck(prefix string) *listCheck {
	return &listCheck{prefix: prefix, tokens: map[[16]byte]struct{}{}}
}

// page checks the next page: n items, next its continuation (nil: last).
func (c *listCheck) page(n int, next []byte) error {
	c.pages++
	c.keys += n
	switch {
	case c.pages > maxListPages:
		return fmt.Errorf("%w: over %d pages under %q", ErrBadListing, maxListPages, c.prefix)
	case c.keys > maxListKeys:
		return fmt.Errorf("%w: over %d keys under %q", ErrBadListing, maxListKeys, c.prefix)
	}
	if next == nil {
		return nil
	}
	if n == 0 {
		c.empty++
		if c.empty > maxEmptyRun {
			return fmt.Errorf("%w: %d empty pages in a row under %q, each saying there is more", ErrBadListing, c.empty, c.prefix)
		}
	} else {
		c.empty = 0
	}
	sum := sha256.Sum256(next)
	var d [16]byte
	copy(d[:], sum[:])
	if _, seen := c.tokens[d]; seen {
		return fmt.Errorf("%w: page %d under %q carries a continuation an earlier page carried: the listing would never end", ErrBadListing, c.pages, c.prefix)
	}
	c.tokens[d] = struct{}{}
	return nil
}
