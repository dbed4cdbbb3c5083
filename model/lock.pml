/*
 * lock.pml: the lock itself: acquire rounds that return at a quorum,
 * validity on the client's clock, release, tombstones for late acquires,
 * and node restarts. Checked with Spin (model/check.sh).
 *
 * Two clients, one Lock each, on three nodes. Every request is a step of
 * its client taken at any later moment, or never (lost); a node runs each
 * script atomically. A clock ticks; a node's key expires TTL ticks after
 * it was set; a lease is valid until start + TTL - DRIFT on the client's
 * clock, start taken before the first request (internal/core/validity.go). Node clocks run
 * at the clients' rate, but for node 0 under FAST.
 *
 * Properties (asserts):
 *   mutual exclusion: no two leases valid at the same tick (Monitor);
 *   tombstones: once a release with a tombstone ran on a node, no acquire
 *   of that hold is granted there for a TTL (in VOTE); a request that
 *   arrives later than that, or after the node lost its data, can still
 *   land, and its key expires at its TTL (as docs/safety.md says).
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
 *             must fail (mutual exclusion) without GUARD.
 *   GUARD     the restart guard (scripts/guard.lua): a node that lost its
 *             data finds its marker gone at its next script, makes a new
 *             one stamped at the loss at the earliest (guard.lua stamps the
 *             process start, or the time it finds a flush), and does not
 *             vote until GUARDFOR ticks after that; with CRASH EARLY or
 *             MAJWIPE it must pass. Snapshots, AOF and declared nodes:
 *             guard.pml.
 *   GUARDFOR  the guard's length (default TTL); shorter than a lease's
 *             validity (DRIFT=0 GUARDFOR=1: a Client whose guard is
 *             shorter than another's TTL), it must fail with MAJWIPE.
 *   FAST      node 0's clock runs so fast that a key it sets expires
 *             before the next tick; must fail (mutual exclusion).
 *   CLOCKCHECK with FAST: the clock check (node/clock.go) has found node
 *             0's clock fast, so the clients do not count its answers,
 *             though its scripts still run and take the key; must pass.
 *             (How soon the check finds a fast clock is not modelled: a
 *             clock not yet found counts, as under FAST alone.)
 *   Q=1       a quorum of one node out of three; must fail.
 *   NOTOMB    releases leave no tombstone; must fail (tombstones).
 */
#define N 3
#ifndef Q
#define Q 2
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#ifndef MAXCLOCK
#define MAXCLOCK 3
#endif
#ifndef GUARDFOR
#define GUARDFOR TTL
#endif

byte clock;
byte owner[N];         /* 0 free, else the client holding the key */
byte expiry[N];        /* clock at which the key expires */
bool tomb[N];          /* a tombstone for client 1's hold (the one released late) */
bool releasedOn[N];    /* client 1's release with tombstone ran on the node */
byte releasedAt[N];    /* ... at this clock */
bool up[N];
bool lost[N];          /* the node lost its data (its marker is not "0" any more) */
bool marked[N];        /* ... and has made a new marker */
byte markedAt[N];      /* ... at this clock */

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

/* The worst case of the guard: a script of another lock finds the marker
 * gone the moment the data is lost and makes it then (the earliest it can
 * be made, so the earliest the node votes again); otherwise the next
 * acquire makes it. */
#ifdef GUARD
#define MARKNOW(n) if :: marked[n] = true; markedAt[n] = clock :: skip fi
#else
#define MARKNOW(n) skip
#endif
/* node n loses its data */
#define LOSE(n) owner[n] = 0; tomb[n] = false; lost[n] = true; marked[n] = false; MARKNOW(n)

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
	atomic { LOSE(n); up[n] = true } /* at once */
#else
	atomic { clock >= since + TTL -> LOSE(n); up[n] = true }
#endif
}
#endif

#ifdef MAJWIPE
proctype Wipe() {
	atomic { LOSE(0); LOSE(1) }
}
#endif

/* guard.lua on node i: make a missing marker; vote only GUARDFOR ticks
 * after it was made */
#ifdef GUARD
#define GUARDED(i) if :: lost[i] && !marked[i] -> marked[i] = true; markedAt[i] = clock :: else -> skip fi
#define VOTES(i) (!lost[i] || clock >= markedAt[i] + GUARDFOR)
#else
#define GUARDED(i) skip
#define VOTES(i) true
#endif

/* a key's life on node i, in ticks of real time */
#ifdef FAST
#define LIFE(i) (i == 0 -> 0 : TTL)
#else
#define LIFE(i) TTL
#endif
/* whether the client counts node i's grant */
#ifdef CLOCKCHECK
#define COUNTS(i) (i != 0)
#else
#define COUNTS(i) true
#endif

/* acquire.lua on node i: free (or expired) and no tombstone for the hold */
#define VOTE(i) :: atomic { !sent[i] && up[i] -> sent[i] = true; GUARDED(i); \
	if \
	:: VOTES(i) && (owner[i] == 0 || expiry[i] <= clock) && !(me == 1 && tomb[i]) -> \
		assert(!(me == 1 && releasedOn[i] && clock < releasedAt[i] + TTL)); \
		owner[i] = me; expiry[i] = clock + LIFE(i); \
		if :: COUNTS(i) -> votes++ :: else -> skip fi \
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
