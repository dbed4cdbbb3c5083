/*
 * fencing.pml: the fencing-token scheme under message delay, loss and
 * reordering, checked with Spin (model/check.sh runs every variant; see
 * model/README.md for what each step stands for in the Go code).
 *
 * Two clients, 1 and 2, each make one Lock on three nodes (majority 2).
 * Every request is one step of the client that sent it, taken at any
 * later moment or never (lost): Spin tries every order, so a request held
 * on one link while the other nodes answer is one of the interleavings. A
 * node runs each script atomically. The nodes' counters start diverged
 * ({0, 0, 2}: earlier failed attempts do that).
 *
 * The scheme (two rounds): each granting node answers its counter and its
 * clock with its vote (acquire.lua); the token is the highest counter + 1,
 * or the clock term if higher, over the granting quorum's answers: the
 * highest clock reading, capped at the lower median reading plus the
 * attempt's elapsed time (fencing.go clockTerm);
 * then one write-back round: a node raises its counter to the token (never
 * lowers it) only while this hold still holds the lock there (fence.lua
 * with the hold), and Lock returns once a quorum accepted it. Until the
 * release, an acquire still on its way may land late (LATEVOTE) and take
 * the key for this client, so a write-back may be accepted where the vote
 * was not counted.
 *
 * Property (assert in Check): when one lease ended (its Unlock began, or
 * its validity window passed) before the other was granted (its Lock
 * returned), the later token is strictly greater.
 *
 * Variants (-D):
 *   NOOWNER   the write-back raises the counter whether or not the hold
 *             still holds the lock on that node. Must fail.
 *   OLDFENCE  tokens taken at vote time with an increment: each granting
 *             node increments its counter in the acquire script, the
 *             token is the highest of the granting quorum, written back to
 *             a quorum without the ownership check. Must fail.
 *   READROUND the three-round scheme (kept for the paths that have no
 *             acquire answers to use): after the grant quorum, a read
 *             round of counters and clocks (fence_read.lua), then the
 *             write-back, without the ownership check.
 *   EXPIRY    keys expire TTL (2) ticks after their vote, and a vote that
 *             lands again after the expiry re-takes the key.
 *   NOVALID   (with EXPIRY) Lock returns even when the write-back ended
 *             after the validity window. Must fail.
 *   CRASH     one node may crash and restart empty (counter 0, no lock
 *             key), no sooner than a TTL after it went down; at most one
 *             node down at a time.
 *   NOCLOCK   the token without its clock term (highest counter + 1 only).
 *             With CRASH it must fail.
 *   AHEAD     node 2's clock reads FAR (five TTLs) ahead of the others'.
 *   BEHIND    node 2's clock reads FAR behind the others'. With CRASH it
 *             must fail: from two answers a clock behind cannot be told
 *             from one ahead, and the lower is taken (docs/safety.md).
 *   PLAINMAX  the clock term is the highest reading, uncapped (the rule
 *             before the cap). With AHEAD and CRASH it must fail.
 *   INFLATION also assert that a granted token is below the correct
 *             clocks' reading + MAXCLOCK + 1 ticks (the longest attempt,
 *             and the tick); with AHEAD and PLAINMAX it must fail.
 *
 * Time: a clock ticks (Tick); a TTL and the validity window are one tick.
 * A node's clock term is clock * K (+ its skew under AHEAD or BEHIND), K
 * larger than any counter one tick can reach. Skew below a tick is not
 * modelled (docs/safety.md states the assumption: correct clocks within
 * TTL/2 of true time). A granted Lock's readings all lie in its start's
 * tick, so the cap's elapsed term is 0 for it: its role across a slow
 * round is argued in docs/safety.md, not checked here.
 */
#define N 3
#define Q 2
#define K 8
#ifndef MAXCLOCK
#define MAXCLOCK 2
#endif
#define VALID 1

