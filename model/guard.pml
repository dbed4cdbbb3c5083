/*
 * guard.pml: the restart guard (node/scripts/guard.lua) against the ways a
 * node forgets leases: a restart from a snapshot (Redis's default
 * persistence), a restart without data, a flush on a running node, a
 * restart with an append-only file that keeps every write, a failover to
 * a lagging replica, evictions, INFO refused, clients with different TTLs,
 * and `redlock init` run after a loss. Checked with Spin (model/check.sh).
 *
 * Two clients, one Lock each, on three nodes; a lease is valid until
 * start + TTL - DRIFT on the client's clock, start taken before the first
 * request. Every request lands at any later moment, or never; a node runs
 * each script atomically. A fault hits nodes 0 and 1 (a majority) at any
 * moment. Nodes start at clock 0, declared (`redlock init`: the marker
 * "complete since forever", stamped), or (UNDECLARED) without a marker,
 * so that the guard makes one and a snapshot may hold it.
 *
 * The guard, as in guard.lua: the marker "<since> <why> <replid> <longest>
 * <voted>"; replid (the stamp) changes at each restart and promotion; a
 * call's guard G = max(its own, longest), and it raises longest:
 *   INFO refused, or an evicting memory policy: no vote;
 *   marker missing: since = now after a drop (flush) or a promotion since
 *     the start, else the process start;
 *   stamp != replid: after a promotion since the start, since =
 *     max(since, now); else (a restart) within G of the start and without
 *     AOF, since = max(since, start); else kept; then restamped;
 *   no vote while now < since + G ("forever" never holds back).
 *
 * Faults (-D, one at a time):
 *   SNAPSHOT  the nodes save a snapshot at any moment, and later restart
 *             from it: the marker and the keys as they were then
 *   EMPTY     the nodes restart without data
 *   FLUSH     FLUSHALL on the running nodes
 *   AOF       the nodes restart with every write kept
 *   PROMOTE   each node replaced, at any moment, by its replica: the keys
 *             and marker as of any earlier moment, a new replid, a
 *             process up long before (its start protects nothing);
 *             TOGETHER: both copied at one moment, promoted at one
 *   EVICT     the nodes switched to an evicting policy at any moment; then
 *             a lock key may vanish at any moment, the marker stays
 *   NOINFO    (with SNAPSHOT) the nodes refuse INFO from any moment
 *             (BLINDATSTART: from the start) to any later one, or for good
 *   MIXED     (with SNAPSHOT or EMPTY) client 1 has TTL, client 2 TTLB;
 *             client 2's guard is max(TTLB, DEFTTL), DEFTTL = TTL (the
 *             library's default TTL, at least every TTL in use)
 *   INIT      (with EMPTY) `redlock init` on the three nodes after the
 *             restart: if no node holds a live lock key or voted less than
 *             G ago, all declared, else none. The restart hits only while
 *             every live key on nodes 0 and 1 is on node 2 too (the lost
 *             lease left a trace on a node that kept its data)
 * Negative variants (each must yield two valid leases):
 *   TRUSTMARKER   the stamp is not compared: a marker is trusted after a
 *                 restart or a promotion (the old guard)
 *   DECLFOREVER   with SNAPSHOT: a declaration holds whatever its stamp
 *   NOFLUSHCHECK  with FLUSH: a missing marker counts from the process
 *                 start even after a flush
 *   UNSEEN        with PROMOTE: the promotion not seen (no REPLICAOF,
 *                 SLAVEOF or FAILOVER call counted): taken for a restart
 *   BLINDTRUST    with NOINFO: a node without INFO trusts the marker
 *   EVICTVOTES    with EVICT: an evicting node votes
 *   EVICTBACK     with EVICT: the policy set back to noeviction at any later
 *                 moment: the node votes again (a gap in the rules;
 *                 EVICTCOUNT, must pass: a call that finds evictions since
 *                 the last call sets since = max(since, now), a rule
 *                 guard.lua lacks)
 *   OWNGUARD      with MIXED: client 2's guard is its own TTLB
 *   SEEN          with OWNGUARD: the markers recorded longest = TTL
 *                 before the run (must pass with SNAPSHOT, fail with EMPTY)
 *   PERNODE       with INIT: init declares each node holding no live key
 *   UNTRACED      with INIT: the restart at any moment (the lost lease may
 *                 have left no trace): fails with the rules as they are
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

#define MAX(a, b) ((a) > (b) -> (a) : (b))
#ifdef MIXED
#ifndef TTLB
#define TTLB 1
#endif
#ifndef DEFTTL
#define DEFTTL TTL
#endif
#define TTLOF(c) (c == 1 -> TTL : TTLB)
#ifdef OWNGUARD
#define GUARDOF(c) (c == 1 -> TTL : TTLB)
#else
#if TTLB > DEFTTL
#define GUARDOF(c) (c == 1 -> TTL : TTLB)
#else
#define GUARDOF(c) (c == 1 -> TTL : DEFTTL)
#endif
#endif
#if TTL > TTLB && TTL > DEFTTL
#define GMAX TTL
#elif TTLB > DEFTTL
#define GMAX TTLB
#else
#define GMAX DEFTTL
#endif
#else
#define TTLOF(c) TTL
#define GUARDOF(c) GUARDFOR
#define GMAX GUARDFOR
#endif

byte clock;
byte owner[N];      /* 0 free, else the client holding the key */
byte expiry[N];     /* clock at which the key expires (kept across restarts) */
bool marker[N];     /* the marker key exists */
bool forever[N];    /* ... and says complete since forever */
byte since[N];      /* ... else the node time it holds */
byte stamp[N];      /* ... stamped with this replid */
byte replid[N];     /* the node's replid */
byte started[N];    /* when the process started */
bool dropped[N];    /* keys dropped since the start (flush) */
bool aof[N];        /* the process persists every write */
#ifdef MIXED
byte longest[N];    /* the marker's longest guard */
#endif
#ifdef INIT
byte voted[N];      /* the marker's last vote + 1; 0: none */
#endif
#ifdef PROMOTE
bool promoted[N];   /* a replica promoted since its start (up long) */
#endif
#ifdef NOINFO
bool blind[N];      /* INFO refused */
#endif
#ifdef EVICT
bool evicting[N];   /* an evicting memory policy */
#ifdef EVICTCOUNT
bool evicted[N];    /* a key evicted since the last call */
#define EVICTED(n) evicted[n] = true
#else
#define EVICTED(n) skip
#endif
#endif

