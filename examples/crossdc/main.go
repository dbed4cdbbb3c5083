// Command crossdc guards a critical section that spans two datacenters:
// each has its own independent Redis nodes, and the section may run only
// while a majority of the nodes of BOTH datacenters granted the lock
// (redlock.Multi over one Mutex per datacenter). A datacenter that loses
// its majority loses the lease, and the work must stop.
//
//	go run ./crossdc                       # starts 3+3 local nodes, declared new
//	go run ./crossdc -east redis://a1:6379,redis://a2:6379,redis://a3:6379 \
//	                 -west redis://b1:6379,redis://b2:6379,redis://b3:6379
//
// Nodes of your own that were started less than the restart guard (here
// the TTL, 10 s) ago vote once it has passed, or at once after
// `redlock init URL...` if they are brand new.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
)

func main() {
	east := flag.String("east", "", "comma-separated node URLs of the first datacenter (default: 3 local nodes)")
	west := flag.String("west", "", "comma-separated node URLs of the second datacenter (default: 3 local nodes)")
	flag.Parse()
	if err := run(*east, *west); err != nil {
		fmt.Fprintln(os.Stderr, "crossdc:", err)
		os.Exit(1)
	}
}

func nodes(list string) ([]string, func(), error) {
	if list != "" {
		return strings.Split(list, ","), func() {}, nil
	}
	return localnodes.Start(3)
}

func run(eastList, westList string) error {
	eastURLs, stopEast, err := nodes(eastList)
	if err != nil {
		return err
	}
	defer stopEast()
	westURLs, stopWest, err := nodes(westList)
	if err != nil {
		return err
	}
	defer stopWest()

	// Cross-datacenter round trips are slow: give each node call room, and
	// the lease a TTL far above it.
	opts := []redlock.Option{redlock.WithNodeTimeout(300 * time.Millisecond), redlock.WithTTL(10 * time.Second)}
	east, err := redlock.Dial(eastURLs, opts...)
	if err != nil {
		return err
	}
	defer east.Close()
	west, err := redlock.Dial(westURLs, opts...)
	if err != nil {
		return err
	}
	defer west.Close()

	both := redlock.Multi(east.Mutex("account-7"), west.Mutex("account-7"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := both.Lock(ctx)
	if err != nil {
		return fmt.Errorf("lock in both datacenters: %w", err)
	}
	defer lease.Unlock(context.Background())
	fmt.Printf("held in both datacenters until %s\n", lease.Until().Format(time.RFC3339Nano))
	return transfer(lease.Context())
}

// transfer is the critical section: it stops as soon as the lease is lost
// in either datacenter.
func transfer(ctx context.Context) error {
	for step := 1; step <= 3; step++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("lease lost at step %d: %w", step, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
			fmt.Println("step", step, "done")
		}
	}
	return nil
}
