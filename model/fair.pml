/*
 * fair.pml: progress of a waiter that can win while another waiter is cut
 * off from a quorum. Checked with Spin (model/check.sh).
 *
 * Three nodes, quorum 2; node 2 is down for everyone. W reaches node 0
 * only: it can never win, and it heads node 0's queue (its ticket is the
 * earliest). V reaches nodes 0 and 1, and the lock is free. Time goes in
 * ticks (a tick stands for a third of the queue timeout: a waiter's
 * heartbeat); in each tick each client makes at most one attempt, its
 * requests and undos interleaved with the other's in any order.
 *   W: an attempt asks node 0 (acquire_queued.lua) and fails (one node of
 *      two needed); a grant is undone (release.lua): keeping its place in
 *      the queue, which leaves the lock free while W heads it. After K
 *      attempts that reached too few nodes W yields (engine/cutoff.go):
 *      its attempts take no place (a refusal leaves none, a free fair lock
 *      with another waiter queued goes to that waiter, a lock handed to it
 *      is claimed), and their undos pass the lock on; it makes such an
 *      attempt at once, then backs off: one attempt every other tick.
 *   V: fair (default): an acquire_queued.lua round on nodes 0 and 1; a
 *      refusal queues it behind W; a free lock whose first waiter is
 *      another goes to that waiter (hand in queue.lua); a failed round's
 *      grants are undone keeping V's place (the lock then goes to W if W
 *      heads the queue). READER: V is a reader of an RWMutex whose writer
 *      is W (plain mode: a free lock goes to whoever asks; W's undo keeps
 *      its place): acquire_read.lua refuses while a writer holds the key
 *      or waits in the queue; a failed round's read holds are released.
 *
 * Property (assert in Tick): V holds the lock by tick BOUND = K + 2.
 *
 * Negative variants (-D), each must fail:
 *   NOYIELD    W never yields (the code before): V never wins node 0;
 *   NOBACKOFF  (with READER) W attempts every tick after it yields: each
 *              attempt takes node 0 for a moment, and V's read there can
 *              meet it every time.
 */
#ifndef K
#define K 2
#endif
#define BOUND (K + 2)

byte clock;
byte owner[2];      /* node 0, 1: 0 free, 1 W, 2 V, 3 the readers */
bool handed[2];     /* the key was handed to its owner, not yet claimed */
bool qW[2], qV[2];  /* W, V queued on the node (W's ticket first) */
bool yields;        /* W yields */
byte misses;        /* W's attempts that reached too few nodes */
bool vHolds;
bool wTurn, vTurn;  /* each may still make this tick's attempt */

/* hand in queue.lua: the free key goes to the first waiter, except the
 * one putting its own failed attempt back (which stays first) */
#define HAND(i, except) \
	if \
	:: qW[i] && except != 1 -> owner[i] = 1; handed[i] = true; qW[i] = false \
	:: qW[i] && except == 1 -> owner[i] = 0; handed[i] = false \
	:: !qW[i] && qV[i] && except != 2 -> owner[i] = 2; handed[i] = true; qV[i] = false \
	:: else -> owner[i] = 0; handed[i] = false \
	fi

#ifdef NOYIELD
#define CANYIELD false
#else
#define CANYIELD true
#endif
#ifdef NOBACKOFF
#define EVERY true
#else
#define EVERY (!yields || clock % 2 == 0)
#endif

proctype Tick() {
	wTurn = true; vTurn = true;
	do
	:: d_step { !wTurn && !vTurn && clock < BOUND ->
		clock++;
		wTurn = EVERY; vTurn = !vHolds }
	:: d_step { !wTurn && !vTurn && clock == BOUND -> assert(vHolds) }; break
	od
}

/* W's request to node 0; sets g (granted) */
#ifdef READER
/* plain: a free key goes to whoever asks */
#define WFREE owner[0] = 1; qW[0] = false; g = true
#else
/* fair: to the first waiter; a yielding W is not one */
#define WFREE if \
	:: !yields -> owner[0] = 1; qW[0] = false; g = true \
	:: yields && qV[0] -> HAND(0, 0) \
	:: yields && !qV[0] -> owner[0] = 1; g = true \
	fi
#endif
#define WREQ \
	if \
	:: owner[0] == 1 && handed[0] -> handed[0] = false; g = true \
	:: owner[0] != 0 && owner[0] != 1 -> qW[0] = !yields \
	:: owner[0] == 0 -> WFREE \
	fi

proctype W() {
	bool g;
	do
	:: d_step { wTurn -> g = false; WREQ }
	   d_step {
		if
		:: g && !yields -> qW[0] = true; HAND(0, 1)
		:: g && yields -> HAND(0, 0)
		:: else -> skip
		fi;
		misses++;
		if
		:: misses >= K && !yields && CANYIELD -> yields = true   /* and again at once */
		:: else -> wTurn = false
		fi }
	od
}

/* V's request to node i; sets g[i] */
#ifdef READER
#define VREQ(i) \
	if \
	:: (owner[i] == 0 || owner[i] == 3) && !qW[i] -> owner[i] = 3; g[i] = true \
	:: else -> skip \
	fi
#define VUNDO(i) if :: g[i] -> HAND(i, 0) :: else -> skip fi
#else
#define VREQ(i) \
	if \
	:: owner[i] == 2 && handed[i] -> handed[i] = false; g[i] = true \
	:: owner[i] != 0 && owner[i] != 2 -> qV[i] = true \
	:: owner[i] == 0 && qW[i] -> qV[i] = true; HAND(i, 0) \
	:: owner[i] == 0 && !qW[i] -> owner[i] = 2; qV[i] = false; g[i] = true \
	fi
#define VUNDO(i) if :: g[i] -> qV[i] = true; HAND(i, 2) :: else -> skip fi
#endif

proctype V() {
	bool g[2], asked[2];
	do
	:: d_step { vTurn && !asked[0] -> VREQ(0); asked[0] = true }
	:: d_step { vTurn && !asked[1] -> VREQ(1); asked[1] = true }
	:: d_step { vTurn && asked[0] && asked[1] && g[0] && g[1] -> vHolds = true; vTurn = false }; break
	:: d_step { vTurn && asked[0] && asked[1] && !(g[0] && g[1]) -> VUNDO(0); VUNDO(1);
		g[0] = false; g[1] = false; asked[0] = false; asked[1] = false; vTurn = false }
	od
}

init {
	atomic {
		qW[0] = true;   /* W waits, queued on the node it reaches */
		run Tick(); run W(); run V()
	}
}
