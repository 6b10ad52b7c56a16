package store

// The SigV4 signature of a lean S3 GET (leanget_s3.go), made here rather
// than by the SDK's v4.Signer: the request has one shape (GET, no query,
// the headers s3Lean.request sets), so its canonical request is written
// straight into the hash from parts fixed at open, and the signing key is
// derived once a day (per credentials) with its HMAC states pooled. The
// SDK's signer spent about 45 µs and 43 of a GET's 135 allocations
// building a header map, sorting it and joining strings (docs/
// performance.md, Target 3). The signature is the SDK's byte for byte
// (TestSigV4SignsAsTheSDK): same canonical URI (the escaped path, as with
// DisableURIPathEscaping), same signed headers, same Host (the SDK's
// SanitizeHostForHeader), same credential scope.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The headers of a lean S3 GET besides Host and the signer's own: their
// canonical names and values (s3Lean.request sets them, sigV4 signs them).
const (
	s3AcceptEncoding = "identity" // the bytes as stored, never decompressed on the way (as the SDK)
	s3ChecksumMode   = "ENABLED"  // the full object's checksum in the answer, checked in verify
)

// sigV4 signs the lean GETs of one bucket. Safe for concurrent use.
type sigV4 struct {
	host    string // the Host header as sent and signed; read-only after newSigV4
	region  string // read-only after newSigV4
	service string // read-only after newSigV4
	// key is the signing key of the last signature: its day's and its
	// credentials'. Replaced when either changes.
	key atomic.Pointer[sigV4Key]
}

// sigV4Key is a signing key (AWS4 + secret, HMAC'd with the day, the
// region, the service and "aws4_request") with what is written around it
// in every request signed with it.
type sigV4Key struct {
	day          string // YYYYMMDD, UTC
	akid, secret string
	token        bool   // the credentials carry a session token (signed as X-Amz-Security-Token)
	scope        string // day/region/service/aws4_request
	signed       string // the signed headers' names, ';'-separated
	auth         string // the Authorization header but the signature's hex
	key          []byte
	states       sync.Pool // of *sigV4State keyed with key
}

// sigV4State is one signature's hashes, reused.
type sigV4State struct {
	canon hash.Hash // SHA-256 of the canonical request
	mac   hash.Hash // HMAC-SHA256 with the signing key
	buf   []byte    // the canonical request, then the string to sign
	sum   [sha256.Size]byte
	hex   [2 * sha256.Size]byte
}

// newSigV4 signs GETs sent to host (the URL's, with its port) over scheme
// for region and service.
func newSigV4(scheme, host, region, service string) *sigV4 {
	return &sigV4{host: sigV4Host(scheme, host), region: region, service: service}
}

// sigV4Host is the Host header the SDK's signer sends and signs: the
// URL's host without a port that is the scheme's default (its
// SanitizeHostForHeader: an IPv6 literal then loses its brackets too).
func sigV4Host(scheme, host string) string {
	port := ""
	if c := strings.IndexByte(host, ':'); c >= 0 {
		switch i := strings.Index(host, "]:"); {
		case i >= 0:
			port = host[i+2:]
		case !strings.Contains(host, "]"):
			port = host[c+1:]
		}
	}
	scheme = strings.ToLower(scheme)
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		host = sigV4StripPort(host)
	}
	return host
}

// sigV4StripPort is the SDK's stripPort: the host before its port, an
// IPv6 literal without its brackets.
func sigV4StripPort(hostport string) string {
	colon := strings.IndexByte(hostport, ':')
	if colon < 0 {
		return hostport
	}
	if i := strings.IndexByte(hostport, ']'); i >= 0 {
		return strings.TrimPrefix(hostport[:i], "[")
	}
	return hostport[:colon]
}

