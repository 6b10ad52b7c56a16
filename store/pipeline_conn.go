package store

// A pipeline's connections (pipeline.go): taken from its pool (peeked
// first), dialed (TLS with the transport's configuration), given back and
// closed when idle too long.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// take is an idle connection (peeked: one on which anything arrived while
// idle is closed) or, with fresh or none idle, a new one.
func (p *pipeline) take(ctx context.Context, fresh bool) (*pipeConn, error) {
	for !fresh {
		pc := p.pooled()
		if pc == nil {
			break
		}
		if idleAlive(pc.nc) { // pipeline_peek_unix.go
			return pc, nil
		}
		pc.nc.Close()
		p.stale.Add(1)
	}
	return p.connect(ctx)
}

// pooled is an idle connection, nil if none; one idle too long is closed.
func (p *pipeline) pooled() *pipeConn {
	var old []*pipeConn
	defer func() {
		for _, c := range old {
			c.nc.Close()
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.pool) > 0 {
		c := p.pool[len(p.pool)-1]
		p.pool[len(p.pool)-1] = nil
		p.pool = p.pool[:len(p.pool)-1]
		if time.Since(c.idleAt) > pipeIdleTimeout {
			old = append(old, c)
			continue
		}
		c.reused = true
		return c
	}
	return nil
}

// put gives pc back to the pool, or closes it when the pool is full.
func (p *pipeline) put(pc *pipeConn) {
	p.mu.Lock()
	if len(p.pool) >= p.idle {
		p.mu.Unlock()
		pc.nc.Close()
		return
	}
	pc.idleAt = time.Now()
	p.pool = append(p.pool, pc)
	if p.sweep == nil {
		p.sweep = time.AfterFunc(pipeIdleTimeout, p.sweepIdle)
	}
	p.mu.Unlock()
}

// sweepIdle closes the connections idle longer than pipeIdleTimeout, and
// comes back while any is left.
func (p *pipeline) sweepIdle() {
	var old []*pipeConn
	p.mu.Lock()
	now := time.Now()
	i := 0
	for i < len(p.pool) && now.Sub(p.pool[i].idleAt) > pipeIdleTimeout {
		old = append(old, p.pool[i])
		i++
	}
	n := copy(p.pool, p.pool[i:])
	clear(p.pool[n:])
	p.pool = p.pool[:n]
	p.sweep = nil
	if len(p.pool) > 0 {
		p.sweep = time.AfterFunc(pipeIdleTimeout, p.sweepIdle)
	}
	p.mu.Unlock()
	for _, c := range old {
		c.nc.Close()
	}
}

// close closes the idle connections.
func (p *pipeline) close() {
	p.mu.Lock()
	pool := p.pool
	p.pool = nil
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	p.mu.Unlock()
	for _, c := range pool {
		c.nc.Close()
	}
}

// connect dials a fresh connection (TLS for https, the server named as the
// origin's host).
func (p *pipeline) connect(ctx context.Context) (*pipeConn, error) {
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.scheme == "https" {
		cfg := &tls.Config{}
		if p.tr.TLSClientConfig != nil {
			cfg = p.tr.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			h, _, err := net.SplitHostPort(p.addr)
			if err != nil {
				h = p.host
			}
			cfg.ServerName = h
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, cfg)
		hctx := ctx
		if d := p.tr.TLSHandshakeTimeout; d > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	// A batch of 16 signed GETs is about 11 KiB (one write); 16 KiB of
	// answers a read (design.md §6 counts them).
	return &pipeConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 16<<10)}, nil
}
