package lyingproxy

import (
	"slices"
	"testing"
)

// FuzzDecodeList: a page each protocol decodes encodes to one that decodes
// to the same keys and token, and nothing panics.
func FuzzDecodeList(f *testing.F) {
	for _, c := range cannedServers {
		f.Add(c.kind, []byte(c.page))
	}
	f.Fuzz(func(t *testing.T, kind string, body []byte) {
		var proto protocol
		switch kind {
		case "s3":
			proto = s3Protocol{}
		case "gcs":
			proto = gcsProtocol{}
		case "azure":
			proto = azureProtocol{}
		default:
			return
		}
		pg, err := proto.decodeList(body)
		if err != nil {
			return
		}
		keys, tok := pg.keys(), pg.token()
		out, err := pg.encode()
		if err != nil {
			return // what cannot be encoded again is refused (502)
		}
		pg2, err := proto.decodeList(out)
		if err != nil {
			t.Fatalf("%s: re-encoded page does not decode: %v\n%s", kind, err, out)
		}
		if !slices.Equal(pg2.keys(), keys) || pg2.token() != tok {
			t.Fatalf("%s: keys %q token %q became %q %q", kind, keys, tok, pg2.keys(), pg2.token())
		}
	})
}
