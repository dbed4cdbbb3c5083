/*
 * adopt.pml: direct adoption of a handed lock. A waiter told by a quorum
 * of nodes that the lock was handed to it takes the lease from those
 * notices, without a claim round. Checked with Spin (model/check.sh).
 *
 * Three nodes, quorum 2, three clients on one name:
 *   1, the holder: holds the lock on every node at the start (taken at
 *      tick 0) and releases it on every node, each at any moment. A
 *      release that frees a node where the waiter is queued hands the key
 *      to it (queue.lua, hand): the waiter is dequeued, owner = 2, the key
 *      handed naming the hold that last queued the waiter there
 *      (wakeHold), its expiry now + min(deadline - now, TTL), and a
 *      notice naming that hold is published to the waiter;
 *   2, the waiter: up to TRIES attempts; attempt a starts at start[a]
 *      (read before any of its requests are sent). Each of its requests
 *      runs acquire_queued.lua on its node at any moment before the
 *      attempt ends, or never; its reply may be lost. The node refuses
 *      where another client's key is live, and queues the waiter:
 *      wakeHold = a, deadline = now + LIFE (the waiter's queue lifetime);
 *      it grants by claiming a key handed to the waiter (the waiter's, a
 *      full TTL from now), by taking a free key, or by re-entering the
 *      waiter's own. Replies granting from a quorum while clock <
 *      start[a] + TTL - DRIFT: it holds. Otherwise the attempt failed and
 *      is undone: a release of hold a goes to every node that granted it
 *      and every node whose answer was not heard, and arrives at any
 *      later moment (during a later attempt, after an adoption), or
 *      never. After failed attempt a, and before any later attempt, the
 *      waiter adopts if notices naming a came from Q nodes each of which
 *      refused attempt a in a reply the waiter heard: it holds until
 *      start[a] + min(LIFE, TTL) - DRIFT, if that is still ahead. Or it
 *      starts its next attempt;
 *   3, a newcomer: one ordinary round at any time (a plain newcomer takes
 *      a free or expired node); its keys expire on their own.
 * A release of hold x by the waiter (release.lua) on a node where the key
 * is handed to it passes the key on only if the handing names x; where
 * the waiter's key has hold x it drops x, and the last hold dropped frees
 * the key and puts the waiter back in the queue (wakeHold = x, deadline =
 * now + LIFE; the waiter is the only one queued, so the key stays free).
 * Under LEAVES: after the release of hold x on a node whose answer to x
 * was not heard, a leave of hold x follows (leave.lua with "hold", sent once the
 * release was answered: Target.leaveAfterRelease), arriving at any later
 * moment, or never: it takes the waiter off the node's queue, and passes
 * on a key handed to it only if the handing names x. (The code sends it
 * after the release of a lease given back, or ended, on such a node; the
 * model after the release of every failed attempt there.)
 * A node runs each script atomically; keys expire on one clock that ticks
 * freely. TTL 2, DRIFT 0 (one clock: a lease may end exactly when the
 * earliest key under it expires), the clock up to 3, two attempts.
 *
 * Property (assert in Monitor): no two leases valid at the same tick.
 * Why adoption is safe: a node counted refused attempt a, so it queued
 * the waiter at or after start[a] with a deadline at least start[a] +
 * LIFE, and handed it the key after that, until at least start[a] +
 * min(LIFE, TTL); no undo of attempt a goes to it (its answer was heard
 * and was no grant), an undo of any other attempt leaves a key whose
 * handing names a, and no later attempt ran.
 *
 * Abstractions (each keeps every behaviour that matters to the property):
 *   - the notices: a notice published may arrive at any moment, and the
 *     waiter acts on notices only when it adopts, so it may adopt at any
 *     moment after a quorum of them was published (FROMNOTICE: as the
 *     last of them arrives);
 *   - the holder releases node 0, then 1, then 2: the nodes are alike to
 *     every client (the waiter's requests, the newcomer's, the undos go
 *     to them in any order), so one order stands for all six;
 *   - the newcomer's round is one step: its requests land at its start
 *     (one of them may be lost), and only a round that reaches a quorum
 *     is taken. A failed round only takes keys, which refuse: to the
 *     waiter a refusal or a lost request, to the holder a node no longer
 *     its own; a round spread over ticks is valid for less;
 *   - expired keys and queue entries past their deadline are cleared at
 *     the tick, as Redis and evict (queue.lua) do before any script
 *     reads them.
 *
 * Configurations (-D):
 *   LIFE=n    the waiter's queue lifetime (default 2 = TTL; 1 and 3 check
 *             a lifetime shorter and longer than TTL)
 *   LEAVES    the leaves after releases (see above); checked apart, with
 *             MAXCLOCK=2, as they multiply the states by six or more
 *   LATE      a request of an attempt that ended before it ran may still
 *             run later (its reply not heard), until the waiter's next
 *             request to that node runs (one node's calls run in the
 *             order sent: the one sender per node of node/batch.go), or
 *             the attempt's undo reaches the node (its tombstone refuses
 *             it then); must hold.
 * Negative variants (-D), each must fail:
 *   FROMNOTICE  validity counted from the arrival of the quorum's last
 *               notice (TTL - DRIFT from then), not from start[a]: a
 *               notice arrives late, the handed key lapses, and the
 *               newcomer takes the node;
 *   ANYATTEMPT  notices naming any attempt of the waiter count, not only
 *               its latest (valid from the start of the earliest one
 *               named): a later attempt claimed a key handed for an
 *               earlier one, failed, and its undo freed it;
 *   PASSANY     a release of any hold of the waiter passes on a key
 *               handed to it (the rule before adoption): a delayed undo
 *               of an earlier attempt frees a node the waiter adopted;
 *   LEAVECALL   (with LEAVES) the leave after the release of hold x passes on a key
 *               handed naming any attempt of the waiter's call (the rule
 *               of a leave when the call ends): a leave delayed after the
 *               release of attempt 1 frees a node the waiter adopted for
 *               attempt 2;
 *   ANYREFUSAL  a node whose answer to attempt a was not heard counts
 *               too: its refusal queued the waiter and the handing names
 *               a, so the undo of attempt a sent there (its fate unknown)
 *               passes the key on;
 *   NOSTALE     with LATE and OVERTAKE: any request of the waiter claims
 *               a key handed to it (the rule before adoption), so the
 *               late request of attempt 1 claims the key handed for
 *               attempt 2, and the undo of attempt 1 drops it.
 * Configuration FORCE: an operator's ForceUnlock (force.lua) reaches each
 * node at a moment of its own, in any order: a key handed to the waiter
 * (not claimed) goes to the forced owner 4 with its expiry kept, and to no
 * one else before it lapses (the waiter may still adopt from notices
 * already published, and nothing tells it the handing ended); any other
 * live key is removed and the node hands it on as a release would (FREE).
 * The property then leaves out a lease one of whose keys the force
 * removed: that holder may overlap a later lease until its first renewal
 * (docs/features.md, "ForceUnlock: what the old holder sees"); its own
 * Lock may even return after the force, its replies late. A lease taken
 * from the notices is always counted: the force must leave nothing that
 * such a lease can overlap. Negative variant FORCEFREES: a
 * handed key is removed and handed on like the others; the waiter adopts
 * from the notices of the handing the force ended, and the newcomer takes
 * the nodes the force freed.
 * Configuration OVERTAKE (with LATE): a late request may run after the
 * waiter's next request to that node (calls to one node need not run in
 * the order sent: a call cut at its deadline may still arrive after the
 * next one, sent on another connection); must hold, because a node
 * refuses a late request of an earlier attempt than the one its handing
 * names (handed_rule in guard.lua).
 */
