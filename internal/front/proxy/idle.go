package proxy

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// Bounds of the idle upstream connections of plain HTTP requests.
const (
	// idleTimeout closes an idle upstream connection unused this long.
	idleTimeout = 30 * time.Second
	// maxIdlePerDest bounds the idle connections to one destination.
	maxIdlePerDest = 4
	// maxIdle bounds the idle connections of a Server.
	maxIdle = 64
)

// An idleConn is an upstream connection a forwarded request left open for
// the next request to the same destination.
type idleConn struct {
	c     net.Conn
	close func() // closes c, and ends what dialRaw set up for it
	timer *time.Timer
}

// idlePool holds the idle upstream connections of plain HTTP requests, by
// destination: the host and port decided on, so that a connection made for
// one host never carries a request for another. It is consulted only
// after a request to the destination was decided and allowed.
type idlePool struct {
	mu    sync.Mutex
	conns map[string][]*idleConn
	n     int
}

func destKey(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// put keeps ic for the destination key, or closes it when the pool is full.
func (p *idlePool) put(key string, ic *idleConn) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns = map[string][]*idleConn{}
	}
	if p.n >= maxIdle || len(p.conns[key]) >= maxIdlePerDest {
		p.mu.Unlock()
		ic.close()
		return
	}
	p.conns[key] = append(p.conns[key], ic)
	p.n++
	ic.timer = time.AfterFunc(idleTimeout, func() {
		if p.remove(key, ic) {
			ic.close()
		}
	})
	p.mu.Unlock()
}

// remove takes ic out of the pool, and reports whether it was there.
func (p *idlePool) remove(key string, ic *idleConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.conns[key]
	for i, x := range list {
		if x == ic {
			p.conns[key] = append(list[:i:i], list[i+1:]...)
			if len(p.conns[key]) == 0 {
				delete(p.conns, key)
			}
			p.n--
			return true
		}
	}
	return false
}

// get takes the most recent idle connection to the destination key that
// is still open, closing those found closed, or returns nil.
func (p *idlePool) get(key string) *idleConn {
	for {
		p.mu.Lock()
		list := p.conns[key]
		if len(list) == 0 {
			p.mu.Unlock()
			return nil
		}
		ic := list[len(list)-1]
		p.conns[key] = list[:len(list)-1]
		if len(p.conns[key]) == 0 {
			delete(p.conns, key)
		}
		p.n--
		p.mu.Unlock()
		ic.timer.Stop()
		if ic.alive() {
			return ic
		}
		ic.close()
	}
}

// alive tells whether the origin has neither closed ic nor sent anything
// unasked: a read would block. A connection that read anything is not
// used again, so the byte read is not lost to anyone.
func (ic *idleConn) alive() bool {
	_ = ic.c.SetReadDeadline(time.Now().Add(-time.Second))
	var b [1]byte
	_, err := ic.c.Read(b[:])
	_ = ic.c.SetReadDeadline(time.Time{})
	return isTimeout(err)
}