// keyFor is the signing key for day and creds, derived if the last one is
// another's.
func (s *sigV4) keyFor(day string, creds aws.Credentials) *sigV4Key {
	token := creds.SessionToken != ""
	if k := s.key.Load(); k != nil && k.day == day && k.akid == creds.AccessKeyID && k.secret == creds.SecretAccessKey && k.token == token {
		return k
	}
	k := &sigV4Key{day: day, akid: creds.AccessKeyID, secret: creds.SecretAccessKey, token: token}
	k.scope = day + "/" + s.region + "/" + s.service + "/aws4_request"
	k.signed = "accept-encoding;host;x-amz-checksum-mode;x-amz-content-sha256;x-amz-date"
	if token {
		k.signed += ";x-amz-security-token"
	}
	k.auth = "AWS4-HMAC-SHA256 Credential=" + creds.AccessKeyID + "/" + k.scope + ", SignedHeaders=" + k.signed + ", Signature="
	k.key = hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), day)
	for _, part := range []string{s.region, s.service, "aws4_request"} {
		k.key = hmacSHA256(k.key, part)
	}
	k.states.New = func() any {
		return &sigV4State{canon: sha256.New(), mac: hmac.New(sha256.New, k.key)}
	}
	s.key.Store(k)
	return k
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// sign signs req, a lean GET of the escaped path uri whose other headers
// s3Lean.request set, with creds at t: it sets X-Amz-Date, the session
// token if any, Authorization, and the Host the signature names.
func (s *sigV4) sign(req *http.Request, uri string, creds aws.Credentials, t time.Time) {
	var date [16]byte
	amzDate := string(t.UTC().AppendFormat(date[:0], "20060102T150405Z"))
	k := s.keyFor(amzDate[:8], creds)
	st := k.states.Get().(*sigV4State)
	defer k.states.Put(st)

	b := st.buf[:0]
	b = append(b, "GET\n"...)
	b = append(b, uri...)
	b = append(b, "\n\naccept-encoding:"+s3AcceptEncoding+"\nhost:"...)
	b = append(b, s.host...)
	b = append(b, "\nx-amz-checksum-mode:"+s3ChecksumMode+"\nx-amz-content-sha256:"+emptyPayloadSHA256+"\nx-amz-date:"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	if k.token {
		b = append(b, "x-amz-security-token:"...)
		b = append(b, sigV4Value(creds.SessionToken)...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, k.signed...)
	b = append(b, "\n"+emptyPayloadSHA256...)
	st.canon.Reset()
	st.canon.Write(b)
	hex.Encode(st.hex[:], st.canon.Sum(st.sum[:0]))

	b = append(b[:0], "AWS4-HMAC-SHA256\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, k.scope...)
	b = append(b, '\n')
	b = append(b, st.hex[:]...)
	st.mac.Reset()
	st.mac.Write(b)
	hex.Encode(st.hex[:], st.mac.Sum(st.sum[:0]))
	st.buf = b

	n := 2
	if k.token {
		n = 3
	}
	vals := make([]string, n) // one allocation for the headers' values
	vals[0], vals[1] = amzDate, k.auth+string(st.hex[:])
	req.Header["X-Amz-Date"] = vals[0:1:1]
	req.Header["Authorization"] = vals[1:2:2]
	if k.token {
		vals[2] = creds.SessionToken
		req.Header["X-Amz-Security-Token"] = vals[2:3:3]
	}
	req.Host = s.host
}

// sigV4Value is a header value as the canonical headers hold it: spaces
// trimmed at both ends and runs of them made one (the SDK's
// StripExcessSpaces, then strings.TrimSpace).
func sigV4Value(v string) string {
	v = strings.Trim(v, " ")
	if strings.Contains(v, "  ") {
		var b strings.Builder
		space := false
		for i := 0; i < len(v); i++ {
			if v[i] == ' ' {
				if space {
					continue
				}
				space = true
			} else {
				space = false
			}
			b.WriteByte(v[i])
		}
		v = b.String()
	}
	return strings.TrimSpace(v)
}
