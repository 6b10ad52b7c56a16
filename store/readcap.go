package store

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is wrapped by the error of a read refused by its cap.
var ErrTooLarge = errors.New("over its size cap")

// tooLarge is the error of a read refused by its cap (the caller's error
// names the key); size < 0 means "more than max" (the size was not known
// before reading).
func tooLarge(size, max int64) error {
	if size < 0 {
		return fmt.Errorf("more than %d bytes, the cap for such a key: %w", max, ErrTooLarge)
	}
	return fmt.Errorf("%d bytes, over the cap of %d for such a key: %w", size, max, ErrTooLarge)
}

// readAllInto is io.ReadAll appending to dst, which holds the expected size:
// a body of the size its response declared is read with no copy.
func readAllInto(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
