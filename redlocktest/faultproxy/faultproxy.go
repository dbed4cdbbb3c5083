// Package faultproxy is an in-process TCP proxy that injects network faults
// between one client and one server, switchable while traffic flows: a
// partition (Cut, Heal), latency on the replies (SetLatency), replies lost
// while the requests still arrive (DropReplies), and connection resets
// (Reset). The chaos tests put one Proxy on every (client, node) pair, so
// each client can see its own network.
//
// Some faults act on one direction only, the other flowing as usual:
// HoldRequests holds back what the client sends (the server hears nothing
// new, and still answers what it got before), HoldReplies holds back what
// the server sends (the commands run, their answers wait), and
// SetRequestLatency delays what the client sends (a command runs late; its
// reply comes back at once, unlike SetLatency's, which delays the reply of
// a command that ran on time). Held bytes are not lost: when the hold is
// lifted they go through in the order they were sent, as a delayed message
// arrives late, after the client may have given up on it. A Cut holds
// both directions, under a flag of its own (Heal lifts no hold, and lifting
// a hold ends no Cut). Each fault is switchable while traffic flows, and
// they combine: a chunk waits for its latency, then until neither a Cut
// nor a hold on its direction is on.
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
	// waits (partition, hold, latency); then the reader stops reading,
	// and the sender's socket buffers fill, as over a real stalled link.
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

	mu             sync.Mutex
	closed         bool
	cut            bool
	holdRequests   bool
	holdReplies    bool
	drop           bool
	latency        time.Duration // on replies
	requestLatency time.Duration
	changed        chan struct{} // closed and replaced whenever cut or a hold changes
	links          map[*link]struct{}
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
func (p *Proxy) Cut() { p.set(&p.cut, true) }

// Heal ends a partition. What was held back is delivered in order, as TCP's
// retransmissions would after a partition heals: a command sent during the
// partition runs late, and a reply that was waiting reaches a client that
// may have given up on it. Clients that gave up closed their connections;
// those closes reach the server after the held bytes.
func (p *Proxy) Heal() { p.set(&p.cut, false) }

// HoldRequests, while on, holds back every byte the client sends, on the
// connections open now and on new ones, while the server's bytes still
// reach the client: the server runs nothing new, and the replies to what
// it got before still arrive. The client sees timeouts. A client that
// gives up and closes its connection is held back too: the close reaches
// the server after the held bytes. HoldRequests(false) lifts the hold:
// the held bytes go through in order, and the commands in them run then,
// late. It does not end a Cut. A held connection is lost with its held
// bytes if the server closes it or a Reset hits it.
func (p *Proxy) HoldRequests(on bool) { p.set(&p.holdRequests, on) }

// HoldReplies, while on, holds back every byte the server sends, on the
// connections open now and on new ones, while the client's bytes still
// reach the server: commands run, and later commands run too, but no
// answer arrives. HoldReplies(false) lifts the hold: the held replies go
// through in order, to a client that may have given up on them. A client
// that closes its connection meanwhile is gone: the server learns of the
// close at once, and the replies held for that connection are discarded.
// It does not end a Cut.
func (p *Proxy) HoldReplies(on bool) { p.set(&p.holdReplies, on) }

// set switches one of the flags writers wait on, and wakes them.
func (p *Proxy) set(flag *bool, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *flag == on {
		return
	}
	*flag = on
	close(p.changed)
	p.changed = make(chan struct{})
}

// Cuts reports whether the proxy is partitioned.
func (p *Proxy) Cuts() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// HoldsRequests reports whether HoldRequests is on.
func (p *Proxy) HoldsRequests() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdRequests
}

// HoldsReplies reports whether HoldReplies is on.
func (p *Proxy) HoldsReplies() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdReplies
}

// SetLatency delays every chunk the server sends to the client by d, from
// the moment the proxy read it (d <= 0: no delay). Chunks keep their order.
// It applies to chunks read after the call; requests are not delayed.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = max(d, 0)
}

// SetRequestLatency delays every chunk the client sends to the server by
// d, from the moment the proxy read it (d <= 0: no delay): a one-way delay,
// where a command runs d late and its reply comes straight back. Chunks
// keep their order (a chunk read after the latency was lowered still waits
// for the ones before it). It applies to chunks read after the call;
// replies are not delayed (SetLatency is for them).
func (p *Proxy) SetRequestLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requestLatency = max(d, 0)
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
	cut            bool
	holdRequests   bool
	holdReplies    bool
	drop           bool
	latency        time.Duration
	requestLatency time.Duration
	changed        <-chan struct{}
}

func (p *Proxy) state() state {
	p.mu.Lock()
	defer p.mu.Unlock()
	return state{cut: p.cut, holdRequests: p.holdRequests, holdReplies: p.holdReplies, drop: p.drop,
		latency: p.latency, requestLatency: p.requestLatency, changed: p.changed}
}

// held reports whether bytes going one way must wait: to the client (reply)
// or to the server.
func (s state) held(reply bool) bool {
	if reply {
		return s.cut || s.holdReplies
	}
	return s.cut || s.holdRequests
}

// heldEither reports whether anything holds either direction.
func (s state) heldEither() bool { return s.held(false) || s.held(true) }

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
	latency time.Duration // the proxy's latency for its direction when it was read
}

// serve dials the target and forwards both directions until either side
// closes or fails, or the proxy closes.
func (l *link) serve() {
	p := l.proxy
	defer p.unregister(l)
	dialer := net.Dialer{Timeout: dialTimeout}
	server, err := dialer.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// The target is down. During a partition, or while either
		// direction is held, the client cannot learn that: it stalls
		// until both directions flow again.
		if l.waitOpen(state.heldEither) {
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
			if s := l.proxy.state(); reply {
				c.latency = s.latency
			} else {
				c.latency = s.requestLatency
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

// write delivers the chunks of in to dst: each waits for its latency,
// then for the partition to heal and its direction's hold to be lifted; a
// reply is discarded while DropReplies is on (and from then on). The end
// of the stream closes the link: gracefully after EOF, with an RST after a
// reset.
func (l *link) write(in <-chan chunk, dst net.Conn, reply bool) {
	held := func(s state) bool { return s.held(reply) }
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
		if !l.waitOpen(held) {
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

// waitOpen waits while held says so of the proxy's state; false when the
// link closed first.
func (l *link) waitOpen(held func(state) bool) bool {
	for {
		s := l.proxy.state()
		if !held(s) {
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