#define N 3
#define Q 2
#define TTL 2
#define DRIFT 0
#ifndef LIFE
#define LIFE 2
#endif
#ifndef MAXCLOCK
#define MAXCLOCK 3
#endif
#ifndef TRIES
#define TRIES 2
#endif

#define MIN(x, y) ((x) < (y) -> (x) : (y))
#define MAX(x, y) ((x) > (y) -> (x) : (y))
#define BIT(x) (1 << (x))

byte clock;
byte owner[N];      /* 0 free, else the client whose key it is */
byte handed[N];     /* the key was handed to the waiter, not yet claimed,
                       naming this hold (0: not handed) */
byte holds[N];      /* the waiter's holds in its key (bit a: attempt a) */
byte expiry[N];
bool queued[N];     /* the waiter is in the node's queue */
byte wakeHold[N];   /* ... queued there last by this attempt */
byte deadline[N];   /* ... until this tick (its heartbeat deadline) */
byte notice[N];     /* the hold named by the node's handoff notice (0: none) */
byte undo[N];       /* the waiter's releases on their way (bit x: hold x) */
#ifdef LEAVES
byte leave[N];      /* the waiter's leaves, each sent once the release
                       of the same hold ran (bit x: hold x) */
#endif
#ifdef LATE
byte late[N];       /* the waiter's requests still on their way (bit a) */
#endif

