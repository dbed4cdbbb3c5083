package pubsub

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// receiveTimeout is how long the reader waits for a message before it
	// pings the node: a silent half-open connection is found within two.
	receiveTimeout = 5 * time.Second
	// reconcileEvery is how often the writer re-checks its subscriptions
	// even when nothing kicked it (retries after errors, lingering channels).
	reconcileEvery = time.Second
	retryMin       = 50 * time.Millisecond
	retryMax       = time.Second
)

// subscriber owns one node's Pub/Sub connection and two goroutines: the
// writer makes the node's subscriptions match the hub's channels, the
// reader delivers what the node sends. close stops and waits for both.
type subscriber struct {
	hub    *Hub
	index  int
	client redis.UniversalClient

	kicks   chan struct{} // capacity 1: the hub's channels changed
	stop    chan struct{}
	workers sync.WaitGroup

	mu         sync.Mutex
	ps         *redis.PubSub
	subscribed map[string]bool // channels SUBSCRIBEd on ps
	started    bool
	closed     bool
}

func newSubscriber(hub *Hub, index int, client redis.UniversalClient) *subscriber {
	return &subscriber{
		hub:        hub,
		index:      index,
		client:     client,
		kicks:      make(chan struct{}, 1),
		stop:       make(chan struct{}),
		subscribed: make(map[string]bool),
	}
}

// kick asks the writer to reconcile now, starting the goroutines the first
// time.
func (s *subscriber) kick() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if !s.started {
		s.started = true
		s.ps = s.client.Subscribe(context.Background())
		s.workers.Go(s.write)
	}
	s.mu.Unlock()
	select {
	case s.kicks <- struct{}{}:
	default:
	}
}

func (s *subscriber) write() {
	ticker := time.NewTicker(reconcileEvery)
	defer ticker.Stop()
	readerStarted := false
	for {
		select {
		case <-s.stop:
			return
		case <-s.kicks:
		case <-ticker.C:
		}
		if s.reconcile() && !readerStarted {
			readerStarted = true
			s.workers.Go(s.read)
		}
	}
}

// reconcile subscribes the channels the hub wants and unsubscribes the
// others. It reports whether the connection holds any subscription.
func (s *subscriber) reconcile() bool {
	wanted := s.hub.wanted(time.Now())
	s.mu.Lock()
	ps := s.ps
	var add, drop []string
	for name := range wanted {
		if !s.subscribed[name] {
			add = append(add, name)
		}
	}
	for name := range s.subscribed {
		if !wanted[name] {
			drop = append(drop, name)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.hub.timeout)
	defer cancel()
	if len(add) > 0 {
		if err := ps.Subscribe(ctx, add...); err != nil {
			s.hub.setDown(s.index, true) // go-redis keeps the names and re-sends them on reconnect
		} else {
			s.mark(add, true)
		}
	}
	if len(drop) > 0 && ps.Unsubscribe(ctx, drop...) == nil {
		s.mark(drop, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subscribed) > 0
}

func (s *subscriber) mark(names []string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		if on {
			s.subscribed[name] = true
		} else {
			delete(s.subscribed, name)
		}
	}
}

func (s *subscriber) read() {
	broken := false
	silent := 0 // receive timeouts in a row
	retry := retryMin
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		message, err := s.ps.ReceiveTimeout(context.Background(), receiveTimeout)
		if err != nil {
			if isTimeout(err) && silent == 0 {
				silent++
				_ = s.ps.Ping(context.Background()) // the Pong proves the link alive
				continue
			}
			// Lost (or silent twice): go-redis re-dials and re-subscribes
			// on the next receive; notices sent meanwhile are lost.
			if !broken {
				broken = true
				s.hub.setDown(s.index, true)
			}
			silent = 0
			if isTimeout(err) {
				s.renew()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, retryMax)
			continue
		}
		silent, retry = 0, retryMin
		switch m := message.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.hub.confirm(s.index, m.Channel)
			}
		case *redis.Message:
			s.hub.deliver(s.index, m.Channel, m.Payload)
		}
		if broken {
			// Back with its subscriptions: wake every watcher, since the
			// notices sent while the connection was down never came.
			broken = false
			s.hub.setDown(s.index, false)
			s.hub.wakeAll()
		}
	}
}

// renew replaces a connection that stopped answering pings with a new one
// holding the same subscriptions.
func (s *subscriber) renew() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	names := make([]string, 0, len(s.subscribed))
	for name := range s.subscribed {
		names = append(names, name)
	}
	_ = s.ps.Close()
	s.ps = s.client.Subscribe(context.Background())
	if len(names) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.hub.timeout)
		defer cancel()
		if s.ps.Subscribe(ctx, names...) != nil {
			clear(s.subscribed) // the writer subscribes them again
		}
	}
}

func (s *subscriber) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ps := s.ps
	s.mu.Unlock()
	close(s.stop)
	if ps != nil {
		_ = ps.Close() // unblocks the reader
	}
	s.workers.Wait()
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
