package fileblob

import "io/fs"

// Write implements driver.Writer: the bytes go to the temporary file.
func (w *fileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

// Close implements driver.Writer: it publishes the write — the data
// synced, the temporary file closed, then put in place under the key's
// name (publish: renamed, or for a create-only write linked). A write
// whose context ended, or whose data does not sync, is abandoned and its
// temporary file removed.
func (w *fileWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.abort()
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return &fs.PathError{Op: "sync", Path: w.key, Err: err}
	}
	return w.publish(w.f.Close())
}
