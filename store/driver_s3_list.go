package store

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Decoding a ListObjectsV2 page with the SDK costs about 7 µs per key
// (BenchmarkListDecode; encoding/xml tokens, one allocation per character
// run): a fold of a million keys spent 10 of its 18 CPU seconds there
// (pprof, with the collector's share), on a machine whose
// other core the S3 server needs. fastList swaps the operation's
// deserializer for one that first tries parseListV2, a scanner for the
// plain shape every S3 server sends, and hands the SDK a body it decodes
// in no time; any page the scanner does not fully understand (entities it
// leaves to encoding/xml, comments, CDATA, attributes on children, a body
// that is not a ListBucketResult, an error status)
// goes to the SDK's deserializer untouched. FuzzParseListV2 holds the two
// to the same output. EncodingType is ignored, as the SDK ignores it (it
// returns keys as the server wrote them; gocloud never asks for encoding).

// listPagesScanned and listPagesToSDK count the pages each way, process-wide.
var listPagesScanned, listPagesToSDK atomic.Int64

// S3ListPages returns how many S3 list pages this process decoded with its
// scanner and how many it left to the SDK's deserializer (a diagnostic: a
// server whose pages all go to the SDK lists at a sixth of the speed).
func S3ListPages() (scanned, sdk int64) { return listPagesScanned.Load(), listPagesToSDK.Load() }

// fastList is an s3.Options.APIOptions entry.
func fastList(stack *middleware.Stack) error {
	if stack.ID() != "ListObjectsV2" {
		return nil
	}
	orig, ok := stack.Deserialize.Get("OperationDeserializer")
	if !ok {
		return nil
	}
	_, err := stack.Deserialize.Swap("OperationDeserializer", &fastListDeserializer{orig: orig})
	return err
}

type fastListDeserializer struct {
	orig middleware.DeserializeMiddleware
}

func (*fastListDeserializer) ID() string { return "OperationDeserializer" }

// emptyListResult is what the SDK decodes when the page was parsed here.
const emptyListResult = `<ListBucketResult></ListBucketResult>`