bool holding[4];
byte until[4];

/* FORCE: the nodes the force reached; the clients one of whose keys it
 * removed; whether the waiter's lease was taken from the notices. A
 * client whose key the force removed counts only for a lease taken from
 * the notices (see the top) */
#ifdef FORCE
bool done[N];
bool hit[4];
bool adopted;
#define COUNTED(c) (!hit[c] || (c == 2 && adopted))
#else
#define COUNTED(c) true
#endif

#define VALID(c) (holding[c] && clock < until[c] && COUNTED(c))
active proctype Monitor() {
	atomic {
		(VALID(1) && VALID(2)) || (VALID(1) && VALID(3)) || (VALID(2) && VALID(3)) ->
		assert(!((VALID(1) && VALID(2)) || (VALID(1) && VALID(3)) || (VALID(2) && VALID(3))))
	}
}

/* a tick; what expired is cleared (a key past its expiry, a queue entry
 * past its deadline: Redis and evict in queue.lua drop them), which
 * changes no answer and keeps stale values out of the states */
#define CLEAN(i) \
	if :: expiry[i] <= clock -> owner[i] = 0; handed[i] = 0; holds[i] = 0; expiry[i] = 0 :: else -> skip fi; \
	if :: deadline[i] <= clock -> queued[i] = false; wakeHold[i] = 0; deadline[i] = 0 :: else -> skip fi
active proctype Tick() {
	do
	:: d_step { clock < MAXCLOCK -> clock++; CLEAN(0); CLEAN(1); CLEAN(2) }
	:: else -> break
	od
}

#define LIVE(i) (owner[i] != 0 && expiry[i] > clock)
#define DEQUEUE(i) queued[i] = false; wakeHold[i] = 0; deadline[i] = 0

/* hand (queue.lua): the freed node i goes to the waiter if it is queued
 * there (its deadline not passed: see CLEAN), else it is left free */
#define FREE(i) if \
	:: queued[i] -> owner[i] = 2; handed[i] = wakeHold[i]; holds[i] = 0; \
		expiry[i] = MIN(deadline[i], clock + TTL); notice[i] = wakeHold[i]; DEQUEUE(i) \
	:: else -> owner[i] = 0; handed[i] = 0 \
	fi

/* release.lua on node i for the holder: only its own live key; its lease
 * ends before its first release */
#define RELEASE(i) d_step { holding[1] = false; \
	if :: owner[i] == 1 && expiry[i] > clock -> FREE(i) :: else -> skip fi }

/* the holder: it took the lock on every node at tick 0 (init), holds it,
 * then releases it on every node, each at any moment, in one order that
 * stands for all six (the nodes are alike to every client) */
proctype Holder() {
	RELEASE(0);
	RELEASE(1);
	RELEASE(2)
}

#ifdef FORCE
#define ADOPTS adopted = true
#else
#define ADOPTS skip
#endif

/* force.lua on node i (FORCE): a key handed to the waiter stays, held by
 * the forced owner 4 until its expiry (FORCEFREES: removed and handed on
 * like any other); any other live key is removed and handed on (FREE) */
#ifdef FORCE
#ifdef FORCEFREES
#define KEEPS(i) false
#else
#define KEEPS(i) (owner[i] == 2 && handed[i] != 0)
#endif
#define FORCED(i) d_step { done[i] = true; \
	if \
	:: LIVE(i) && KEEPS(i) -> owner[i] = 4; handed[i] = 0; holds[i] = 0 \
	:: LIVE(i) && !KEEPS(i) && owner[i] != 4 -> hit[owner[i]] = true; FREE(i) \
	:: else -> skip \
	fi }
