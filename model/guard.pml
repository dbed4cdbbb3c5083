/*
 * guard.pml: the restart guard (node/scripts/guard.lua) against the ways a
 * node forgets leases: a restart from a snapshot (Redis's default
 * persistence), a restart without data, a flush on a running node, and a
 * restart with an append-only file that keeps every write. Checked with
 * Spin (model/check.sh).
 *
 * Two clients, one Lock each, on three nodes; a lease is valid until
 * start + TTL - DRIFT on the client's clock, start taken before the first
 * request. Every request lands at any later moment, or never; a node runs
 * each script atomically. A fault hits nodes 0 and 1 (a majority) at any
 * moment. Nodes start at clock 0, declared new for their first process
 * (`redlock init`: the marker "0 <run_id>"), or (UNDECLARED) without a
 * marker, so that the guard makes one and a snapshot may hold it.
 *
 * The guard, as in guard.lua, with G ticks (GUARDFOR, default TTL):
 *   marker missing: made with since = the process start if nothing
 *     dropped keys since the start, else since = now;
 *   no vote while now < since + G (since "forever" never holds back);
 *   no vote while now < start + G unless the process persists every write
 *     (AOF) or made the marker itself (its run_id in it: a declaration, or
 *     a marker the guard made).
 *
 * Faults (-D, one at a time):
 *   SNAPSHOT  the nodes save a snapshot at any moment, and later restart
 *             from it: the marker and the keys as they were then
 *   EMPTY     the nodes restart without data
 *   FLUSH     FLUSHALL on the running nodes
 *   AOF       the nodes restart with every write kept
 * Negative variants (each must yield two valid leases):
 *   TRUSTMARKER   with SNAPSHOT: a node with a marker votes at once after
 *                 a restart (the old guard)
 *   DECLFOREVER   with SNAPSHOT: a marker's process is not compared with
 *                 the running one (a declaration holds for any process:
 *                 "SET redlock:node 0")
 *   NOFLUSHCHECK  with FLUSH: a missing marker counts from the process
 *                 start even after a flush (uptime without the flush check)
 */
#define N 3
#define Q 2
#ifndef TTL
#define TTL 2
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#ifndef MAXCLOCK
#define MAXCLOCK 4
#endif
#ifndef GUARDFOR
#define GUARDFOR TTL
#endif

byte clock;
byte owner[N];      /* 0 free, else the client holding the key */
byte expiry[N];     /* clock at which the key expires (kept across restarts) */
bool marker[N];     /* the marker key exists */
bool forever[N];    /* ... and says "0": complete since forever */
byte since[N];      /* ... else the node time it holds */
byte made[N];       /* ... by this process (its run_id in the marker); 0: none */
byte proc[N];        /* the process (its run_id) */
byte started[N];    /* when the process started */
bool dropped[N];    /* keys dropped since the start (flush) */
bool aof[N];        /* the process persists every write */

bool holding[3];
byte until[3];

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

/* a process of node n starts */
#define START(n) proc[n]++; started[n] = clock; dropped[n] = false

#ifdef SNAPSHOT
/* the snapshot of nodes 0 and 1 */
byte sOwner[2], sExpiry[2], sSince[2], sMade[2];
bool sMarker[2], sForever[2];
#define SAVE(n) sOwner[n] = owner[n]; sExpiry[n] = expiry[n]; sMarker[n] = marker[n]; \
	sForever[n] = forever[n]; sSince[n] = since[n]; sMade[n] = made[n]
#define LOAD(n) owner[n] = sOwner[n]; expiry[n] = sExpiry[n]; marker[n] = sMarker[n]; \
	forever[n] = sForever[n]; since[n] = sSince[n]; made[n] = sMade[n]; START(n)
#endif
#define WIPE(n) owner[n] = 0; marker[n] = false; forever[n] = false; made[n] = 0

proctype Fault() {
#ifdef SNAPSHOT
	atomic { SAVE(0); SAVE(1) };
	atomic { LOAD(0); LOAD(1) }
#endif
#ifdef EMPTY
	atomic { WIPE(0); START(0); WIPE(1); START(1) }
#endif
#ifdef FLUSH
	atomic { WIPE(0); dropped[0] = true; WIPE(1); dropped[1] = true }
#endif
#ifdef AOF
	atomic { aof[0] = true; START(0); aof[1] = true; START(1) }
#endif
}

/* guard.lua on node i: make a missing marker */
#ifdef NOFLUSHCHECK
#define LOSTSINCE(i) started[i]
#else
#define LOSTSINCE(i) (dropped[i] -> clock : started[i])
#endif
#define GUARDED(i) if \
	:: !marker[i] -> marker[i] = true; forever[i] = false; made[i] = proc[i]; since[i] = LOSTSINCE(i) \
	:: else -> skip \
	fi

/* ... and whether node i votes */
#ifdef DECLFOREVER
#define MADEHERE(i) (made[i] != 0)
#else
#define MADEHERE(i) (made[i] == proc[i])
#endif
#ifdef TRUSTMARKER
#define RESTARTED(i) false
#else
#define RESTARTED(i) (clock < started[i] + GUARDFOR && !aof[i] && !MADEHERE(i))
#endif
#define VOTES(i) ((forever[i] || clock >= since[i] + GUARDFOR) && !RESTARTED(i))

#ifdef UNDECLARED
/* a script of another lock, at any moment: it makes the missing markers
 * (a refused vote makes one too, but these clients do not retry) */
proctype Other() {
	atomic { GUARDED(0); GUARDED(1); GUARDED(2) }
}
#endif

/* acquire.lua on node i */
#define VOTE(i) :: atomic { !sent[i] -> sent[i] = true; GUARDED(i); \
	if \
	:: VOTES(i) && (owner[i] == 0 || expiry[i] <= clock) -> \
		owner[i] = me; expiry[i] = clock + TTL; votes++ \
	:: else -> skip \
	fi }

proctype Client(byte me) {
	byte votes, start;
	bool sent[N];

	start = clock;
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
	}
}

init {
	atomic {
		byte i;
		for (i : 0 .. N - 1) {
			proc[i] = 1;
#ifndef UNDECLARED
			marker[i] = true; forever[i] = true; made[i] = 1
#endif
		}
		run Client(1); run Client(2); run Fault();
#ifdef UNDECLARED
		run Other()
#endif
	}
}
