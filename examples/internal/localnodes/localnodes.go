// Package localnodes starts local redis-server processes for the examples
// when no node URLs are given, so each example runs with one command.
package localnodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// Start starts n brand-new redis-server processes, declares them new as
// the README says to (`redlock init`, which runs node.Declare) so that
// they vote at once, and returns their URLs and a function that stops them
// and removes their files.
func Start(n int) ([]string, func(), error) {
	dir, err := os.MkdirTemp("", "redlock-example-")
	if err != nil {
		return nil, nil, err
	}
	var servers []*redisproc.Server
	stop := func() {
		for _, server := range servers {
			_ = server.Kill()
		}
		_ = os.RemoveAll(dir)
	}
	var urls []string
	for i := range n {
		server, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(dir, fmt.Sprint(i)), Undeclared: true})
		if err == nil {
			servers = append(servers, server)
			err = declare(server.Addr())
		}
		if err != nil {
			stop()
			return nil, nil, err
		}
		urls = append(urls, server.URL())
	}
	return urls, stop, nil
}

// declare is what `redlock init` does to one node.
func declare(addr string) error {
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := node.Declare(ctx, client, "redlock:"); err != nil {
		return fmt.Errorf("declare %s new: %w", addr, err)
	}
	return nil
}
