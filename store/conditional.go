package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"google.golang.org/api/googleapi"
)

// ReadRecordIfChanged reads a record (the journal, the retired record) only
// if it is no longer at version v: one GET, conditional where the backend
// can make it so. It returns changed false, nil data and v itself when the
// record is still at v, else the record's bytes and new version. A record
// that is gone reads as changed, with nil data and the zero Version; a
// record absent at v (the zero Version) and still absent is unchanged.
//
// Per backend (every backend-specific bit is in this file):
//
//	S3     If-None-Match: <ETag> on GetObject (ReaderOptions.BeforeRead,
//	       *s3.GetObjectInput); 304 Not Modified is "unchanged".
//	Azure  DownloadStreamOptions AccessConditions IfNoneMatch: <ETag>. The
//	       SDK treats 304 as a success with an empty body; the ETag it
//	       returns is then v's, which is how it is told apart.
//	GCS    ObjectHandle.If(Conditions{GenerationNotMatch}). The Go client
//	       sends that condition only on JSON-API reads; on the XML-API reads
//	       it makes by default (and gocloud's gs:// opener uses) it drops it
//	       silently, and the object is read in full. Either way the answer
//	       is right: a 304 is "unchanged", and so is a read whose generation
//	       is v's. Still one GET; on XML reads it costs the record's bytes.
//	file,  the record is read and its SHA-256 compared with v's token.
//	mem
//
// A 304 is never an error. S3 ETags are content hashes, so a record
// rewritten with the same bytes reads as unchanged: its state is its bytes.
func (s *Store) ReadRecordIfChanged(ctx context.Context, key string, v Version) (data []byte, nv Version, changed bool, err error) {
	if !v.Exists {
		data, nv, err = s.ReadRecord(ctx, key)
		if err != nil {
			return nil, Version{}, false, err
		}
		return data, nv, nv.Exists, nil
	}
	if d, ok := s.cas.(directReader); ok {
		data, tok, ok, err := d.readDirect(ctx, key, v.Token)
		if ok {
			return s.ifChanged(key, v, data, tok, err, nil)
		}
	}
	var opts *blob.ReaderOptions
	cr, _ := s.cas.(conditionalReader)
	if cr != nil {
		if before := cr.ifNoneMatch(v.Token); before != nil {
			opts = &blob.ReaderOptions{BeforeRead: before}
		}
	}
	data, tok, err := s.readWithToken(ctx, key, opts)
	return s.ifChanged(key, v, data, tok, err, cr)
}

// ifChanged turns one read at version v into ReadRecordIfChanged's answer.
func (s *Store) ifChanged(key string, v Version, data []byte, tok string, err error, cr conditionalReader) ([]byte, Version, bool, error) {
	switch {
	case err != nil && cr != nil && cr.notModified(err):
		return nil, v, false, nil
	case errors.Is(err, ErrNotFound):
		return nil, Version{}, true, nil
	case err != nil:
		return nil, Version{}, false, fmt.Errorf("read record %q if changed: %w", key, err)
	case tok == v.Token:
		return nil, v, false, nil
	}
	return data, Version{Token: tok, Exists: true}, true, nil
}

// directReader is a backend whose conditional read bypasses gocloud.
type directReader interface {
	readDirect(ctx context.Context, key, token string) (data []byte, tok string, ok bool, err error)
}

// conditionalReader is one backend's conditional read: the BeforeRead that
// makes a GET conditional on a version token (nil: the backend reads in full
// and the caller compares tokens), and how a backend error says 304.
type conditionalReader interface {
	ifNoneMatch(token string) func(as func(any) bool) error
	notModified(err error) bool
}

var (
	_ conditionalReader = s3CAS{}
	_ conditionalReader = gcsCAS{}
	_ conditionalReader = azureCAS{}
	_ conditionalReader = (*lockCAS)(nil)
	_ directReader      = azureCAS{}
)

// statusCoder is how AWS (smithy ResponseError) and others expose an
// HTTP status on an error.
type statusCoder interface{ HTTPStatusCode() int }

func (s3CAS) ifNoneMatch(token string) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if !as(&in) {
			return errors.New("s3: cannot set If-None-Match on GetObject")
		}
		in.IfNoneMatch = &token
		return nil
	}
}

func (s3CAS) notModified(err error) bool {
	var sc statusCoder
	return errors.As(err, &sc) && sc.HTTPStatusCode() == http.StatusNotModified
}

func (gcsCAS) ifNoneMatch(token string) func(as func(any) bool) error {
	gen, err := strconv.ParseInt(token, 10, 64)
	if err != nil || gen == 0 {
		return nil // not a generation: read in full and compare
	}
	return func(as func(any) bool) error {
		var objp **storage.ObjectHandle
		if !as(&objp) {
			return errors.New("gcs: cannot set a generation precondition on a read")
		}
		*objp = (*objp).If(storage.Conditions{GenerationNotMatch: gen})
		return nil
	}
}