byte counter[N];
bool up[N];
byte lockOf[N];        /* 0 free, else the client whose key it is */
#ifdef EXPIRY
/* A key expires TTL ticks after the vote that set it (the validity window
 * is one tick); a vote that lands again after the expiry re-takes the key
 * (a duplicate or retried acquire of the same hold). */
#define TTL 2
byte until[N];
#define STAMP(i) until[i] = clock + TTL;
#define EXPIRE(i) if :: lockOf[i] != 0 && until[i] <= clock -> lockOf[i] = 0 :: else -> skip fi
#define DUP(i) :: atomic { voted[i] && up[i] && lockOf[i] == 0 -> lockOf[i] = me; STAMP(i) skip }
#else
#define STAMP(i)
#define DUP(i)
#endif
byte clock;

/* node i's clock reading; BASE is the correct clocks' offset (nonzero
 * under BEHIND, so that node 2 reads FAR behind them without going below
 * zero) */
#define FAR (5 * K)
#if defined(AHEAD)
#define SKEW(i) (i == 2 -> FAR : 0)
#define BASE 0
#elif defined(BEHIND)
#define SKEW(i) (i == 2 -> 0 : FAR)
#define BASE FAR
#else
#define SKEW(i) 0
#define BASE 0
#endif
#define READING(i) (clock * K + SKEW(i))
#ifdef CRASH
byte downSince;
bool crashed;
#endif

byte token[3];         /* by client 1, 2 */
bool granted[3];       /* Lock returned */
bool ended[3];         /* Unlock began */
byte start[3];         /* clock when the acquire round began */

/* me was just granted: a lease that ended before must have a lower token */
inline Check(me, other) {
	if
	:: ended[other] || (granted[other] && clock >= start[other] + VALID) ->
		assert(token[me] > token[other])
	:: else -> skip
	fi
}

active proctype Tick() {
	do
#ifdef EXPIRY
	:: clock < MAXCLOCK -> atomic { clock++; EXPIRE(0); EXPIRE(1); EXPIRE(2) }
#else
	:: clock < MAXCLOCK -> clock++
#endif
	:: else -> break
	od
}

#ifdef CRASH
/* A node goes down, and comes back empty a TTL later. */
proctype Crash() {
	byte n;
	if
	:: n = 0     /* node 1 is the same as node 0 */
	:: n = 2
	fi;
	atomic { up[n] = false; crashed = true; downSince = clock };
	atomic { clock > downSince -> counter[n] = 0; lockOf[n] = 0; up[n] = true }
}
#endif

/* a clock read at node i: kept as the highest (top1) or second highest
 * (top2) reading so far; of two or three answers the second highest is
 * the lower median */
#define NOTE(i) if \
	:: READING(i) > top1 -> top2 = top1; top1 = READING(i) \
	:: READING(i) <= top1 && READING(i) > top2 -> top2 = READING(i) \
	:: else -> skip \
	fi
#define COUNTERTERM(i) if :: counter[i] + 1 > best -> best = counter[i] + 1 :: else -> skip fi

/* the clock term, taken into best when the token is made (NOCLOCK: none;
 * PLAINMAX: the highest reading; else capped at the lower median plus the
 * ticks since the attempt began) */
#define CAP (top2 + (clock - start[me]) * K)
#if defined(NOCLOCK)
#define CLOCKTERM skip
#elif defined(PLAINMAX)
#define CLOCKTERM if :: top1 > best -> best = top1 :: else -> skip fi
#else
#define CLOCKTERM if \
	:: top1 <= CAP && top1 > best -> best = top1 \
	:: top1 > CAP && CAP > best -> best = CAP \
	:: else -> skip \
	fi
#endif

/* acquire.lua on node i, its answer counted in the grant quorum; with it
 * the counter and the clock, unless the client reads them in a round of
 * their own (OLDFENCE: the increment, and the new counter) */
#if defined(OLDFENCE)
#define VOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; STAMP(i) voted[i] = true; votes++; counter[i]++; \
	if :: counter[i] > best -> best = counter[i] :: else -> skip fi }
