/*
 * late.pml: a request that takes or renews a hold, delayed past the
 * hold's release on its node. Checked with Spin (model/check.sh).
 *
 * One node (each node is alone in this: a hold is re-created on one node
 * or not), one client holding one hold there. The client sends a request
 * for the hold (an acquire or a renewal: either re-creates the hold where
 * it is missing, renew.lua, acquire.lua) at any tick; it never hears the
 * answer, so the fate is unknown, and it releases the hold at any later
 * tick (release.lua): the hold is removed and, the fate being unknown,
 * recorded as released (a tombstone) until TOMB ticks after the release.
 * The request runs at any later tick, or never. It carries a deadline on
 * the node's clock (node.deadlineArg): TTL after it was sent, as the
 * client's reading of the node's clock tells, which is off by up to ERR
 * ticks either way (half the round trip of that reading). It is refused
 * where the tombstone is live (clock < the tombstone's end) or past its
 * deadline (clock > deadline: too_late in call.lua); else it re-creates
 * the hold.
 *
 * Property (assert in Monitor): once the release ran, the hold is never
 * there again. It holds when TOMB > TTL + ERR: node.Tombstone is the TTL
 * plus the node timeout, which bounds any round trip, so half of one.
 *
 * Negative variants (-D), each must fail:
 *   NODEADLINE  requests carry no deadline (the code before it): a
 *               request that lands after the tombstone is gone re-creates
 *               the hold;
 *   SHORTTOMB   the tombstone lasts TTL only (the code before the node
 *               timeout was added to it): a deadline read ERR ticks late
 *               outlives it.
 */
#ifndef TTL
#define TTL 2
#endif
#ifndef ERR
#define ERR 1
#endif
#ifdef SHORTTOMB
#define TOMB TTL
#else
#define TOMB (TTL + ERR + 1)
#endif
#ifndef MAXCLOCK
#define MAXCLOCK 8
#endif

byte clock;
bool hold = true;   /* the hold is on the node */
bool released;      /* the release ran */
byte tomb;          /* the tombstone is live while clock < tomb */
bool sent;          /* the request was sent ... */
bool inflight;      /* ... and has not run yet */
byte deadline;      /* its deadline on the node's clock */

active proctype Monitor() {
	atomic { released && hold -> assert(!(released && hold)) }
}

active proctype Tick() {
	do
	:: clock < MAXCLOCK -> clock++
	:: else -> break
	od
}

/* the client: the request at any tick, its deadline read up to ERR ticks
 * off either way; then the release at any later tick */
active proctype Client() {
	byte e;
	atomic {
		select(e : 0 .. 2 * ERR);
		sent = true; inflight = true;
		deadline = clock + TTL + e - ERR
	}
	d_step { hold = false; released = true; tomb = clock + TOMB }
}

#ifdef NODEADLINE
#define TIMELY true
#else
#define TIMELY (clock <= deadline)
#endif

/* the request runs at any moment after it was sent, or never */
active proctype Network() {
	d_step {
		inflight ->
		inflight = false;
		if
		:: released && clock < tomb -> skip   /* refused: a tombstone */
		:: !(released && clock < tomb) && !TIMELY -> skip   /* refused: too late */
		:: !(released && clock < tomb) && TIMELY -> hold = true
		fi
	}
}
