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
 * Property (assert in Check): when one lease ended (its Unlock began, or
 * its validity window passed) before the other was granted (its Lock
 * returned), the later token is strictly greater.
 *
 * Variants (-D):
 *   OLDFENCE  tokens taken at vote time: each granting node increments its
 *             counter in the acquire script, the token is the highest of
 *             the granting quorum, written back to a quorum. Must fail.
 *   CRASH     one node may crash and restart empty (counter 0, no lock
 *             key), no sooner than a TTL after it went down; at most one
 *             node down at a time.
 *   NOCLOCK   the token without its clock term (highest counter + 1 only).
 *             With CRASH it must fail.
 *
 * Time: a clock ticks (Tick); a TTL and the validity window are one tick.
 * Every node reads the same clock: skew is not modelled (the README states
 * the assumption: node clocks within TTL/2 of true time). The token's
 * clock term is clock * K, K larger than any counter one tick can reach.
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
byte clock;
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
	:: clock < MAXCLOCK -> clock++
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

/* acquire.lua on node i (OLDFENCE: with the vote-time INCR) */
#ifdef OLDFENCE
#define VOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; voted[i] = true; votes++; counter[i]++; \
	if :: counter[i] > best -> best = counter[i] :: else -> skip fi }
#else
#define VOTE(i) :: atomic { !voted[i] && up[i] && lockOf[i] == 0 -> \
	lockOf[i] = me; voted[i] = true; votes++ }
#endif

/* fence_read.lua on node i: counter and clock */
#ifdef NOCLOCK
#define CLOCKTERM skip
#else
#define CLOCKTERM if :: clock * K > best -> best = clock * K :: else -> skip fi
#endif
#define READ(i) :: atomic { !asked[i] && up[i] -> asked[i] = true; read++; \
	if :: counter[i] + 1 > best -> best = counter[i] + 1 :: else -> skip fi; CLOCKTERM }

/* fence.lua on node i: raise, never lower */
#define WRITE(i) :: atomic { !wrote[i] && up[i] -> wrote[i] = true; written++; \
	if :: counter[i] < best -> counter[i] = best :: else -> skip fi }

proctype Client(byte me) {
	byte votes, read, written, best;
	bool voted[N], asked[N], wrote[N];

	start[me] = clock;
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	:: votes >= Q -> break
	od;
#ifndef OLDFENCE
	/* the read round starts after the grant quorum is complete */
	do
	READ(0)
	READ(1)
	READ(2)
	:: read >= Q -> break
	od;
#endif
	token[me] = best;
	do
	WRITE(0)
	WRITE(1)
	WRITE(2)
	:: written >= Q -> break
	od;
	/* Lock returns only within the validity window */
	atomic {
		if
		:: clock < start[me] + VALID -> granted[me] = true; Check(me, 3 - me)
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