/* the operator: ForceUnlock reaches each node once, at a moment of its
 * own, in any order */
proctype Operator() {
	do
	:: !done[0] -> FORCED(0)
	:: !done[1] -> FORCED(1)
	:: !done[2] -> FORCED(2)
	:: done[0] && done[1] && done[2] -> break
	od
}
#endif

/* acquire.lua on node i for the newcomer: a free (or expired) node
 * grants; s: the node its request to which is lost (3: none) */
#define TAKES(i, s) (!LIVE(i) && s != i)
#define VOTE(i, s) if \
	:: TAKES(i, s) -> owner[i] = 3; handed[i] = 0; holds[i] = 0; expiry[i] = clock + TTL \
	:: else -> skip \
	fi
#define ROUND(s) :: d_step { \
	(TAKES(0, s) -> 1 : 0) + (TAKES(1, s) -> 1 : 0) + (TAKES(2, s) -> 1 : 0) >= Q -> \
	VOTE(0, s); VOTE(1, s); VOTE(2, s); \
	holding[3] = true; until[3] = clock + TTL - DRIFT }

/* the newcomer: one ordinary round at any time, its requests landing at
 * its start (one may be lost), taken only if it reaches a quorum (see the
 * top); its keys expire on their own (its release would only free nodes
 * sooner) */
proctype Newcomer() {
	if
	ROUND(3)
	ROUND(0)
	ROUND(1)
	ROUND(2)
	fi
}

/* acquire_queued.lua on node i for hold a of the waiter; sets res */
#define GRANT 1
#define REFUSE 2
#define UNKNOWN 3
/* handed_rule (guard.lua): a key handed naming attempt h is claimed by a
 * request of attempt h or of a later attempt of the same call; one of an
 * earlier attempt, arriving late, is refused and changes nothing (NOSTALE:
 * any request of the waiter claims it, the rule before adoption) */
#ifdef NOSTALE
#define CLAIMS(i, a) (handed[i] != 0)
#else
#define CLAIMS(i, a) (handed[i] != 0 && a >= handed[i])
#endif
#define RUN(i, a) \
	if \
	:: LIVE(i) && owner[i] != 2 -> queued[i] = true; wakeHold[i] = a; deadline[i] = clock + LIFE; res = REFUSE \
	:: LIVE(i) && owner[i] == 2 && CLAIMS(i, a) -> handed[i] = 0; holds[i] = BIT(a); expiry[i] = clock + TTL; res = GRANT \
	:: LIVE(i) && owner[i] == 2 && handed[i] != 0 && !CLAIMS(i, a) -> res = REFUSE \
	:: LIVE(i) && owner[i] == 2 && handed[i] == 0 -> holds[i] = holds[i] | BIT(a); \
		expiry[i] = MAX(expiry[i], clock + TTL); DEQUEUE(i); res = GRANT \
	:: !LIVE(i) -> owner[i] = 2; handed[i] = 0; holds[i] = BIT(a); expiry[i] = clock + TTL; DEQUEUE(i); res = GRANT \
	fi

/* release.lua on node i for hold x of the waiter (the undo of attempt x) */
#ifdef PASSANY
#define PASSES(i, x) true
#else
#define PASSES(i, x) (handed[i] == x)
#endif
#ifdef LATE
#define TOMBSTONE(i, x) late[i] = late[i] & ~BIT(x)
#else
#define TOMBSTONE(i, x) skip
#endif
#define UNDO(i, x) :: d_step { undo[i] & BIT(x) -> undo[i] = undo[i] & ~BIT(x); TOMBSTONE(i, x); \
	if \
	:: LIVE(i) && owner[i] == 2 && handed[i] != 0 -> \
		if :: PASSES(i, x) -> owner[i] = 0; handed[i] = 0 :: else -> skip fi \
	:: LIVE(i) && owner[i] == 2 && handed[i] == 0 && (holds[i] & BIT(x)) -> \
		holds[i] = holds[i] & ~BIT(x); \
		if :: holds[i] == 0 -> owner[i] = 0; queued[i] = true; wakeHold[i] = x; deadline[i] = clock + LIFE \
		:: else -> skip fi \
	:: else -> skip \
	fi }

