package store

import (
	"fmt"
	"sync/atomic"
)

// Counts is a snapshot of the requests a store handle sent, by kind.
// One LIST is one ListPage call, which is one request on every backend.
type Counts struct {
	List   int64 `json:"list"`
	Get    int64 `json:"get"`
	Head   int64 `json:"head"`
	Put    int64 `json:"put"`
	Delete int64 `json:"delete"`
}

// String formats the counts exactly as `--stats` prints them:
// "requests: list=1 get=4 head=0 put=0 delete=0".
func (c Counts) String() string {
	return fmt.Sprintf("requests: list=%d get=%d head=%d put=%d delete=%d", c.List, c.Get, c.Head, c.Put, c.Delete)
}

// Sub returns c minus o: the requests sent between two snapshots.
func (c Counts) Sub(o Counts) Counts {
	return Counts{List: c.List - o.List, Get: c.Get - o.Get, Head: c.Head - o.Head, Put: c.Put - o.Put, Delete: c.Delete - o.Delete}
}

// Total is the number of requests of every kind.
func (c Counts) Total() int64 { return c.List + c.Get + c.Head + c.Put + c.Delete }

type counters struct {
	list, get, head, put, del atomic.Int64 // atomic
}

// add counts the requests in d.
func (c *counters) add(d Counts) {
	for _, k := range [...]struct {
		n *atomic.Int64
		d int64
	}{{&c.list, d.List}, {&c.get, d.Get}, {&c.head, d.Head}, {&c.put, d.Put}, {&c.del, d.Delete}} {
		if k.d != 0 {
			k.n.Add(k.d)
		}
	}
}

func (c *counters) snapshot() Counts {
	return Counts{List: c.list.Load(), Get: c.get.Load(), Head: c.head.Load(), Put: c.put.Load(), Delete: c.del.Load()}
}

// kindOf names the counter a request is counted in, for Options.Observe.
// nil is Delete's: it counts itself (see Store.Delete).
func (c *counters) kindOf(p *atomic.Int64) string {
	switch p {
	case &c.list:
		return "list"
	case &c.get:
		return "get"
	case &c.head:
		return "head"
	case &c.put:
		return "put"
	}
	return "delete"
}

// same is q's counter of the kind p is of c's (nil stays nil).
func (c *counters) same(p *atomic.Int64, q *counters) *atomic.Int64 {
	switch p {
	case nil:
		return nil
	case &c.list:
		return &q.list
	case &c.get:
		return &q.get
	case &c.head:
		return &q.head
	case &c.put:
		return &q.put
	}
	return &q.del
}
