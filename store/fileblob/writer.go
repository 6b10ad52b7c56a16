package fileblob

import (
	"io"
	"io/fs"
)

// Write implements driver.Writer: the bytes go to the temporary file. A
// write that fails (ENOSPC, EDQUOT, EIO) fails the whole write: Close then
// removes the temporary file and leaves the key as it was.
func (w *fileWriter) Write(p []byte) (int, error) {
	if w.failed != nil {
		return 0, w.failed
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.failed = &fs.PathError{Op: "write", Path: w.key, Err: unwrapPathErr(err)}
		return n, w.failed
	}
	return n, nil
}

// Upload implements driver.Uploader: r is copied to the temporary file. An
// error reading r fails the write as one writing the file does: gocloud's
// Upload closes the writer after an Upload that failed, and Close must not
// publish what was written so far.
func (w *fileWriter) Upload(r io.Reader) error {
	_, err := io.Copy(writerOnly{w}, r)
	if err != nil && w.failed == nil {
		w.failed = err
	}
	return err
}

// writerOnly hides fileWriter's other methods from io.Copy (which would
// otherwise look for ReadFrom on it).
type writerOnly struct{ io.Writer }

// Close implements driver.Writer: it publishes the write — the data
// synced, the temporary file closed, then put in place under the key's
// name (publish: renamed, or for a create-only write linked). A write
// whose context ended, any of whose writes failed (or whose Upload's
// reader did), or whose data does not sync or close, is abandoned: its
// temporary file removed, the key untouched (no key made, an existing
// one keeps its bytes).
func (w *fileWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.abort()
		return err
	}
	if w.failed != nil {
		w.abort()
		return w.failed
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return &fs.PathError{Op: "sync", Path: w.key, Err: unwrapPathErr(err)}
	}
	if err := w.f.Close(); err != nil {
		w.closed = true
		w.abort()
		return &fs.PathError{Op: "close", Path: w.key, Err: unwrapPathErr(err)}
	}
	w.closed = true
	return w.publish()
}
