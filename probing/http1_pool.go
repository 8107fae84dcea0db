package probing

import (
	"sync"
	"time"
)

// idlePool keeps the idle connections of an http1Transport, per host and
// port, last in first out: a burst of probes finds the connections the
// last one left, and the oldest expire. Its limits are http.Transport's
// (MaxIdleConns, MaxIdleConnsPerHost, IdleConnTimeout); a nil pool keeps
// nothing.
type idlePool struct {
	maxIdle, maxPerHost int
	timeout             time.Duration

	mu        sync.Mutex
	conns     map[string][]*http1Conn
	n         int
	lastSweep time.Time
}

func newIdlePool(maxIdle, maxPerHost int, timeout time.Duration) *idlePool {
	return &idlePool{maxIdle: maxIdle, maxPerHost: maxPerHost, timeout: timeout, conns: map[string][]*http1Conn{}}
}

// get takes the idle connection to addr that went back last and can still
// be used (see http1Conn.idleUsable), closing those that cannot; nil when
// there is none. reused is set when it returns one.
func (p *idlePool) get(addr string) (c *http1Conn, reused bool) {
	if p == nil {
		return nil, false
	}
	now := time.Now()
	for {
		p.mu.Lock()
		list := p.conns[addr]
		if len(list) == 0 {
			p.mu.Unlock()
			return nil, false
		}
		c = list[len(list)-1]
		list[len(list)-1] = nil
		if len(list) == 1 {
			delete(p.conns, addr)
		} else {
			p.conns[addr] = list[:len(list)-1]
		}
		p.n--
		p.mu.Unlock()
		if now.Sub(c.idleSince) < p.timeout && c.idleUsable() {
			return c, true
		}
		c.close()
	}
}

// put keeps c, idle, for addr, and reports whether it did: not when the
// pool holds its limit, for addr or in all.
func (p *idlePool) put(addr string, c *http1Conn) bool {
	if p == nil {
		return false
	}
	now := time.Now()
	p.mu.Lock()
	expired := p.sweepLocked(now)
	kept := p.n < p.maxIdle && len(p.conns[addr]) < p.maxPerHost
	if kept {
		c.idleSince = now
		p.conns[addr] = append(p.conns[addr], c)
		p.n++
	}
	p.mu.Unlock()
	for _, old := range expired {
		old.close()
	}
	return kept
}

// sweepLocked takes out the connections idle for longer than the timeout,
// at most twice per timeout, and returns them (to be closed).
func (p *idlePool) sweepLocked(now time.Time) []*http1Conn {
	if now.Sub(p.lastSweep) < p.timeout/2 {
		return nil
	}
	p.lastSweep = now
	var expired []*http1Conn
	for addr, list := range p.conns {
		fresh := list[:0]
		for _, c := range list {
			if now.Sub(c.idleSince) < p.timeout {
				fresh = append(fresh, c)
			} else {
				expired = append(expired, c)
			}
		}
		clear(list[len(fresh):])
		if len(fresh) == 0 {
			delete(p.conns, addr)
		} else {
			p.conns[addr] = fresh
		}
	}
	p.n -= len(expired)
	return expired
}

// closeAll closes every idle connection.
func (p *idlePool) closeAll() {
	if p == nil {
		return
	}
	p.mu.Lock()
	conns := p.conns
	p.conns, p.n = map[string][]*http1Conn{}, 0
	p.mu.Unlock()
	for _, list := range conns {
		for _, c := range list {
			c.close()
		}
	}
}
