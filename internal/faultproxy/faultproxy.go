// Package faultproxy is an in-process TCP proxy that injects network faults
// between one client and one server, switchable while traffic flows: a
// partition (Cut, Heal), latency on the replies (SetLatency), replies lost
// while the requests still arrive (DropReplies), and connection resets
// (Reset). The chaos tests put one Proxy on every (client, node) pair, so
// each client can see its own network.
//
// Every connection the proxy accepts gets its own connection to the target
// and four goroutines (a reader and a writer per direction). Readers keep
// reading while a fault holds the bytes back, so a client that gives up
// and closes its connection is noticed at once; the writers decide what
// reaches the other side, and when. Close stops everything and waits for
// every goroutine.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

const (
	// chunkSize is the most one read forwards as one chunk.
	chunkSize = 32 << 10
	// queueChunks is how many chunks a direction holds while its writer
	// waits (partition, latency); then the reader stops reading, and the
	// sender's socket buffers fill, as over a real stalled link.
	queueChunks = 64
	// dialTimeout bounds the connection to the target.
	dialTimeout = 5 * time.Second
)

// Proxy forwards the connections it accepts on 127.0.0.1 to one target
// address. All methods are safe for concurrent use.
type Proxy struct {
	target   string
	listener net.Listener
	ctx      context.Context // done at Close: stops dials in progress
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop and every connection's goroutines

	mu      sync.Mutex
	closed  bool
	cut     bool
	drop    bool
	latency time.Duration
	changed chan struct{} // closed and replaced whenever cut changes
	links   map[*link]struct{}
}

// New listens on 127.0.0.1:0 and forwards to target ("host:port").
func New(target string) (*Proxy, error) {
	if target == "" {
		return nil, errors.New("faultproxy: empty target address")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:   target,
		listener: listener,
		ctx:      ctx,
		cancel:   cancel,
		changed:  make(chan struct{}),
		links:    make(map[*link]struct{}),
	}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// Addr is the address clients dial: "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Cut partitions the client from the server. Nothing crosses in either
// direction any more, on the connections open now and on new ones: the
// proxy still accepts new connections (as a black hole would: no refusal
// reaches the client), but what is sent on them stalls too. The client sees
// timeouts, never an error from the network. A client's close is held back
// as well: the server does not learn of it during the partition. A new
// connection whose target is down stalls too, and is refused (an RST) only
// once the partition heals.
func (p *Proxy) Cut() { p.setCut(true) }

// Heal ends a partition. What was held back is delivered in order, as TCP's
// retransmissions would after a partition heals: a command sent during the
// partition runs late, and a reply that was waiting reaches a client that
// may have given up on it. Clients that gave up closed their connections;
// those closes reach the server after the held bytes.
func (p *Proxy) Heal() { p.setCut(false) }

func (p *Proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == cut {
		return
	}
	p.cut = cut
	close(p.changed)
	p.changed = make(chan struct{})
}

// Cuts reports whether the proxy is partitioned.
func (p *Proxy) Cuts() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// SetLatency delays every chunk the server sends to the client by d, from
// the moment the proxy read it (d <= 0: no delay). Chunks keep their order.
// It applies to chunks read after the call; requests are not delayed.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// DropReplies, while on, forwards the client's bytes to the server and
// discards the server's bytes: the command runs, its answer never arrives.
// A connection that lost a reply stays mute for the rest of its life, even
// after DropReplies(false): a byte stream with a hole in it cannot resume,
// and a client reading the rest of a half-dropped reply would take it for
// the answer to its next command.
func (p *Proxy) DropReplies(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = on
}

// Reset closes every open connection abruptly: both the client and the
// server get a TCP RST (SO_LINGER 0). New connections are accepted as
// usual. It returns how many connections it reset.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
	return len(links)
}

// Conns is the number of connections open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops listening, closes every connection (gracefully: both sides
// see EOF) and waits until every goroutine of the proxy has returned.
// Closing a closed Proxy does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	p.cancel()
	err := p.listener.Close()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("faultproxy: close listener: %w", err)
	}
	return nil
}

// state is what a writer needs to decide about one chunk.
type state struct {
	cut     bool
	drop    bool
	latency time.Duration
	changed <-chan struct{}
}

func (p *Proxy) state() state {
	p.mu.Lock()
	defer p.mu.Unlock()
	return state{cut: p.cut, drop: p.drop, latency: p.latency, changed: p.changed}
}

