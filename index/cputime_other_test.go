//go:build !unix

package index

import (
	"testing"
	"time"
)

// cpuTime is 0 where getrusage is not: the benchmarks then report no CPU.
func cpuTime(*testing.B) time.Duration { return 0 }

// minorFaults is 0 where getrusage is not.
func minorFaults(*testing.B) int64 { return 0 }