/* leave.lua on node i after the release of hold x (see the top): the
 * waiter off the queue, and a key handed to it passed on only if the
 * handing names x (LEAVECALL: any, as a call's own leave does) */
#ifdef LEAVES
#ifdef LEAVECALL
#define LPASSES(i, x) true
#else
#define LPASSES(i, x) (handed[i] == x)
#endif
#define LEAVE(i, x) :: d_step { (leave[i] & BIT(x)) && !(undo[i] & BIT(x)) -> leave[i] = leave[i] & ~BIT(x); DEQUEUE(i); \
	if \
	:: LIVE(i) && owner[i] == 2 && handed[i] != 0 && LPASSES(i, x) -> owner[i] = 0; handed[i] = 0 \
	:: else -> skip \
	fi }
#define SENDLEAVE(i) if :: ans[i] == UNKNOWN -> leave[i] = leave[i] | BIT(a) :: else -> skip fi
#else
#define LEAVE(i, x)
#define SENDLEAVE(i) skip
#endif

/* a request of attempt x still on its way to node i runs (LATE); its
 * reply is not heard (the undo of x is on its way too). In order, unless
 * OVERTAKE: the waiter's earlier requests to the node that have not run
 * by then never will */
#ifdef OVERTAKE
#define UPTO(x) BIT(x)
#else
#define UPTO(x) (BIT((x) + 1) - 1)
#endif
#define LATERUN(i, x) :: d_step { late[i] & BIT(x) -> late[i] = late[i] & ~UPTO(x); RUN(i, x); res = 0 }

/* the network: undo releases, and the leaves after them, arrive at any
 * moment, or never; under LATE,
 * a request still on its way runs. (Notices are not delivered here: a
 * notice published may arrive at any moment, so the waiter, which acts on
 * notices only when it adopts, may find any that were published by then
 * arrived or not.) */
proctype Network() {
	byte res;
	do
	UNDO(0, 1)
	UNDO(1, 1)
	UNDO(2, 1)
	LEAVE(0, 1)
	LEAVE(1, 1)
	LEAVE(2, 1)
#if TRIES >= 2
	UNDO(0, 2)
	UNDO(1, 2)
	UNDO(2, 2)
	LEAVE(0, 2)
	LEAVE(1, 2)
	LEAVE(2, 2)
#endif
#if TRIES >= 3
	UNDO(0, 3)
	UNDO(1, 3)
	UNDO(2, 3)
	LEAVE(0, 3)
	LEAVE(1, 3)
	LEAVE(2, 3)
#endif
#ifdef LATE
	LATERUN(0, 1)
	LATERUN(1, 1)
	LATERUN(2, 1)
#if TRIES >= 2
	LATERUN(0, 2)
	LATERUN(1, 2)
	LATERUN(2, 2)
#endif
#if TRIES >= 3
	LATERUN(0, 3)
	LATERUN(1, 3)
	LATERUN(2, 3)
#endif
#endif
	od
}

/* one request of the current attempt a to node i, while it has no
 * quorum: it runs and its reply is heard, or it runs and its reply is
 * lost, or it never runs (under LATE: it is still on its way). Under
 * LATE, the waiter's earlier requests to the node that have not run when
 * this one runs never will (in order), unless OVERTAKE */
#if defined(LATE) && !defined(OVERTAKE)
#define INORDER(i) late[i] = 0
#else
#define INORDER(i) skip
#endif
#ifdef LATE
#define NEVER(i) late[i] = late[i] | BIT(a)
#else
#define NEVER(i) skip
#endif
#define ASKS(i) trying && votes < Q && ans[i] == 0
#define REQ(i) \
	:: d_step { ASKS(i) -> INORDER(i); RUN(i, a); ans[i] = res; \
		if :: res == GRANT -> votes++ :: else -> skip fi; res = 0 } \
	:: d_step { ASKS(i) -> INORDER(i); RUN(i, a); ans[i] = UNKNOWN; res = 0 } \
	:: d_step { ASKS(i) -> NEVER(i); ans[i] = UNKNOWN }

