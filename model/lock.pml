/*
 * lock.pml: the lock itself: acquire rounds that return at a quorum,
 * validity on the client's clock, release, tombstones for late acquires,
 * and node restarts. Checked with Spin (model/check.sh).
 *
 * Two clients, one Lock each, on three nodes. Every request is a step of
 * its client taken at any later moment, or never (lost); a node runs each
 * script atomically. A clock ticks; a node's key expires TTL ticks after
 * it was set; a lease is valid until start + TTL - DRIFT on the client's
 * clock, start taken before the first request (drift.go). Node clocks run
 * at the clients' rate (a fast clock is not modelled here; the chaos tier
 * covers it).
 *
 * Properties (asserts):
 *   mutual exclusion: no two leases valid at the same tick (Monitor);
 *   tombstones: once a release with a tombstone ran on a node, no acquire
 *   of that hold is granted there for a TTL (in VOTE); a request that
 *   arrives later than that, or after the node lost its data, can still
 *   land, and its key expires at its TTL (as the README says).
 *
 * Configurations (-D):
 *   LATE      requests still on their way after the release land then, or
 *             never: the tombstone property's configuration (with a short
 *             clock, MAXCLOCK=2); without it, the mutual-exclusion ones.
 * Variants (-D):
 *   CRASH     one node goes down and restarts empty, no sooner than a TTL
 *             after it went down (the lock's own rule); must pass.
 *   EARLY     with CRASH: the node restarts empty at once, not a TTL
 *             later; must fail (mutual exclusion).
 *   MAJWIPE   two nodes (a majority) restart empty at once, at any time;
 *             must fail (mutual exclusion).
 *   Q=1       a quorum of one node out of three; must fail.
 *   NOTOMB    releases leave no tombstone; must fail (tombstones).
 */
#define N 3
#ifndef Q
#define Q 2
#endif
#define TTL 2
#define DRIFT 1
#ifndef MAXCLOCK
#define MAXCLOCK 3
#endif

byte clock;
byte owner[N];         /* 0 free, else the client holding the key */
byte expiry[N];        /* clock at which the key expires */
bool tomb[N];          /* a tombstone for client 1's hold (the one released late) */
bool releasedOn[N];    /* client 1's release with tombstone ran on the node */
byte releasedAt[N];    /* ... at this clock */
bool up[N];

bool holding[3];
byte until[3];

/* mutual exclusion over validity windows */
#define BOTHVALID (holding[1] && holding[2] && clock < until[1] && clock < until[2])
active proctype Monitor() {
	atomic { BOTHVALID -> assert(!BOTHVALID) }
}

active proctype Tick() {
	do
	:: clock < MAXCLOCK -> clock++
	:: else -> break
	od
}

#ifdef CRASH
proctype Crash() {
	byte n, since;
	if
	:: n = 0
	:: n = 1
	:: n = 2
	fi;
	atomic { up[n] = false; since = clock };
#ifdef EARLY
	atomic { owner[n] = 0; tomb[n] = false; up[n] = true } /* at once */
#else
	atomic { clock >= since + TTL -> owner[n] = 0; tomb[n] = false; up[n] = true }
#endif
}
#endif

#ifdef MAJWIPE
proctype Wipe() {
	atomic { owner[0] = 0; owner[1] = 0; tomb[0] = false; tomb[1] = false }
}
#endif

/* acquire.lua on node i: free (or expired) and no tombstone for the hold */
#define VOTE(i) :: atomic { !sent[i] && up[i] -> sent[i] = true; \
	if \
	:: (owner[i] == 0 || expiry[i] <= clock) && !(me == 1 && tomb[i]) -> \
		assert(!(me == 1 && releasedOn[i] && clock < releasedAt[i] + TTL)); \
		owner[i] = me; expiry[i] = clock + TTL; votes++ \
	:: else -> skip \
	fi }

/* release.lua on node i: drop the hold; with a tombstone when asked */
#if defined(NOTOMB) || !defined(LATE)
#define TOMB(i) skip
#else
#define TOMB(i) tomb[i] = true
#endif
#ifdef LATE
#define RELEASED(i) releasedOn[i] = true; releasedAt[i] = clock
#else
#define RELEASED(i) skip
#endif
#define RELEASE(i) :: atomic { !freed[i] && up[i] -> freed[i] = true; \
	if :: owner[i] == me -> owner[i] = 0 :: else -> skip fi; \
	if :: me == 1 -> TOMB(i); RELEASED(i) :: else -> skip fi }

proctype Client(byte me) {
	byte votes, start;
	bool sent[N], freed[N];

	start = clock;
	/* the round returns as soon as a quorum granted; the other requests
	 * stay on their way */
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	:: votes >= Q -> break
	od;
	atomic {
		if
		:: clock < start + TTL - DRIFT -> holding[me] = true; until[me] = start + TTL - DRIFT
		:: else -> skip
		fi
	};
	/* Unlock (or give back a grant that came too late): the lease ends,
	 * then a release goes to every node, in any order */
	holding[me] = false;
	do
	RELEASE(0)
	RELEASE(1)
	RELEASE(2)
	:: freed[0] && freed[1] && freed[2] -> break
	od;
#ifdef LATE
	/* requests still on their way land now, or never */
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	:: break
	od
#endif
}

init {
	atomic {
		up[0] = true; up[1] = true; up[2] = true;
		run Client(1); run Client(2);
#ifdef CRASH
		run Crash();
#endif
#ifdef MAJWIPE
		run Wipe();
#endif
	}
}
