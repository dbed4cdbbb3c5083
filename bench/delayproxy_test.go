package bench

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// delayProxy forwards TCP connections from a loopback port to one target
// with a one-way delay on each direction, as a link would: every chunk read
// is stamped with the time it is due on the other side and written then, in
// order, while the reader goes on reading. Chunks in flight overlap, so the
// delay does not cap throughput (unlike a sleep per request). The root
// module's redlocktest/faultproxy does more, but bench/ cannot import it.
//
// The TCP handshake itself is not delayed: a client's connect completes on
// loopback, only its bytes cross the delay.
type delayProxy struct {
	target   string
	listener net.Listener
	toServer atomic.Int64 // one-way delay client -> server, ns
	toClient atomic.Int64 // one-way delay server -> client, ns
	wg       sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// proxyQueue is how many chunks a direction holds in flight; then its
// reader waits, and the sender's socket buffers fill.
const proxyQueue = 1024

func newDelayProxy(target string, rtt time.Duration) (*delayProxy, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("delay proxy: listen: %w", err)
	}
	p := &delayProxy{target: target, listener: listener, conns: map[net.Conn]struct{}{}}
	p.setRTT(rtt)
	p.wg.Go(p.serve)
	return p, nil
}

// setRTT splits rtt, rounded to whole milliseconds, over the two
// directions, each a whole number of milliseconds (the reply gets the odd
// one). Whole milliseconds because Go's timers wake through epoll_wait,
// whose timeout is in milliseconds: a sleep of 0.5 ms or 4.5 ms runs to
// the next whole millisecond. Even a whole one wakes some 0.6 ms late on
// the machine this was written on; calibrate measures and trims that. It
// applies to chunks read from then on.
func (p *delayProxy) setRTT(rtt time.Duration) {
	rtt = max(rtt.Round(time.Millisecond), 0)
	toServer := (rtt / 2).Truncate(time.Millisecond)
	p.toServer.Store(int64(toServer))
	p.toClient.Store(int64(rtt - toServer))
}

func (p *delayProxy) addr() string { return p.listener.Addr().String() }

func (p *delayProxy) serve() {
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(conn) {
			_ = conn.Close()
			return
		}
		p.wg.Go(func() { p.handle(conn) })
	}
}

// track registers conn so that close can cut it; false once closed.
func (p *delayProxy) track(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[conn] = struct{}{}
	return true
}

func (p *delayProxy) untrack(conn net.Conn) {
	p.mu.Lock()
	delete(p.conns, conn)
	p.mu.Unlock()
	_ = conn.Close()
}

// handle links one client connection to a new connection to the target
// until either side closes.
func (p *delayProxy) handle(client net.Conn) {
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		_ = server.Close()
		return
	}
	defer p.untrack(server)
	var once sync.Once
	done := make(chan struct{})
	end := func() { once.Do(func() { close(done) }) }
	go func() { p.pipe(server, client, &p.toServer); end() }()
	go func() { p.pipe(client, server, &p.toClient); end() }()
	<-done // the deferred untracks close both, which ends the other pipe
}

type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delayed by *delay from its reading.
func (p *delayProxy) pipe(dst, src net.Conn, delay *atomic.Int64) {
	chunks := make(chan chunk, proxyQueue)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				due := time.Now().Add(time.Duration(delay.Load()))
				chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: due}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			_ = src.Close() // ends the reader
			for range chunks {
			}
			return
		}
	}
}

// close stops accepting, cuts every connection and waits for the handlers.
func (p *delayProxy) close() error {
	p.mu.Lock()
	p.closed = true
	for conn := range p.conns {
		_ = conn.Close()
	}
	p.mu.Unlock()
	err := p.listener.Close()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
