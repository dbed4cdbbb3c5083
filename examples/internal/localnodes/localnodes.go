// Package localnodes starts local redis-server processes for the examples
// when no node URLs are given, so each example runs with one command.
package localnodes

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/quorumlock/redlock/internal/redisproc"
)

// Start starts n redis-server processes and returns their URLs and a
// function that stops them and removes their files.
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
		server, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(dir, fmt.Sprint(i))})
		if err != nil {
			stop()
			return nil, nil, err
		}
		servers = append(servers, server)
		urls = append(urls, server.URL())
	}
	return urls, stop, nil
}