#else
#define VOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; STAMP(i) voted[i] = true; votes++; \
	if :: !readRound -> COUNTERTERM(i); NOTE(i) :: else -> skip fi }
#endif

/* acquire.lua on node i landing after the grant quorum: the key taken,
 * the answer not counted (OLDFENCE: the increment still made) */
#ifdef OLDFENCE
#define LATEVOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; STAMP(i) voted[i] = true; counter[i]++ }
#else
#define LATEVOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; STAMP(i) voted[i] = true }
#endif

/* fence_read.lua on node i: counter and clock (the read round) */
#define READ(i) :: atomic { !asked[i] && up[i] -> asked[i] = true; read++; \
	COUNTERTERM(i); NOTE(i) }

/* fence_held.lua on node i: raise, never lower; accepted only while this
 * client's hold holds the lock there (not so in the variants that write
 * back without the check). A refused write-back is one not accepted yet:
 * it may be accepted later (a late vote), which only adds behaviours. */
#if defined(NOOWNER) || defined(OLDFENCE)
#define OWNS(i) true
#elif defined(UNCHECKEDREAD)
#define OWNS(i) (readRound || lockOf[i] == me)
#else
#define OWNS(i) lockOf[i] == me
#endif
#define WRITE(i) :: atomic { !wrote[i] && up[i] && OWNS(i) -> wrote[i] = true; written++; \
	if :: counter[i] < best -> counter[i] = best :: else -> skip fi }

/* INFLATION: the token just granted (best) is not carried by a clock
 * ahead: below the correct clocks' reading + the longest attempt + a tick */
#ifdef INFLATION
#define NOTINFLATED assert(best - BASE < (clock + 1 + MAXCLOCK) * K)
#else
#define NOTINFLATED skip
#endif

proctype Client(byte me) {
	byte votes, read, written, best;
	byte top1, top2;  /* the highest clock readings answered */
	bool voted[N], asked[N], wrote[N];
	bool readRound;   /* this Lock reads the counters in a round of their own */

	start[me] = clock;
#if !defined(OLDFENCE) && !defined(VOTEREAD)
	if
	:: readRound = true
	:: readRound = false
	fi;
#endif
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	DUP(0)
	DUP(1)
	DUP(2)
	:: votes >= Q -> break
	od;
	if
	:: readRound ->
		/* the read round starts after the grant quorum is complete */
		do
		READ(0)
		READ(1)
		READ(2)
		:: read >= Q -> break
		od
	:: else -> skip
	fi;
	/* the token; the readings are not needed after it */
	atomic { CLOCKTERM; token[me] = best; top1 = 0; top2 = 0 };
	do
	WRITE(0)
	WRITE(1)
	WRITE(2)
	LATEVOTE(0)
	LATEVOTE(1)
	LATEVOTE(2)
	DUP(0)
	DUP(1)
	DUP(2)
	:: written >= Q -> break
	od;
	/* Lock returns only within the validity window */
	atomic {
		if
#ifdef NOVALID
		:: true -> granted[me] = true; NOTINFLATED; Check(me, 3 - me)
#else
		:: clock < start[me] + VALID -> granted[me] = true; NOTINFLATED; Check(me, 3 - me)
#endif
		:: else -> skip
		fi
	};
	ended[me] = granted[me];
	/* release; the write-backs still on their way land now, or never */
	atomic {
		lockOf[0] = (lockOf[0] == me -> 0 : lockOf[0]);
		lockOf[1] = (lockOf[1] == me -> 0 : lockOf[1]);
		lockOf[2] = (lockOf[2] == me -> 0 : lockOf[2])
	};
	do
	WRITE(0)
	WRITE(1)
	WRITE(2)
	:: break
	od
}

init {
	atomic {
		up[0] = true; up[1] = true; up[2] = true;
		counter[2] = 2;
		run Client(1); run Client(2);
#ifdef CRASH
		run Crash()
#endif
	}
}
