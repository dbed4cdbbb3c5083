/*
 * handoff.pml: the handoff of a freed lock to the first waiter, and the
 * claim that turns it into a lease. Checked with Spin (model/check.sh).
 *
 * Three nodes, quorum 2, three clients on one name:
 *   1, the holder: holds the lock on every node at the start, and
 *      releases it on every node in any order;
 *   2, the waiter: queued on every node before the release (its refused
 *      acquire queued it); a release that frees a node hands the lock to
 *      it there (queue.lua, hand): owner = 2, "handed", for WINDOW ticks,
 *      and tells it. It claims with an acquire round (acquire_queued.lua)
 *      when notices from a quorum came, or at any time (its heartbeat),
 *      at most twice; a failed round gives back what it granted (undo);
 *   3, a newcomer: one ordinary round at any time (a plain newcomer takes
 *      a free node); its key expires on its own.
 * Every request is a step taken at any later moment, or never; a node
 * runs each script atomically; keys expire on one clock that ticks freely.
 *
 * Property (assert in Monitor): no two leases valid at the same tick.
 * The claim is an ordinary acquire: its validity counts from its own
 * start, before any of its requests, and it sets the key's expiry to a
 * full TTL; a handed key grants nothing by itself.
 *
 * Negative variant (-D):
 *   ADOPT   the waiter takes the lease as soon as notices from a quorum
 *           came, valid for TTL - DRIFT from then (as if the notice were
 *           the grant), without claiming; must fail: a handed key lapses
 *           after the window, or a notice arrives late, and the newcomer
 *           is granted while the waiter believes it holds.
 */
#define N 3
#define Q 2
#define TTL 2
#define DRIFT 1
#define WINDOW 1
#ifndef MAXCLOCK
#define MAXCLOCK 3
#endif
#ifndef TRIES
#define TRIES 2
#endif

byte clock;
byte owner[N];      /* 0 free, else the client whose key it is */
bool handed[N];     /* the key was handed to its owner, not yet claimed */
byte expiry[N];
bool queued[N];     /* the waiter is in the node's queue */
bool told[N];       /* the node's handoff notice reached the waiter */

bool holding[4];
byte until[4];

#define VALID(c) (holding[c] && clock < until[c])
active proctype Monitor() {
	atomic {
		(VALID(1) && VALID(2)) || (VALID(1) && VALID(3)) || (VALID(2) && VALID(3)) ->
		assert(!((VALID(1) && VALID(2)) || (VALID(1) && VALID(3)) || (VALID(2) && VALID(3))))
	}
}

active proctype Tick() {
	do
	:: clock < MAXCLOCK -> clock++
	:: else -> break
	od
}

#define LIVE(i) (owner[i] != 0 && expiry[i] > clock)

/* hand (queue.lua): the freed node i goes to the waiter if it is queued */
#define FREE(i) if \
	:: queued[i] -> queued[i] = false; owner[i] = 2; handed[i] = true; expiry[i] = clock + WINDOW; told[i] = true \
	:: else -> owner[i] = 0; handed[i] = false \
	fi

/* release.lua on node i for client me: only its own live key */
#define RELEASE(i) :: atomic { !freed[i] -> freed[i] = true; \
	if :: owner[i] == me && !handed[i] && expiry[i] > clock -> FREE(i) :: else -> skip fi }

/* acquire.lua: an ordinary acquire by a newcomer: a free or expired node */
#define VOTE(i) :: atomic { !sent[i] -> sent[i] = true; \
	if :: !LIVE(i) -> owner[i] = me; handed[i] = false; expiry[i] = clock + TTL; votes++ \
	:: else -> skip fi }

/* the holder: it took the lock on every node at clock 0 (init), holds
 * it, then releases it on every node in any order */
proctype Holder() {
	byte me = 1;
	bool freed[N];
	holding[1] = false;
	do
	RELEASE(0)
	RELEASE(1)
	RELEASE(2)
	:: freed[0] && freed[1] && freed[2] -> break
	od
}

/* the newcomer: one ordinary round at any time; its key expires on its
 * own (its release would only free nodes sooner) */
proctype Newcomer() {
	byte me = 3, votes, start;
	bool sent[N];
	start = clock;
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	:: votes >= Q -> break
	od;
	if
	:: clock < start + TTL - DRIFT -> holding[3] = true; until[3] = start + TTL - DRIFT
	:: else -> skip
	fi
}

#define RESET(i) expiry[i] = clock + TTL

/* acquire_queued.lua for the waiter: claim a node handed to it, take a
 * free one, else queue (its heartbeat) */
#define CLAIM(i) :: atomic { !sent[i] -> sent[i] = true; \
	if \
	:: owner[i] == 2 && handed[i] && expiry[i] > clock -> handed[i] = false; RESET(i); got[i] = true; votes++ \
	:: !LIVE(i) -> owner[i] = 2; handed[i] = false; expiry[i] = clock + TTL; queued[i] = false; got[i] = true; votes++ \
	:: else -> queued[i] = true \
	fi }

/* the undo of a failed claim: give back what this round got (the waiter
 * keeps its place and heads the queue: the node is left free) */
#define UNDO(i) :: atomic { got[i] -> got[i] = false; \
	if :: owner[i] == 2 && !handed[i] -> owner[i] = 0; queued[i] = true :: else -> skip fi }

proctype Waiter() {
	byte votes, start, tries;
	bool sent[N], got[N];
	do
	:: tries < TRIES ->
		tries++;
#ifdef ADOPT
		/* the mistake: notices from a quorum taken as the grant */
		atomic {
			(told[0] + told[1] + told[2]) >= Q ->
			holding[2] = true; until[2] = clock + TTL - DRIFT
		};
		break;
#endif
		/* woken by notices from a quorum, or by its heartbeat: any time */
		sent[0] = false; sent[1] = false; sent[2] = false;
		got[0] = false; got[1] = false; got[2] = false;
		votes = 0;
		start = clock;
		do
		CLAIM(0)
		CLAIM(1)
		CLAIM(2)
		:: votes >= Q -> break
		:: sent[0] && sent[1] && sent[2] -> break
		od;
		if
		:: votes >= Q && clock < start + TTL - DRIFT ->
			atomic { holding[2] = true; until[2] = start + TTL - DRIFT };
			break
		:: else ->
			do
			UNDO(0)
			UNDO(1)
			UNDO(2)
			:: !got[0] && !got[1] && !got[2] -> break
			od
		fi
	:: else -> break
	od
}

init {
	atomic {
		owner[0] = 1; owner[1] = 1; owner[2] = 1;
		expiry[0] = TTL; expiry[1] = TTL; expiry[2] = TTL;
		holding[1] = true; until[1] = TTL - DRIFT;
		queued[0] = true; queued[1] = true; queued[2] = true;
		run Holder(); run Waiter(); run Newcomer()
	}
}
