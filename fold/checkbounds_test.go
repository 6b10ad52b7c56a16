package fold

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/memtest"
)

// bigList builds a valid entry list of n keys of about 256 bytes each,
// none of which exists: its text is n × 256 bytes, its compressed bytes a
// few hundredths of that. It returns the list's name and bytes.
func bigList(t testing.TB, n int) (string, []byte) {
	t.Helper()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	w := io.MultiWriter(h, enc)
	pad := strings.Repeat("v", 232)
	line := make([]byte, 0, 512)
	buf := make([]byte, 0, 64<<10)
	buf = append(buf, format.EntryListHeader+"\n"...)
	for i := range n {
		line = fmt.Appendf(line[:0], "sig/ab/%08x/%s\n", i, pad)
		buf = append(buf, line...)
		if len(buf) > 60<<10 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return format.EntryListName(hex.EncodeToString(h.Sum(nil)), true), out.Bytes()
}

func TestCheckStreamsAHugeListInBoundedMemory(t *testing.T) {
	st, _ := newMem(t)
	ctx := context.Background()
	const n = 1 << 18 // 64 MiB of text
	name, data := bigList(t, n)
	if err := st.Put(ctx, name, data); err != nil {
		t.Fatal(err)
	}
	data = nil
	var rep CheckReport
	var err error
	peak := memtest.Peak(func() { rep, err = Check(ctx, st, CheckOptions{MaxItems: 3}) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sig/ab/00000000/" + strings.Repeat("v", 232),
		"sig/ab/00000001/" + strings.Repeat("v", 232),
		"sig/ab/00000002/" + strings.Repeat("v", 232),
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Code != CodeEntryMissingKey || !slices.Equal(rep.Problems[0].Keys, want) ||
		rep.Problems[0].Count != n || !strings.Contains(rep.Problems[0].Message, name) || rep.ListEntries != n || !rep.Folded {
		t.Errorf("check of a huge list: problems %q, list entries %d, folded %v", rep.Problems, rep.ListEntries, rep.Folded)
	}
	// The list's compressed bytes and a decoder's window, not its text.
	if peak > 24*memtest.MiB {
		t.Errorf("check of a 64 MiB list took %d MiB of heap, want < 24", peak/memtest.MiB)
	}
}

func TestCheckCountsEveryMalformedKeyOfAList(t *testing.T) {
	st, _ := newMem(t)
	ctx := context.Background()
	text := format.EntryListHeader + "\nsig/ab/cd/" + strings.Repeat("v", 256) + "\nsig/ab/cd/" + strings.Repeat("w", 256) + "\nsig/ab/cd/" + strings.Repeat("x", 256) + "\n"
	sum := sha256.Sum256([]byte(text))
	name := format.EntryListName(hex.EncodeToString(sum[:]), true)
	enc, _ := zstd.NewWriter(nil)
	if err := st.Put(ctx, name, enc.EncodeAll([]byte(text), nil)); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(ctx, st, CheckOptions{MaxItems: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Problems); n != 1 || rep.Problems[0].Code != CodeListKeyMalformed || !strings.Contains(rep.Problems[0].Message, name+" holds 3 malformed keys") ||
		len(rep.Problems[0].Details) != 1 {
		t.Errorf("problems = %q", rep.Problems)
	}
}
