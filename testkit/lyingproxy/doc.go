// Package lyingproxy is a reverse proxy in front of the test servers
// (versitygw for S3, fake-gcs-server for GCS, Azurite for Azure Blob) that
// changes only what they answer: a server that lies, for tests that oxyfs
// never takes a server's word.
//
// # Use
//
//	srv := testservers.Start(t, "gcs")
//	p := lyingproxy.Start(t, srv.Kind, srv.URL) // 127.0.0.1:PORT, stopped with the test
//	st, _ := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{})
//	p.Set(lyingproxy.IgnorePrefix())           // from the next request on
//	... st.List(ctx, "sig/", ...) ...
//	p.Set()                                     // honest again
//	p.Count(lyingproxy.OpList)                  // LISTs received
//
// StoreURL rewrites a testservers blob URL to go through the proxy: S3's
// endpoint= and Azure's domain= are replaced; a gs:// URL gets
// endpoint=http://PROXY/storage/v1/, which store.Open reads (the gs://
// opener of gocloud does not know it: open GCS stores through the proxy
// with store.Open only).
//
// # Modes
//
// Set(modes...) replaces the lies in force; it is safe to call while
// requests are in flight (each request sees one set). Without modes every
// request passes through unchanged.
//
//	IgnorePrefix      a LIST answers the whole bucket (its prefix dropped)
//	RepeatToken       every LIST page carries the same continuation, forever
//	TruncatedNoToken  a page marked truncated with no continuation (S3;
//	                  on GCS and Azure the token is only dropped)
//	CutPage           the first half of a page, marked last
//	EmptyPages        a page with no items, marked last
//	EndlessEmptyPages a page with no items and a new continuation, forever
//	OmitKeys(k...)    the keys dropped from every page
//	ListsUnder(p...)  the LIST lies above only for prefixes under p
//	PadList(n)        n bytes of whitespace in every page, streamed
//	NotFound(k...)    404 to GET and HEAD of the keys
//	KeepOnDelete(k...) DELETE answered 204 (Azure 202), never forwarded
//	ErrorBodies(s, n, ops...) status s with an n-byte body, streamed
//	Redirect(to, ops...) 307 to another listener (OtherHost: 127.0.0.2;
//	                  OtherPort: another port of 127.0.0.1), plain http,
//	                  which records the Authorization headers that
//	                  arrive (Proxy.OtherHost, Proxy.OtherPort) and
//	                  forwards to the server
//	ShiftDate(d)      every answer's Date header moved by d (a store whose
//	                  clock is d off the client's)
//	NoDate            every answer without a Date header
//	StripConditions   writes forwarded without If-Match / If-None-Match /
//	                  ifGenerationMatch (a server that ignores them);
//	                  Proxy.Stripped counts them
//	DropWrites(k...)  writes of the keys (none: every key) acknowledged
//	                  and never forwarded
//	FloodBody(n, k...) GETs of the keys answered with n bytes more than
//	                  the object (n < 0: without end), no Content-Length
//
// # Per protocol
//
// What differs per server is in one file each: s3.go, gcs.go, azure.go.
// Each classifies a request (LIST, GET, HEAD, PUT, DELETE, OTHER, with its
// key or prefix), decodes and encodes a LIST page (S3's ListBucketResult
// and Azure's EnumerationResults as XML elements kept raw, GCS's objects
// list as JSON fields kept raw: what no lie changes passes through), and
// writes the server's 404, delete and error answers. S3 and Azure sign
// their requests' query: a LIST whose query the proxy changes
// (IgnorePrefix, RepeatToken) is signed again with the credentials of the
// process environment, where testservers puts them (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY; AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY).
//
// # Memory
//
// A LIST page being changed is held whole (the servers' pages are a few
// MB); padding and error bodies are written in 64 KiB chunks, so a page
// padded to GBs costs the proxy 64 KiB.
package lyingproxy