func (gcsCAS) notModified(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusNotModified
}

// Azure's conditional read does not go through gocloud: the SDK answers
// a 304 as a success with no Last-Modified, which gocloud's azureblob reader
// dereferences (a panic, gocloud.dev v0.47.0). So gocloud gets no condition
// (a read through it is in full, compared by ETag), and readDirect sends the
// download itself through the bucket's *container.Client.
func (azureCAS) ifNoneMatch(string) func(as func(any) bool) error { return nil }

func (azureCAS) notModified(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotModified
}

// readDirect downloads key with If-None-Match: token (one GET). ok is false
// when it cannot address the blob itself: the store was not opened from a
// URL (so a prefix the bucket adds is unknown), or the key holds characters
// azureblob would escape.
func (c azureCAS) readDirect(ctx context.Context, key, token string) (data []byte, tok string, ok bool, err error) {
	name := c.s.prefix + key
	if !c.s.direct || !plainBlobName(name) {
		return nil, "", false, nil
	}
	var cc *container.Client
	if !c.s.bucket.As(&cc) {
		return nil, "", false, nil
	}
	err = c.s.read(ctx, &c.s.n.get, func(ctx context.Context) error {
		var raw *http.Response
		opts := &azblobblob.DownloadStreamOptions{AccessConditions: &azblobblob.AccessConditions{
			ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETag(token))},
		}}
		resp, err := cc.NewBlobClient(name).DownloadStream(runtime.WithCaptureResponse(ctx, &raw), opts)
		if err != nil {
			var re *azcore.ResponseError
			if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
				return &codedError{sentinel: ErrNotFound, err: err}
			}
			return err
		}
		defer resp.Body.Close()
		if raw != nil && raw.StatusCode == http.StatusNotModified {
			data, tok = nil, token
			return nil
		}
		limit := ReadCap(key)
		if data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1)); err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return tooLarge(-1, limit)
		}
		if resp.ETag == nil {
			return errors.New("azure: read returned no ETag")
		}
		tok = string(*resp.ETag)
		return nil
	})
	return data, tok, true, err
}

// plainBlobName reports whether azureblob sends name unescaped: letters,
// digits and . _ - /, no "../", no trailing slash.
func plainBlobName(name string) bool {
	if name == "" || strings.HasSuffix(name, "/") || strings.Contains(name, "../") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

// file and mem compare content hashes after the read.
func (*lockCAS) ifNoneMatch(string) func(as func(any) bool) error { return nil }
func (*lockCAS) notModified(error) bool                           { return false }

// ReadSnapshotSince reads the store's layout again after prev, a snapshot
// this handle read earlier: the journal and the retired record with one
// conditional GET each (ReadRecordIfChanged, in parallel). When neither
// changed and list is false, it returns prev itself and changed false: 2
// GETs, no LIST. Otherwise it lists the pack prefix (one LIST per page)
// after both reads, as ReadSnapshot does, and returns a new snapshot whose
// unchanged record is prev's (its lines shared, not copied); changed says
// whether either record changed. The cost is never more than ReadSnapshot's.
//
// Whether an unchanged journal and retired record mean an unchanged store
// is the caller's argument to make (index.Refresh makes it for a folded
// store); list true asks for the listing regardless.
func (s *Store) ReadSnapshotSince(ctx context.Context, prev *Snapshot, list bool) (sn *Snapshot, changed bool, err error) {
	var (
		wg                 sync.WaitGroup
		jdata, rdata       []byte
		jv, rv             Version
		jchanged, rchanged bool
		jerr, rerr         error
	)
	wg.Go(func() {
		jdata, jv, jchanged, jerr = s.ReadRecordIfChanged(ctx, JournalKey, prev.JournalVersion)
	})
	rdata, rv, rchanged, rerr = s.ReadRecordIfChanged(ctx, RetiredKey, prev.RetiredVersion)
	wg.Wait()
	if err := errors.Join(rerr, jerr); err != nil {
		return nil, false, fmt.Errorf("read store layout again: %w", err)
	}
	changed = jchanged || rchanged
	if !changed && !list {
		return prev, false, nil
	}
	sn = &Snapshot{
		Journal: prev.Journal, JournalVersion: prev.JournalVersion, JournalBad: prev.JournalBad, JournalText: prev.JournalText,
		Retired: prev.Retired, RetiredVersion: prev.RetiredVersion, RetiredBad: prev.RetiredBad, RetiredText: prev.RetiredText,
	}
	if jchanged {
		sn.JournalVersion = jv
		sn.setJournal(jdata)
	}
	if rchanged {
		sn.RetiredVersion = rv
		sn.setRetired(rdata)
	}
	if err := s.listPacks(ctx, sn); err != nil {
		return nil, false, fmt.Errorf("read store layout again: %w", err)
	}
	sn.markRetired()
	return sn, changed, nil
}