bool holding[3];
byte until[3];

#define BOTHVALID (holding[1] && holding[2] && clock < until[1] && clock < until[2])
active proctype Monitor() {
	atomic { BOTHVALID -> assert(!BOTHVALID) }
}

/* Fewer states, no behaviour lost: at each tick an expired key or lease
 * is dropped, and a time at least the longest guard ago (since, a start,
 * a vote) is set to 0, which no guard can tell from it. */
#define EXPIRE(k) if :: owner[k] != 0 && expiry[k] <= clock -> owner[k] = 0; expiry[k] = 0 :: else -> skip fi
#define LAPSE(c) if :: holding[c] && until[c] <= clock -> holding[c] = false; until[c] = 0 :: else -> skip fi
#define OLD(t) if :: t != 0 && t + GMAX <= clock -> t = 0 :: else -> skip fi
#ifdef INIT
#define OLDVOTE(k) if :: voted[k] != 0 && voted[k] - 1 + GMAX <= clock -> voted[k] = 0 :: else -> skip fi
#else
#define OLDVOTE(k) skip
#endif
#define AGE(k) EXPIRE(k); OLD(since[k]); OLD(started[k]); OLDVOTE(k)
active proctype Tick() {
	do
	:: atomic { clock < MAXCLOCK -> clock++; AGE(0); AGE(1); AGE(2); LAPSE(1); LAPSE(2) }
	:: else -> break
	od
}