func (p *Proxy) acceptLoop() {
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of descriptors, an aborted
			// handshake): wait a little rather than spin.
			if !p.sleep(10 * time.Millisecond) {
				return
			}
			continue
		}
		l := &link{proxy: p, client: conn, done: make(chan struct{})}
		if !p.register(l) {
			_ = conn.Close()
			return
		}
		p.wg.Go(l.serve)
	}
}

// register adds l to the open connections; false once the proxy is closed.
func (p *Proxy) register(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) unregister(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// sleep waits d, or until the proxy closes (then it reports false).
func (p *Proxy) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// link is one proxied connection: the client's and the one to the target.
type link struct {
	proxy  *Proxy
	client net.Conn
	done   chan struct{} // closed by close: every goroutine of the link returns

	mu     sync.Mutex
	server net.Conn // nil until dialed
	closed bool
}

// chunk is what a reader read: data, or the error that ended the stream.
type chunk struct {
	data    []byte
	err     error
	read    time.Time
	latency time.Duration // the proxy's latency when it was read
}

// serve dials the target and forwards both directions until either side
// closes or fails, or the proxy closes.
func (l *link) serve() {
	p := l.proxy
	defer p.unregister(l)
	dialer := net.Dialer{Timeout: dialTimeout}
	server, err := dialer.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// The target is down. During a partition the client cannot learn
		// that: it stalls until the partition heals.
		if l.waitOpen() {
			l.close(true) // as a refused connection would: an RST
		}
		l.close(false)
		return
	}
	if !l.setServer(server) {
		return
	}
	var pumps sync.WaitGroup
	toServer := make(chan chunk, queueChunks)
	toClient := make(chan chunk, queueChunks)
	pumps.Go(func() { l.read(l.client, toServer, false) })
	pumps.Go(func() { l.read(server, toClient, true) })
	pumps.Go(func() { l.write(toClient, l.client, true) })
	l.write(toServer, server, false)
	pumps.Wait()
}

// setServer records the dialed connection; false (and the connection
// closed) when the link was closed during the dial.
func (l *link) setServer(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = server.Close()
		return false
	}
	l.server = server
	return true
}

// close closes both connections once; abort makes it an RST.
func (l *link) close(abort bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, conn := range []net.Conn{l.client, l.server} {
		if conn == nil {
			continue
		}
		if tcp, ok := conn.(*net.TCPConn); ok && abort {
			_ = tcp.SetLinger(0)
		}
		_ = conn.Close()
	}
	close(l.done)
}

// read moves what src sends into out, chunk by chunk, stamped with the
// time it was read; the error that ends src is the last chunk.
func (l *link) read(src net.Conn, out chan<- chunk, reply bool) {
	for {
		buf := make([]byte, chunkSize)
		n, err := src.Read(buf)
		if n > 0 {
			c := chunk{data: buf[:n], read: time.Now()}
			if reply {
				c.latency = l.proxy.state().latency
			}
			if !l.send(out, c) {
				return
			}
		}
		if err != nil {
			l.send(out, chunk{err: err, read: time.Now()})
			return
		}
	}
}

func (l *link) send(out chan<- chunk, c chunk) bool {
	select {
	case out <- c:
		return true
	case <-l.done:
		return false
	}
}

// write delivers the chunks of in to dst: each waits for its latency
// (replies only), then for the partition to heal; a reply is discarded
// while DropReplies is on (and from then on). The end of the stream
// closes the link: gracefully after EOF, with an RST after a reset.
func (l *link) write(in <-chan chunk, dst net.Conn, reply bool) {
	mute := false // a reply was dropped: this stream has a hole
	for {
		var c chunk
		select {
		case c = <-in:
		case <-l.done:
			return
		}
		if c.latency > 0 && !l.sleepUntil(c.read.Add(c.latency)) {
			return
		}
		if !l.waitOpen() {
			return
		}
		if c.err != nil {
			l.close(isReset(c.err))
			return
		}
		if reply && (mute || l.proxy.state().drop) {
			mute = true
			continue
		}
		if _, err := dst.Write(c.data); err != nil {
			l.close(isReset(err))
			return
		}
	}
}

// waitOpen waits while the proxy is cut; false when the link closed first.
func (l *link) waitOpen() bool {
	for {
		s := l.proxy.state()
		if !s.cut {
			select {
			case <-l.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-s.changed:
		case <-l.done:
			return false
		}
	}
}

// sleepUntil waits until t; false when the link closed first.
func (l *link) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

// isReset reports whether err ended a connection abortively, so that the
// proxy passes the reset on instead of a clean close.
func isReset(err error) bool {
	return !errors.Is(err, io.EOF) && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}
