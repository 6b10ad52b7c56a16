package format

import (
	"io"
	"math/rand/v2"
	"testing"
)

// TestEntryListTextWindowsShareOnePool reads twelve texts at once, each
// backward block by block: no window keeps more than ListTextWindow blocks,
// all of them together no more than ListTextPool, and every read gives the
// text's bytes. Closing gives the blocks back.
func TestEntryListTextWindowsShareOnePool(t *testing.T) {
	data, text := longWindowList(t, 300000)
	blocks := (int64(len(text)) + ListTextBlock - 1) / ListTextBlock
	if blocks < 2 {
		t.Fatalf("the text has %d bytes, want more than one block", len(text))
	}
	var lts []*EntryListText
	for range 12 {
		lt, err := NewEntryListText(data)
		if err != nil {
			t.Fatal(err)
		}
		lts = append(lts, lt)
	}
	// Enough reads for every window to fill: 12 texts × up to 8 blocks
	// each would be 96 blocks without the pool's cap.
	p := make([]byte, 4096)
	for round := range 8 {
		for _, lt := range lts {
			k := (blocks - 1 - int64(round)%blocks)
			off := k * ListTextBlock
			n, err := lt.ReadAt(p, off)
			if err != nil && !exactly(err, io.EOF) || string(p[:n]) != text[off:off+int64(n)] {
				t.Fatalf("ReadAt(%d) = %d, %v; want the text there", off, n, err)
			}
			if len(lt.seek.win) > ListTextWindow {
				t.Fatalf("a window holds %d blocks, want at most %d", len(lt.seek.win), ListTextWindow)
			}
		}
	}
	textPool.mu.Lock()
	held := textPool.held
	textPool.mu.Unlock()
	t.Logf("held %d blocks %d", held, blocks)
	if held > ListTextPool {
		t.Errorf("the windows hold %d blocks together, want at most %d", held, ListTextPool)
	}
	for _, lt := range lts {
		lt.Close()
	}
	textPool.mu.Lock()
	defer textPool.mu.Unlock()
	if textPool.held != 0 {
		t.Errorf("after every Close the pool counts %d blocks, want 0", textPool.held)
	}
}

// TestEntryListTextReadsBlocksInAnyOrder reads a text of several blocks at
// random offsets and lengths, across block ends, with checkpoints uncapped
// and capped at about two blocks (past which a read behind the stream
// decodes from the start): every read gives the text's bytes.
func TestEntryListTextReadsBlocksInAnyOrder(t *testing.T) {
	data, text := longWindowList(t, 300000)
	for _, capped := range []int64{0, 2 * ListTextBlock / 8} {
		lt, err := NewEntryListTextOfSize(data, int64(len(text)))
		if err != nil {
			t.Fatal(err)
		}
		lt.seek.ckptCap = capped
		rng := rand.New(rand.NewPCG(1, uint64(capped)))
		for i := range 200 {
			off := rng.Int64N(int64(len(text)) + 10)
			p := make([]byte, rng.IntN(3*ListTextBlock/2)+1)
			n, err := lt.ReadAt(p, off)
			want := text[min(off, int64(len(text))):min(off+int64(len(p)), int64(len(text)))]
			wantErr := error(nil)
			if len(want) < len(p) {
				wantErr = io.EOF
			}
			if string(p[:n]) != want || !exactly(err, wantErr) {
				t.Fatalf("cap %d, read %d: ReadAt(%d bytes at %d) = %d bytes, %v; want %d bytes, %v", capped, i, len(p), off, n, err, len(want), wantErr)
			}
		}
		if capped > 0 && (!lt.seek.full || lt.seek.ckptBytes > capped) {
			t.Errorf("checkpoints of %d bytes (full %v), want the cap of %d reached and kept", lt.seek.ckptBytes, lt.seek.full, capped)
		}
		lt.Close()
	}
}