/* a process of node n starts: a new replid */
#define START(n) replid[n]++; started[n] = clock; dropped[n] = false

#ifdef MIXED
#define SAVELONG(n) sLongest[n] = longest[n]
#define LOADLONG(n) longest[n] = sLongest[n]
#define FORGETLONG(n) sLongest[n] = 0
#define WIPELONG(n) longest[n] = 0
#else
#define SAVELONG(n) skip
#define LOADLONG(n) skip
#define FORGETLONG(n) skip
#define WIPELONG(n) skip
#endif
#ifdef INIT
#define WIPEVOTED(n) voted[n] = 0
#else
#define WIPEVOTED(n) skip
#endif

#if defined(SNAPSHOT) || defined(PROMOTE)
/* the snapshot, or the replica's copy, of nodes 0 and 1 */
byte sOwner[2], sExpiry[2], sSince[2], sStamp[2];
bool sMarker[2], sForever[2];
#ifdef MIXED
byte sLongest[2];
#endif
#define SAVE(n) sOwner[n] = owner[n]; sExpiry[n] = expiry[n]; sMarker[n] = marker[n]; \
	sForever[n] = forever[n]; sSince[n] = since[n]; sStamp[n] = stamp[n]; SAVELONG(n)
#define LOAD(n) owner[n] = sOwner[n]; expiry[n] = sExpiry[n]; marker[n] = sMarker[n]; \
	forever[n] = sForever[n]; since[n] = sSince[n]; stamp[n] = sStamp[n]; LOADLONG(n)
#define FORGET(n) sOwner[n] = 0; sExpiry[n] = 0; sMarker[n] = false; sForever[n] = false; \
	sSince[n] = 0; sStamp[n] = 0; FORGETLONG(n)
#endif
#define WIPE(n) owner[n] = 0; marker[n] = false; forever[n] = false; stamp[n] = 0; \
	since[n] = 0; WIPELONG(n); WIPEVOTED(n)

#ifdef INIT
#ifdef UNTRACED
#define TRACED true
#else
/* every live key on node n is on node 2 too */
#define KEPT(n) (owner[n] == 0 || expiry[n] <= clock || (owner[2] == owner[n] && expiry[2] > clock))
#define TRACED (KEPT(0) && KEPT(1))
#endif
bool wiped;
#endif

#ifndef PROMOTE
proctype Fault() {
#ifdef SNAPSHOT
	atomic { SAVE(0); SAVE(1) };
	atomic { LOAD(0); START(0); LOAD(1); START(1); FORGET(0); FORGET(1) }
#endif
#ifdef EMPTY
#ifdef INIT
	atomic { TRACED -> WIPE(0); START(0); WIPE(1); START(1); wiped = true }
#else
	atomic { WIPE(0); START(0); WIPE(1); START(1) }
#endif
#endif
#ifdef FLUSH
	atomic { WIPE(0); dropped[0] = true; WIPE(1); dropped[1] = true }
#endif
#ifdef AOF
	atomic { aof[0] = true; START(0); aof[1] = true; START(1) }
#endif
#ifdef EVICT
	atomic { evicting[0] = true; evicting[1] = true };
	do
	:: atomic { evicting[0] && owner[0] != 0 -> owner[0] = 0; EVICTED(0) }
	:: atomic { evicting[1] && owner[1] != 0 -> owner[1] = 0; EVICTED(1) }
#ifdef EVICTBACK
	:: atomic { evicting[0] || evicting[1] -> evicting[0] = false; evicting[1] = false }
#endif
	od
#endif
}
#endif

#ifdef NOINFO
/* INFO refused to the lock's user on nodes 0 and 1 from any moment
 * (BLINDATSTART: from the start), and allowed again at any later one, or
 * never */