/* whether node i's notice counts for adopting attempt a: after the
 * attempt failed, ans[i] is 1 for the nodes whose answer lets their
 * notice count (a refusal heard), else 0 */
#ifdef ANYREFUSAL
#define COUNTS(i) (ans[i] != GRANT)
#else
#define COUNTS(i) (ans[i] == REFUSE)
#endif
#ifdef ANYATTEMPT
#define NAMED(i) (notice[i] != 0 && (refused[i] & BIT(notice[i])))
#else
#define NAMED(i) (notice[i] == a && ans[i])
#endif
#define COUNT(i) (NAMED(i) -> 1 : 0)
#ifdef ANYATTEMPT
/* the earliest attempt a counted notice names */
#define FIRST(i) (NAMED(i) -> notice[i] : TRIES)
#define ADOPTED (START(MIN(FIRST(0), MIN(FIRST(1), FIRST(2)))) + MIN(LIFE, TTL) - DRIFT)
#elif defined(FROMNOTICE)
/* the last counted notice arriving now */
#define ADOPTED (clock + TTL - DRIFT)
#else
#define ADOPTED (START(a) + MIN(LIFE, TTL) - DRIFT)
#endif

/* the undo of a failed attempt goes to every node that granted or did
 * not answer; then ans[i] keeps only whether node i's notice may count */
#ifdef ANYATTEMPT
#define REFUSED(i) if :: COUNTS(i) -> refused[i] = refused[i] | BIT(a) :: else -> skip fi
#else
#define REFUSED(i) skip
#endif
#define UNDONE(i) if :: ans[i] != REFUSE -> undo[i] = undo[i] | BIT(a) :: else -> skip fi; \
	SENDLEAVE(i); \
	REFUSED(i); ans[i] = (COUNTS(i) -> 1 : 0)
/* the waiter is done: its own state is of no more use */
#define DONE a = 0; votes = 0; ans[0] = 0; ans[1] = 0; ans[2] = 0; FORGET
/* the start of each attempt (ANYATTEMPT), else of the latest one only */
#ifdef ANYATTEMPT
#define START(a) start[a]
#if TRIES >= 3
#define FORGET start[1] = 0; start[2] = 0; start[3] = 0
#else
#define FORGET start[1] = 0; start[TRIES] = 0
#endif
#else
#define START(a) start
#define FORGET start = 0
#endif

proctype Waiter() {
	byte a, votes, res;
	bool trying;        /* attempt a is running */
	byte ans[N];        /* attempt a's answers as heard */
#ifdef ANYATTEMPT
	byte start[TRIES + 1];
	byte refused[N];    /* attempts whose notices may count (bits) */
#else
	byte start;
#endif
	do
	/* the next attempt (after a failed one: instead of adopting) */
	:: d_step { !trying && a < TRIES ->
		a++; START(a) = clock; votes = 0; ans[0] = 0; ans[1] = 0; ans[2] = 0; trying = true }
	REQ(0)
	REQ(1)
	REQ(2)
	/* a quorum in time: the lease */
	:: d_step { trying && votes >= Q && clock < START(a) + TTL - DRIFT ->
		holding[2] = true; until[2] = START(a) + TTL - DRIFT; DONE };
		break
	/* failed (too few grants, or too late): undone */
	:: d_step { trying && ((votes >= Q && clock >= START(a) + TTL - DRIFT) ||
			(votes < Q && ans[0] != 0 && ans[1] != 0 && ans[2] != 0)) ->
		UNDONE(0); UNDONE(1); UNDONE(2);
		votes = 0; trying = false }
	/* adopted: notices naming the failed attempt a from a quorum of nodes
	 * that refused it */
	:: d_step { !trying && a > 0 && COUNT(0) + COUNT(1) + COUNT(2) >= Q && clock < ADOPTED ->
		holding[2] = true; until[2] = ADOPTED; ADOPTS; DONE };
		break
	od
}

init {
	atomic {
		owner[0] = 1; owner[1] = 1; owner[2] = 1;
		expiry[0] = TTL; expiry[1] = TTL; expiry[2] = TTL;
		holding[1] = true; until[1] = TTL - DRIFT;
		run Holder(); run Waiter(); run Newcomer(); run Network();
#ifdef FORCE
		run Operator()
#endif
	}
}
