// Package web serves an index's read-only tree (DESIGN §4) over HTTP and
// WebDAV, for machines without FUSE: a browser, curl, or a WebDAV client
// (macOS Finder "Connect to Server", Windows "Map network drive", davfs2,
// rclone) browses the same directories and reads the same signature bytes
// as a mount shows.
//
// # Routes
//
//	GET  /<dir>/               an HTML page listing the directory, with
//	                           breadcrumbs (?format=json: JSON); a signature's
//	                           name links to its page, "raw" to its bytes
//	GET  /<dir>                a redirect to /<dir>/
//	GET  /sig/.../<signer>     the signature's bytes (application/octet-stream,
//	                           Content-Length; Range and If-None-Match work);
//	                           ?download=1: the same with Content-Disposition:
//	                           attachment (filename <signer>.sig)
//	GET  /sig/...?view=page    the signature's page: breadcrumbs, key, size, its
//	                           first SigPagePrefix (16 KiB) bytes as hex and
//	                           base64, download and raw links for the whole
//	GET  /<kind>/.../<value>   an empty body (the value is in the name)
//	GET  /by-signer/<s>/<obj>  a redirect (302) to the signature it links to
//	GET  /.oxy/status          index.Status as JSON (requests sent so far
//	                           included) with last_change (the store's last
//	                           change, index.Index.ModTime); as a page of
//	                           tables when the client accepts text/html (a
//	                           browser), unless ?format=json: one row per
//	                           figure, times as RFC 3339 and how long ago
//	                           ("never" for none), entries per kind and
//	                           requests by kind (LIST, GET, HEAD, PUT, DELETE)
//	                           as rows (status.go)
//	GET  /.oxy/signers/        every signer (by-signer/) with its number of
//	                           signatures, PageRows at a time (?after=NAME,
//	                           ?before=NAME: the next and previous pages, linked);
//	                           the root page links it as "Signers"
//	GET  /.oxy/signers/<s>     signer s's signatures: object, kind, a link to
//	                           each signature's page, paged the same way
//	                           (both ?format=json: JSON)
//	PROPFIND, GET  /dav/...    WebDAV (class 1, read-only) over the same tree;
//	                           with Options.WebDAVRoot also at every path
//	                           outside /dav/ and /.oxy/
//	OPTIONS  any               the methods allowed there
//
// Every other method (PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH, LOCK,
// UNLOCK, POST, ...) is refused with 405 and an Allow header, before
// anything is read; the WebDAV file system refuses every write as well
// (os.ErrPermission), so nothing can reach the store but reads. PROPFIND
// with Depth: infinity (or no Depth, which means it) is refused with 403
// (RFC 4918 §9.1 "propfind-finite-depth"): on the root it would read every
// signature. A by-signer link appears in WebDAV as the file it points to.
// A signature's time is its key's own Last-Modified, which the index reads
// with its bytes (index.SigStat, Node.ModTime, SigHandle.ModTime: no extra
// request): the Last-Modified of its GET and of its page, the "modified" row
// of its page, the mtime of a directory page's row (JSON "mtime") once its
// size is known, and WebDAV's getlastmodified (a PROPFIND of the file reads
// it). Any other time — a directory's, an index entry's, a signature's
// whose time is not known yet — is the store's last change as the index
// knows it (index.Index.ModTime: the newest key its open listed) or, for a
// signature whose bytes the index saw change since, that time; with neither
// (the directory layout, a backend that reports no times), the time the
// handler was made (handler.modTime).
//
// A signature the index lists whose key is gone (index.ErrListedMissing:
// a journal line or a list names it) is 404 with a body saying it is listed
// but missing from the store and naming the key; the index warns once per
// key (the serve log) and counts them (/.oxy/status listed_missing). The
// directory's page still lists it.
//
// # Requests to the store
//
// Pages, redirects and PROPFIND of directories are answered from memory as
// the mount's readdir and lookup are: on a folded store they send no
// request, and never a LIST. A signature's bytes cost one GET the first time
// (then the index's cache answers), and reading one starts the index's
// read-ahead of the ones after it. A PROPFIND Depth: 1 reads none of the
// signatures it lists (davFS answers from the index's tree): a size the
// index does not know yet is left out (no getcontentlength), as the mount
// lists it as 0 until a stat reads it; a PROPFIND of the signature itself
// reads its size (one GET). Before, one PROPFIND of a signer's directory
// read every signature of the signer (issue 41: 129 GETs for 42).
// /.oxy/status sends nothing, and neither do the signers pages on a folded
// store (index.Signers, index.SignedBy: in memory, a page at a time). The handler uses the index as it is; refresh
// it (Index.Refresh) to see other writers.
//
// Every read runs on the request's context, WebDAV's too (davFS is given
// the request's): a client that leaves stops what it asked for at the next
// read. Read-ahead already scheduled still runs, within its window
// (index.Options.ReadAhead).
//
// # Locks
//
// The handler keeps no state between requests but its options, read-only
// after Handler, and two that lock themselves: the failed-authentication
// log (authFailLog.mu) and the password file (Htpasswd.mu: its users, when
// it was last stated, the pairs that matched). What a request reads it asks
// of the index,
// which locks itself (index's doc, "Locks"), and a WebDAV file is the
// request's own. net/http runs each request in its own goroutine.
//
// # Security
//
// The tree is read-only. With Options.Htpasswd, every request (pages,
// bytes, WebDAV, status, OPTIONS) needs a user and password of the file
// (HTTP Basic; 401 with WWW-Authenticate otherwise; htpasswd.go, auth.go):
// bcrypt or apr1 hashes, compared in constant time, failures logged
// without the password and at most once per authFailEvery. Without it, serve
// it on a loopback address (the CLI's default) or behind something that
// authenticates. With Options.LoopbackOnly, requests whose Host header is
// not a loopback name or address are refused (403), which defeats DNS
// rebinding by a web page the user visits. docs/security.md has the threat
// model.
//
// # Limits
//
// A client can make the server hold only so much. Options.MaxRequestBody
// (DefaultMaxRequestBody, 64 KiB) caps a request's body: a PROPFIND's XML
// is read whole, within the cap, before WebDAV parses it — longer (by
// Content-Length, or as it arrives) is 413, and a body slower than the
// server's read timeout is 408. Limits, applied by NewServer and Listen,
// bound the rest: headers within 10 s, the whole request within 30 s, the
// response within 5 min, an idle connection 30 s, and 256 connections
// served at once. A connection that arrives at the cap closes the one idle
// longest (conns.go: the server reports idle connections through
// ConnState), so kept-alive connections cannot lock other clients out; with
// none idle it waits in the accept queue.
//
// # Errors
//
// A path that does not exist is 404. A lookup or read that fails is
// answered by the error's class (index.Classify, the one the mount's errnos
// follow), with the error's text, and logged once per request through
// Options.Logf: 500 for a signature over its size cap (store.ErrTooLarge,
// refused before its body is read: the server's own limit, neither the store
// failing nor the request too large), 503 with Retry-After when the read is
// refused for now (index.ErrBusy, or an error wrapping syscall.EAGAIN: the
// bytes readers may hold are spent), 504 when the store's deadline passed,
// 400 for a key the rules refuse, and 502 for anything else (the store did
// not answer as it should). A request whose
// client left is 499 (StatusClientClosedRequest), with nothing sent and
// nothing logged; WebDAV's errors of such a request are not logged either.
// A PROPFIND reads what it must (the target, and a signature target's size)
// before WebDAV writes its answer, so a read that fails is answered the same
// way; WebDAV alone answers 405 for a target it cannot stat and leaves a
// child it cannot stat out of the listing without a word. What a client or a log is shown passes
// through termsafe: secrets in a store URL are redacted (termsafe.Redact) and
// control characters and code points that do not show as themselves (bidi
// overrides, zero-width characters: a signer posing as another) escaped, in error texts, log lines, the names on
// HTML pages (links keep the exact bytes, percent-encoded) and response
// headers (X-Oxy-Key; a download's filename and a redirect's Location are
// encoded); JSON escapes them as \u001b, \u007f, \u009b.
package web