func (m *fastListDeserializer) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	var page *listV2
	peek := middleware.DeserializeHandlerFunc(func(ctx context.Context, in middleware.DeserializeInput) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if err != nil {
			return out, md, err
		}
		resp, ok := out.RawResponse.(*smithyhttp.Response)
		if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 || resp.Body == nil {
			return out, md, err
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if errors.Is(rerr, ErrTooLarge) {
			return out, md, rerr // a page over maxListPage (driver_http.go)
		}
		if rerr != nil {
			// The SDK's deserializer reports a body it cannot read.
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
			return out, md, err
		}
		if p, perr := parseListV2(body); perr == nil {
			page = p
			listPagesScanned.Add(1)
			resp.Body = io.NopCloser(strings.NewReader(emptyListResult))
		} else {
			listPagesToSDK.Add(1)
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		return out, md, err
	})
	out, md, err := m.orig.HandleDeserialize(ctx, in, peek)
	if err != nil {
		return out, md, err
	}
	res, ok := out.Result.(*s3.ListObjectsV2Output)
	if !ok {
		return out, md, errors.New("s3 list: unexpected output type")
	}
	if page != nil {
		res.Contents, res.CommonPrefixes = page.contents, page.prefixes
		res.IsTruncated, res.NextContinuationToken, res.KeyCount = page.truncated, page.next, page.keyCount
	}
	// gocloud ends a listing at a page without a continuation, whatever
	// IsTruncated says: a page that says there is more and gives no way
	// to it fails the listing (listcheck.go).
	if aws.ToBool(res.IsTruncated) && aws.ToString(res.NextContinuationToken) == "" {
		return out, md, fmt.Errorf("%w: the page is marked truncated but carries no continuation token", ErrBadListing)
	}
	return out, md, err
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// listV2 is what parseListV2 keeps of a page: what gocloud's s3blob reads.
type listV2 struct {
	contents  []types.Object
	prefixes  []types.CommonPrefix
	truncated *bool
	next      *string
	keyCount  *int32
}

// errNotPlain sends a page to the SDK's deserializer.
var errNotPlain = errors.New("s3 list: not a plain page")

// xmlScanner walks the bytes of one page.
type xmlScanner struct {
	b []byte
	i int

	lastModS string     // the last LastModified text parsed,
	lastMod  *time.Time // and its time
}

func (s *xmlScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// startTag reads "<Name>" or "<Name/>" (no attributes) and returns the name.
func (s *xmlScanner) startTag() (name []byte, empty bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '<' {
		return nil, false, errNotPlain
	}
	j := s.i + 1
	for j < len(s.b) && isNameByte(s.b[j]) {
		j++
	}
	if j == s.i+1 || j >= len(s.b) {
		return nil, false, errNotPlain
	}
	name = s.b[s.i+1 : j]
	switch {
	case s.b[j] == '>':
		s.i = j + 1
	case s.b[j] == '/' && j+1 < len(s.b) && s.b[j+1] == '>':
		s.i, empty = j+2, true
	default:
		return nil, false, errNotPlain // attributes, or not a tag
	}
	return name, empty, nil
}

// endTag reads "</Name>" if it comes next.
func (s *xmlScanner) endTag(name []byte) bool {
	end := len(name) + 3
	if s.i+end > len(s.b) || s.b[s.i] != '<' || s.b[s.i+1] != '/' || !bytes.Equal(s.b[s.i+2:s.i+2+len(name)], name) || s.b[s.i+end-1] != '>' {
		return false
	}
	s.i += end
	return true
}

// text reads the character data of a simple element up to its end tag.
func (s *xmlScanner) text(name []byte, empty bool) (string, error) {
	if empty {
		return "", nil
	}
	j := bytes.IndexByte(s.b[s.i:], '<')
	if j < 0 {
		return "", errNotPlain
	}
	raw := s.b[s.i : s.i+j]
	s.i += j
	if !s.endTag(name) {
		return "", errNotPlain
	}
	if !plainText(raw) || bytes.IndexByte(raw, '>') >= 0 {
		// CR (normalised), non-ASCII (checked as XML characters) or a
		// control character (NUL and others XML forbids): as the SDK would
		return decodeText(raw)
	}
	if bytes.IndexByte(raw, '&') >= 0 {
		if v, ok := unescapeSimple(raw); ok {
			return v, nil
		}
		return decodeText(raw)
	}
	return string(raw), nil
}

// plainText reports whether raw is printable ASCII, tab or line feed only:
// character data the scanner may take as it stands.
func plainText(raw []byte) bool {
	for _, c := range raw {
		if (c < 0x20 && c != '\t' && c != '\n') || c > 0x7e {
			return false
		}
	}
	return true
}

// unescapeSimple decodes the references S3 servers write (the five named
// entities, and numeric ones for printable ASCII, such as the &#34; around
// every ETag); ok is false for anything else, left to encoding/xml.
func unescapeSimple(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '&' {
			out = append(out, c)
			i++
			continue
		}
		end := bytes.IndexByte(raw[i:], ';')
		if end < 0 {
			return "", false
		}
		ref := string(raw[i+1 : i+end])
		i += end + 1
		switch ref {
		case "amp":
			out = append(out, '&')
		case "lt":
			out = append(out, '<')
		case "gt":
			out = append(out, '>')
		case "quot":
			out = append(out, '"')
		case "apos":
			out = append(out, '\'')
		default:
			var n uint64
			var err error
			switch {
			case len(ref) > 2 && ref[0] == '#' && ref[1] == 'x':
				n, err = strconv.ParseUint(ref[2:], 16, 8)
			case len(ref) > 1 && ref[0] == '#' && ref[1] >= '0' && ref[1] <= '9':
				n, err = strconv.ParseUint(ref[1:], 10, 8)
			default:
				return "", false
			}
			if err != nil || n < 0x20 || n > 0x7e {
				return "", false
			}
			out = append(out, byte(n))
		}
	}
	return string(out), true
}

// decodeText decodes character data with encoding/xml, as the SDK would.
func decodeText(raw []byte) (string, error) {
	var v string
	buf := make([]byte, 0, len(raw)+7)
	buf = append(append(append(buf, "<a>"...), raw...), "</a>"...)
	if err := xml.Unmarshal(buf, &v); err != nil {
		return "", errNotPlain
	}
	return v, nil
}

// skip skips the rest of an element whose start tag was read.
func (s *xmlScanner) skip(name []byte, empty bool, depth int) error {
	if empty {
		return nil
	}
	if depth > 8 {
		return errNotPlain
	}
	for {
		j := bytes.IndexByte(s.b[s.i:], '<')
		if j < 0 {
			return errNotPlain
		}
		s.i += j
		if s.endTag(name) {
			return nil
		}
		child, e, err := s.startTag()
		if err != nil {
			return err
		}
		if err := s.skip(child, e, depth+1); err != nil {
			return err
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// parseListV2 parses a ListObjectsV2 result of the plain shape; anything
// else is errNotPlain.
func parseListV2(b []byte) (*listV2, error) {
	s := &xmlScanner{b: b}
	root := []byte("ListBucketResult")
	if err := s.rootStart(root); err != nil {
		return nil, err
	}
	p := &listV2{}
	for {
		s.space()
		if s.endTag(root) {
			break
		}
		name, empty, err := s.startTag()
		if err != nil {
			return nil, err
		}
		if err := s.listField(p, name, empty); err != nil {
			return nil, err
		}
	}
	s.space()
	if s.i != len(b) {
		return nil, errNotPlain
	}
	return p, nil
}

// rootStart reads past an optional XML declaration and the start tag of
// root (which may carry attributes such as xmlns); errNotPlain if the body
// does not start so.
func (s *xmlScanner) rootStart(root []byte) error {
	b := s.b
	s.space()
	if bytes.HasPrefix(b[s.i:], []byte("<?xml")) {
		j := bytes.Index(b[s.i:], []byte("?>"))
		if j < 0 {
			return errNotPlain
		}
		s.i += j + 2
		s.space()
	}
	if !bytes.HasPrefix(b[s.i:], append([]byte("<"), root...)) {
		return errNotPlain
	}
	// The root may carry xmlns: skip to its '>'.
	j := bytes.IndexByte(b[s.i:], '>')
	if j < 0 || b[s.i+j-1] == '/' || !isRootTagEnd(b[s.i+1+len(root)]) {
		return errNotPlain
	}
	s.i += j + 1
	return nil
}

// listField reads one child of ListBucketResult, whose start tag name was
// read, into p: an object, a common prefix, the truncation flag, the next
// token or the key count; any other element is skipped whole.
func (s *xmlScanner) listField(p *listV2, name []byte, empty bool) error {
	switch {
	case bytes.EqualFold(name, []byte("Contents")):
		o, err := s.object(name, empty)
		if err != nil {
			return err
		}
		p.contents = append(p.contents, o)
	case bytes.EqualFold(name, []byte("CommonPrefixes")):
		cp, err := s.commonPrefix(name, empty)
		if err != nil {
			return err
		}
		p.prefixes = append(p.prefixes, cp)
	case bytes.EqualFold(name, []byte("IsTruncated")):
		t, err := s.text(name, empty)
		if err != nil {
			return err
		}
		v, err := strconv.ParseBool(t)
		if err != nil {
			return errNotPlain
		}
		p.truncated = aws.Bool(v)
	case bytes.EqualFold(name, []byte("NextContinuationToken")):
		t, err := s.text(name, empty)
		if err != nil {
			return err
		}
		p.next = aws.String(t)
	case bytes.EqualFold(name, []byte("KeyCount")):
		t, err := s.text(name, empty)
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(t, 10, 32)
		if err != nil {
			return errNotPlain
		}
		p.keyCount = aws.Int32(int32(v))
	default:
		return s.skip(name, empty, 0)
	}
	return nil
}

func isRootTagEnd(c byte) bool { return c == '>' || c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fields reads the children of an element whose start tag was read: the
// text of each child named in names goes to fn, other children are skipped.
func (s *xmlScanner) fields(name []byte, empty bool, names []string, fn func(child []byte, text string) error) error {
	if empty {
		return nil
	}
	for {
		s.space()
		if s.endTag(name) {
			return nil
		}
		child, e, err := s.startTag()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(names, func(n string) bool { return bytes.EqualFold(child, []byte(n)) }) {
			if err := s.skip(child, e, 1); err != nil {
				return err
			}
			continue
		}
		t, err := s.text(child, e)
		if err != nil {
			return err
		}
		if err := fn(child, t); err != nil {
			return err
		}
	}
}

var objectFields = []string{"Key", "ETag", "Size", "LastModified"}

// object parses the children of a Contents element.
func (s *xmlScanner) object(name []byte, empty bool) (types.Object, error) {
	var o types.Object
	err := s.fields(name, empty, objectFields, func(child []byte, t string) error {
		switch {
		case bytes.EqualFold(child, []byte("Key")):
			o.Key = aws.String(t)
		case bytes.EqualFold(child, []byte("ETag")):
			o.ETag = aws.String(t)
		case bytes.EqualFold(child, []byte("Size")):
			v, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				return errNotPlain
			}
			o.Size = aws.Int64(v)
		default: // LastModified: the keys of a page often share one
			if t != s.lastModS || s.lastMod == nil {
				tm, err := smithytime.ParseDateTime(t)
				if err != nil {
					return errNotPlain
				}
				s.lastModS, s.lastMod = t, &tm
			}
			tm := *s.lastMod
			o.LastModified = &tm
		}
		return nil
	})
	return o, err
}

var prefixFields = []string{"Prefix"}

// commonPrefix parses the children of a CommonPrefixes element.
func (s *xmlScanner) commonPrefix(name []byte, empty bool) (types.CommonPrefix, error) {
	var cp types.CommonPrefix
	err := s.fields(name, empty, prefixFields, func(_ []byte, t string) error {
		cp.Prefix = aws.String(t)
		return nil
	})
	return cp, err
}
