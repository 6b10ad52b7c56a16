package storetest

import (
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

// Harness opens stores of one backend.
type Harness interface {
	// NewStore returns a function that opens handles onto one fresh, empty
	// store. Each call of the function returns a new handle (own counters)
	// onto the same store, so the kit can race several handles.
	NewStore(t *testing.T) func(t *testing.T) *store.Store
}

// HarnessFunc adapts a function to Harness.
type HarnessFunc func(t *testing.T) func(t *testing.T) *store.Store

// NewStore calls f.
func (f HarnessFunc) NewStore(t *testing.T) func(t *testing.T) *store.Store { return f(t) }

// LimitValues is h for a server that cannot hold DESIGN §3's longest value
// (a 255-byte last component): the kit checks values of n bytes instead.
func LimitValues(h Harness, n int) Harness { return valueLimit{h, n} }

type valueLimit struct {
	Harness
	maxValue int
}

// RunConformanceTests runs every check of the kit against h.
func RunConformanceTests(t *testing.T, h Harness) {
	t.Run("MissingKeys", func(t *testing.T) { testMissingKeys(t, h) })
	t.Run("PutGetDelete", func(t *testing.T) { testPutGetDelete(t, h) })
	t.Run("FailedPutLeavesKeyAsItWas", func(t *testing.T) { testFailedPut(t, h) })
	t.Run("LongestValue", func(t *testing.T) { testLongestValue(t, h) })
	t.Run("CountersMatchRequests", func(t *testing.T) { testCounters(t, h) })
	t.Run("ReadOnlyRefusesWrites", func(t *testing.T) { testReadOnly(t, h) })
	t.Run("RecordCreateOnlyWhenAbsent", func(t *testing.T) { testRecordCreate(t, h) })
	t.Run("LostRaceIsConflict", func(t *testing.T) { testLostRace(t, h) })
	t.Run("LargeRecordLostRaceIsConflict", func(t *testing.T) { testLargeLostRace(t, h) })
	t.Run("CreateOnlyRaceHasOneWinner", func(t *testing.T) { testCreateRace(t, h) })
	t.Run("CASUnderContention", func(t *testing.T) { testContention(t, h) })
	t.Run("UpdateNoChangeWritesNothing", func(t *testing.T) { testNoChange(t, h) })
	t.Run("PagingReturnsEachKeyOnce", func(t *testing.T) { testPaging(t, h) })
	t.Run("PrefixIsolation", func(t *testing.T) { testPrefixIsolation(t, h) })
	t.Run("DelimiterListsCommonPrefixes", func(t *testing.T) { testDelimiter(t, h) })
	t.Run("ConditionalReadSendsOneGet", func(t *testing.T) { testConditionalRead(t, h) })
}

// checkWire compares the store's counters with the requests counted on the
// wire, where the backend counts them.
func checkWire(t *testing.T, s *store.Store) {
	t.Helper()
	wire, ok := s.WireCounts()
	if !ok {
		return
	}
	if got := s.Counts(); got != wire {
		t.Errorf("store counters %v differ from requests on the wire %v", got, wire)
	}
}
