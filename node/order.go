package node

import "sync"

// Order makes a call made later run after calls made earlier, on every
// node: calls to one node run in the order they take their places in its
// queue, so once every earlier call has its place, a later call to any of
// those nodes runs after it there. A lease's release waits on the Order
// of its acquire round, so that no release overtakes an acquire of the
// same hold (which would leave the grant behind).
type Order struct{ pending sync.WaitGroup }

// Expect announces n calls that will be made with this Order.
func (o *Order) Expect(n int) { o.pending.Add(n) }

// Wait returns once every announced call has its place in its node's
// queue (microseconds: their answers are not waited for).
func (o *Order) Wait() { o.pending.Wait() }

// placed is called once a call has its place in its node's queue.
func (o *Order) placed() {
	if o != nil {
		o.pending.Done()
	}
}
