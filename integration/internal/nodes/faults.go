package nodes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	dockernet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Kind is a fault a node can be under until healed.
type Kind string

// The faults. Kill and Restart leave the node down until Heal starts it
// again, empty (the image keeps no data): the caller picks the downtime,
// and docs/safety.md's first assumption asks for longer than the TTL.
const (
	Kill       Kind = "kill"       // SIGKILL; Heal starts it
	Restart    Kind = "restart"    // graceful stop (SIGTERM); Heal starts it
	Pause      Kind = "pause"      // frozen: calls time out; Heal unpauses
	Disconnect Kind = "disconnect" // off its network: connections refused or hang; Heal reconnects
)

// Kinds lists every fault.
var Kinds = []Kind{Kill, Restart, Pause, Disconnect}

// ErrFaulty is returned by Inject on a node that is already under a fault.
var ErrFaulty = errors.New("node already faulty")

// Inject puts node i under fault kind.
func (c *Cluster) Inject(ctx context.Context, i int, kind Kind) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fault != "" {
		return fmt.Errorf("node %d: %w (%s)", i, ErrFaulty, n.fault)
	}
	id := n.ctr.GetContainerID()
	var err error
	switch kind {
	case Kill:
		_, err = c.docker.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	case Restart:
		timeout := 5
		_, err = c.docker.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
	case Pause:
		_, err = c.docker.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	case Disconnect:
		_, err = c.docker.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: id, Force: true})
	default:
		return fmt.Errorf("node %d: unknown fault %q", i, kind)
	}
	if err != nil {
		return fmt.Errorf("node %d: %s: %w", i, kind, err)
	}
	n.fault = kind
	return nil
}

// Heal ends node i's fault, if any, and waits until it answers again.
func (c *Cluster) Heal(ctx context.Context, i int) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.ctr.GetContainerID()
	var err error
	switch n.fault {
	case "":
		return nil
	case Kill, Restart:
		_, err = c.docker.ContainerStart(ctx, id, client.ContainerStartOptions{})
	case Pause:
		_, err = c.docker.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	case Disconnect:
		_, err = c.docker.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{Container: id,
			EndpointConfig: &dockernet.EndpointSettings{Aliases: []string{n.alias()}}})
	}
	if err != nil {
		return fmt.Errorf("node %d: heal %s: %w", i, n.fault, err)
	}
	n.fault = ""
	return c.waitReady(ctx, n)
}

// HealAll heals every node, all at once.
func (c *Cluster) HealAll(ctx context.Context) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { errs[i] = c.Heal(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Fault is node i's current fault, "" when healthy.
func (c *Cluster) Fault(i int) Kind {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fault
}

// RestartEmpty kills nodes and starts them again at once, all together:
// they come back empty with no downtime to speak of. On a majority while
// leases are held this breaks the lock on purpose (the negative control).
func (c *Cluster) RestartEmpty(ctx context.Context, nodes ...int) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for j, i := range nodes {
		wg.Go(func() {
			if errs[j] = c.Inject(ctx, i, Kill); errs[j] == nil {
				errs[j] = c.Heal(ctx, i)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
