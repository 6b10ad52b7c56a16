package web

import (
	"bytes"
	"context"

	"github.com/oxyfs/oxyfs/store"
)

// sigPrefix returns a signature's size and its first SigPagePrefix bytes
// (a copy: the page holds no more of it while it is written).
func (h *handler) sigPrefix(ctx context.Context, e store.Entry) (int64, []byte, error) {
	data, err := h.ix.ReadSig(ctx, e)
	if err != nil {
		return 0, nil, err
	}
	return int64(len(data)), bytes.Clone(data[:min(len(data), SigPagePrefix)]), nil
}
