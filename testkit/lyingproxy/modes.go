package lyingproxy

import (
	"strings"
	"time"
)

// Mode is one lie. Set(modes...) replaces the proxy's lies with modes.
type Mode func(*config)

// config is the set of lies in force; the proxy swaps whole configs, so a
// request sees one set.
type config struct {
	// LIST
	listPrefixes     []string // nil: every LIST
	ignorePrefix     bool
	repeatToken      bool
	truncatedNoToken bool
	cutPage          bool
	emptyPages       bool
	endlessEmpty     bool
	omit             map[string]bool
	pad              int64

	// GET, HEAD, DELETE
	notFound map[string]bool
	keepAll  bool
	keep     map[string]bool

	fail     *failure
	redirect *redirect

	// PUT, GET (conditions.go)
	stripConditions bool
	flood           *flood
	drop            map[string]bool
	dropAll         bool

	// every answer
	dateShift time.Duration
	noDate    bool
}

type failure struct {
	status int
	size   int64
	ops    opSet
}

type redirect struct {
	to  Target
	ops opSet
}

// opSet is a set of operations; empty means every operation.
type opSet []Op

func (s opSet) has(op Op) bool {
	if len(s) == 0 {
		return true
	}
	for _, o := range s {
		if o == op {
			return true
		}
	}
	return false
}

func (c *config) listLies() bool {
	return c.ignorePrefix || c.pageChanges() || c.pad > 0
}

// pageChanges: the page is decoded and encoded again.
func (c *config) pageChanges() bool {
	return c.repeatToken || c.truncatedNoToken || c.cutPage || c.emptyPages || c.endlessEmpty || len(c.omit) > 0
}

func (c *config) listApplies(prefix string) bool {
	if c.listPrefixes == nil {
		return true
	}
	for _, p := range c.listPrefixes {
		if strings.HasPrefix(prefix, p) {
			return true
		}
	}
	return false
}

// Set replaces the lies in force with modes (none: pass everything
// through). Requests already being answered keep the lies they started
// with.
func (p *Proxy) Set(modes ...Mode) {
	c := &config{}
	for _, m := range modes {
		m(c)
	}
	p.cfg.Store(c)
}

// ListsUnder limits the LIST lies to listings whose prefix starts with
// one of prefixes (the prefix the client asked for, before IgnorePrefix
// drops it); other LISTs pass through.
func ListsUnder(prefixes ...string) Mode {
	return func(c *config) { c.listPrefixes = append(c.listPrefixes, prefixes...) }
}

// IgnorePrefix answers a LIST as if it had no prefix: every key of the
// bucket, page by page (the request is signed again without it).
func IgnorePrefix() Mode { return func(c *config) { c.ignorePrefix = true } }

// RepeatToken answers every LIST with the same continuation token,
// forever: the client's next LIST (carrying it) gets the first page
// again, with the token again.
func RepeatToken() Mode { return func(c *config) { c.repeatToken = true } }

// TruncatedNoToken answers every LIST page as truncated (S3: IsTruncated
// true) with no continuation token. GCS and Azure pages have no
// truncation flag: there it only drops the token (the page claims to be
// the last).
func TruncatedNoToken() Mode { return func(c *config) { c.truncatedNoToken = true } }

// CutPage keeps the first half of each LIST page's items and drops its
// continuation: the page claims to be the last (with TruncatedNoToken on
// S3, marked truncated with no token).
func CutPage() Mode { return func(c *config) { c.cutPage = true } }

// EmptyPages answers every LIST with no items and no continuation.
func EmptyPages() Mode { return func(c *config) { c.emptyPages = true } }

// EndlessEmptyPages answers every LIST with no items and a new
// continuation each time, forever (the next LIST, carrying it, is sent to
// the server without it).
func EndlessEmptyPages() Mode { return func(c *config) { c.endlessEmpty = true } }

// OmitKeys drops keys (full object names) from every LIST page.
func OmitKeys(keys ...string) Mode {
	return func(c *config) {
		if c.omit == nil {
			c.omit = map[string]bool{}
		}
		for _, k := range keys {
			c.omit[k] = true
		}
	}
}

// PadList pads every LIST page with n bytes of whitespace before its
// closing tag or brace: the page stays valid, and is streamed without a
// Content-Length (the proxy holds 64 KiB of it whatever n is).
func PadList(n int64) Mode { return func(c *config) { c.pad = n } }

// NotFound answers 404 to GETs and HEADs of keys (as the server would for
// a missing key).
func NotFound(keys ...string) Mode {
	return func(c *config) {
		if c.notFound == nil {
			c.notFound = map[string]bool{}
		}
		for _, k := range keys {
			c.notFound[k] = true
		}
	}
}

// KeepOnDelete answers DELETE of keys (none: of every key) with success
// (S3 and GCS 204, Azure 202) and never forwards it: the object stays.
func KeepOnDelete(keys ...string) Mode {
	return func(c *config) {
		if len(keys) == 0 {
			c.keepAll = true
			return
		}
		if c.keep == nil {
			c.keep = map[string]bool{}
		}
		for _, k := range keys {
			c.keep[k] = true
		}
	}
}

// ErrorBodies answers requests of ops (none: every request) with status
// and a body of size bytes, streamed: the server's error shape, padded.
func ErrorBodies(status int, size int64, ops ...Op) Mode {
	return func(c *config) { c.fail = &failure{status: status, size: size, ops: ops} }
}

// Target is where Redirect sends a client.
type Target int

const (
	// OtherHost is a listener on 127.0.0.2 (another host to a client;
	// another port of 127.0.0.1 where 127.0.0.2 cannot be bound).
	OtherHost Target = iota
	// OtherPort is a listener on another port of 127.0.0.1.
	OtherPort
)

// Redirect answers requests of ops (none: every request) with 307 to the
// same path and query on another listener (plain http), which records
// what arrives (Proxy.OtherHost, Proxy.OtherPort) and forwards it to the
// server, so a client that follows the redirect succeeds.
func Redirect(to Target, ops ...Op) Mode {
	return func(c *config) { c.redirect = &redirect{to: to, ops: ops} }
}

// ShiftDate moves the Date header of every answer by d (the server's own,
// or the proxy's where it answers itself): a store whose clock is d off
// the client's.
func ShiftDate(d time.Duration) Mode { return func(c *config) { c.dateShift = d } }

// NoDate answers with no Date header at all: a store that gives no time.
func NoDate() Mode { return func(c *config) { c.noDate = true } }