proctype Blind() {
#ifdef BLINDATSTART
	atomic { blind[0] = false; blind[1] = false }
#else
	atomic { blind[0] = true; blind[1] = true };
	atomic { blind[0] = false; blind[1] = false }
#endif
}
#endif

#ifdef PROMOTE
/* node n replaced by its replica: its copy taken at any moment, promoted
 * at any later one (TOGETHER: both nodes' at one moment each) */
#define PROMOTED(n) LOAD(n); FORGET(n); replid[n] = replid[n] + 1; promoted[n] = true
#ifdef TOGETHER
proctype Replica() {
	atomic { SAVE(0); SAVE(1) };
	atomic { PROMOTED(0); PROMOTED(1) }
}
#else
proctype Replica(byte n) {
	atomic { SAVE(n) };
	atomic { PROMOTED(n) }
}
#endif
#endif

/* guard.lua on node i for a call whose own guard is arg: sets may (and g,
 * its guard); makes, restamps the marker */
#ifdef NOFLUSHCHECK
#define DROPPED(i) false
#else
#define DROPPED(i) dropped[i]
#endif
#ifdef PROMOTE
#ifdef UNSEEN
#define SEENPROMOTED(i) false
#else
#define SEENPROMOTED(i) promoted[i]
#endif
#define UPLONG(i) promoted[i]
#else
#define SEENPROMOTED(i) false
#define UPLONG(i) false
#endif
#ifdef DECLFOREVER
#define COMPARED(i) (stamp[i] != replid[i] && !forever[i])
#elif defined(TRUSTMARKER)
#define COMPARED(i) false
#else
#define COMPARED(i) (stamp[i] != replid[i])
#endif
#ifdef NOINFO
#ifdef BLINDTRUST
#define REFUSED(i) false
#else
#define REFUSED(i) blind[i]
#endif
#elif defined(EVICT) && !defined(EVICTVOTES)
#define REFUSED(i) evicting[i]
#else
#define REFUSED(i) false
#endif
#ifdef MIXED
#define GUARDLEN(i, arg) g = MAX(arg, longest[i]); longest[i] = g
#else
#define GUARDLEN(i, arg) g = arg
#endif
/* since = max(since, t), "forever" counting as 0 */
#define RAISE(i, t) since[i] = (forever[i] -> t : MAX(since[i], t)); forever[i] = false

inline guard(i, arg) {
	if
	:: REFUSED(i) -> may = false
	:: else ->
		GUARDLEN(i, arg);
#ifdef NOINFO
		if
		:: blind[i] -> /* BLINDTRUST: the marker trusted, a missing one made now */
			if
			:: !marker[i] -> marker[i] = true; forever[i] = false; since[i] = clock; stamp[i] = 0
			:: else -> skip
			fi
		:: else ->
#endif
		if
		:: !marker[i] -> marker[i] = true; forever[i] = false;
			since[i] = (DROPPED(i) || SEENPROMOTED(i) -> clock : started[i])
		:: marker[i] && COMPARED(i) ->
			if
			:: SEENPROMOTED(i) -> RAISE(i, clock)
			:: !SEENPROMOTED(i) && clock < started[i] + g && !aof[i] && !UPLONG(i) -> RAISE(i, started[i])
			:: else -> skip
			fi
		:: else -> skip
		fi;
#ifdef EVICTCOUNT
		if
		:: evicted[i] -> RAISE(i, clock); evicted[i] = false
		:: else -> skip
		fi;
#endif
		stamp[i] = replid[i];
#ifdef NOINFO
		fi;
#endif
		may = forever[i] || clock >= since[i] + g
	fi
}

#if defined(UNDECLARED) || defined(EVICTCOUNT)
/* a script of another lock, at any moment: it makes the missing markers,
 * counts evictions (a refused vote does too, but these clients do not
 * retry) */
proctype Other() {
	bool may;
	byte g;
	atomic { guard(0, GUARDFOR); guard(1, GUARDFOR); guard(2, GUARDFOR); may = false; g = 0 }
}
#endif

