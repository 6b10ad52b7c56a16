package store

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/aws/smithy-go"
)

// TestACutAnswerIsTransient: a server killed mid-answer leaves the SDK a
// 200 whose body it cannot decode ("deserialization failed, failed to
// decode response body, unexpected EOF": integration's
// TestReliabilityServerKilledDuringWritesAndFolds saw it on a fold's LIST,
// which then failed without saying the store was unavailable). Such an
// answer is sent again, and after the tries it is ErrUnavailable; an error
// answer (4xx) whose body cannot be decoded stays final.
func TestACutAnswerIsTransient(t *testing.T) {
	cut := &smithy.DeserializationError{Err: fmt.Errorf("failed to decode response body, %w", io.ErrUnexpectedEOF)}
	for _, c := range []struct {
		status int
		want   bool
	}{{200, true}, {0, true}, {206, true}, {404, false}, {403, false}, {503, true}} {
		err := &codedError{status: c.status, err: fmt.Errorf("operation error S3: ListObjectsV2: %w", cut)}
		if got := transient(err); got != c.want {
			t.Errorf("a cut answer with status %d: transient %v, want %v", c.status, got, c.want)
		}
	}
	if u := unavailable("s3://b", 3, &codedError{status: 200, err: cut}); !errors.Is(u, ErrUnavailable) {
		t.Errorf("%v is not ErrUnavailable", u)
	}
}