#ifdef INIT
/* `redlock init` on the three nodes after the restart (node.DeclareSet):
 * each node checked at any moment, then, if all passed, each declared at
 * any later moment if it still passes (ONESTEP: the checks in one step,
 * the declarations in one, without the second check) */
#define LIVE(n) (owner[n] != 0 && expiry[n] > clock)
#define RECENT(n) (marker[n] && voted[n] != 0 && clock + 1 < voted[n] + GUARDFOR)
#define PASSES(n) (!LIVE(n) && !RECENT(n))
#define DECLARE(n) marker[n] = true; forever[n] = true; stamp[n] = replid[n]
#define EACH(n, cond, act) :: atomic { cond && !done[n] -> done[n] = true; act }
proctype Init() {
	bool ok, done[N];
#ifdef PERNODE
	atomic { wiped ->
		if :: PASSES(0) -> DECLARE(0) :: else -> skip fi;
		if :: PASSES(1) -> DECLARE(1) :: else -> skip fi;
		if :: PASSES(2) -> DECLARE(2) :: else -> skip fi }
#elif defined(ONESTEP)
	atomic { wiped -> ok = PASSES(0) && PASSES(1) && PASSES(2) };
	atomic { ok -> DECLARE(0); DECLARE(1); DECLARE(2); ok = false }
#else
	atomic { wiped -> ok = true };
	do
	EACH(0, true, ok = ok && PASSES(0))
	EACH(1, true, ok = ok && PASSES(1))
	EACH(2, true, ok = ok && PASSES(2))
	:: atomic { done[0] && done[1] && done[2] -> done[0] = false; done[1] = false; done[2] = false; break }
	od;
	do
	EACH(0, ok, if :: PASSES(0) -> DECLARE(0) :: else -> skip fi)
	EACH(1, ok, if :: PASSES(1) -> DECLARE(1) :: else -> skip fi)
	EACH(2, ok, if :: PASSES(2) -> DECLARE(2) :: else -> skip fi)
	:: atomic { !ok || (done[0] && done[1] && done[2]) -> ok = false; done[0] = false; done[1] = false; done[2] = false; break }
	od
#endif
}
#define VOTED(i) voted[i] = clock + 1
#else
#define VOTED(i) skip
#endif

/* acquire.lua on node i */
#define VOTE(i) :: atomic { !sent[i] -> sent[i] = true; guard(i, GUARDOF(me)); \
	if \
	:: may && (owner[i] == 0 || expiry[i] <= clock) -> \
		owner[i] = me; expiry[i] = clock + TTLOF(me); votes++; VOTED(i) \
	:: else -> skip \
	fi; may = false; g = 0 }

proctype Client(byte me) {
	byte votes, start;
	bool sent[N];
	bool may;
	byte g;

	start = clock;
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	:: votes >= Q -> break
	od;
	atomic {
		if
		:: clock < start + TTLOF(me) - DRIFT -> holding[me] = true; until[me] = start + TTLOF(me) - DRIFT
		:: else -> skip
		fi;
		start = 0; votes = 0; sent[0] = false; sent[1] = false; sent[2] = false /* dead */
	}
}

init {
	atomic {
		byte i;
		for (i : 0 .. N - 1) {
			replid[i] = 1;
#ifndef UNDECLARED
			marker[i] = true; forever[i] = true; stamp[i] = 1;
#endif
#ifdef SEEN
			longest[i] = TTL;
#endif
			skip
		}
		run Client(1); run Client(2);
#ifdef PROMOTE
#ifdef TOGETHER
		run Replica();
#else
		run Replica(0); run Replica(1);
#endif
#else
		run Fault();
#endif
#if defined(UNDECLARED) || defined(EVICTCOUNT)
		run Other();
#endif
#ifdef NOINFO
#ifdef BLINDATSTART
		blind[0] = true; blind[1] = true;
#endif
		run Blind();
#endif
#ifdef INIT
		run Init();
#endif
		skip
	}
}
