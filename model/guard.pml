/*
 * guard.pml: the restart guard (node/scripts/guard.lua) against the ways a
 * node forgets leases: a restart from a snapshot (Redis's default
 * persistence), a restart without data, a flush on a running node, a
 * restart with an append-only file that keeps every write, an AOF
 * switched off at run time, a key-level backup restored into a running
 * node, a failover to a lagging replica, a writable replica's full
 * resync, evictions, INFO refused, clients with different TTLs, and
 * `redlock init` run after a loss. Checked with Spin (model/check.sh).
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
 * <voted>" with the loss count and the process that stamped it; replid
 * (the stamp) changes at each restart and promotion; the node counts, per
 * process, its losses: calls that drop or replace data (FLUSHALL,
 * FLUSHDB, SWAPDB, DEBUG, RESTORE) and evictions (the model counts
 * evictions apart: EVICTCOUNT below). A call's guard G = max(its own,
 * longest), and it raises longest:
 *   INFO refused, an evicting memory policy, or a role other than
 *     master: no vote;
 *   marker missing: since = now after a loss (the count > 0) or a
 *     promotion since the start, else the process start;
 *   stamp != replid: after a promotion since the start, since =
 *     max(since, now); else (a restart) within G of the start, AOF or
 *     not, since = max(since, start); else kept;
 *   on every call, losses since the stamp: stamped by this process with
 *     a count other than the node's, or by another process while the
 *     node's count since its start is > 0: since = max(since, now);
 *   then restamped (replid, process, count);
 *   no vote while now < since + G ("forever" never holds back).
 * HOTPATH adds rule 1, guard.lua's hot path: a marker stamped with the
 * current replid on a master (INFO answered), whose longest is at least
 * the call's guard, is judged by itself, without the steps above: no vote
 * while now < since + G; else a vote if its voted (the last call the
 * steps above let vote, the model's hot[]) is less than one tick old (the
 * code's second), without the loss count or the memory policy; else the
 * steps above, which refresh voted when they let the call vote. Without
 * HOTPATH every call takes the steps above (the once-a-second check made
 * on every call).
 *
 * Faults (-D, one at a time):
 *   SNAPSHOT  the nodes save a snapshot at any moment, and later restart
 *             from it: the marker and the keys as they were then
 *   EMPTY     the nodes restart without data
 *   FLUSH     FLUSHALL on the running nodes
 *   AOF       the nodes restart with every write kept
 *   AOFOFF    the nodes run with every write kept; at any moment the AOF
 *             is switched off at run time (CONFIG SET appendonly no: the
 *             persisted keys and marker frozen as then); later they crash
 *             and restart loading that copy, with the AOF on again (the
 *             config file says so): a new replid, a new start
 *   RESTORE   a key-level backup (DUMP of every key, the marker among
 *             them) of the nodes taken at any moment; at any later moment
 *             FLUSHALL, then at any later one RESTORE of the copy, each
 *             counted; no restart, the replid kept. A call may land
 *             between the two (its quarantine marker is then overwritten
 *             by the restored one). SWAPDB with a db whose marker is in
 *             order, and DEBUG RELOAD (the last snapshot loaded into the
 *             running process), are the same shape: the data replaced,
 *             a marker in order, the count raised.
 *             ACROSS: the nodes restart keeping every write after the
 *             copy (the copy is their previous process's, restored into
 *             a process that may be up longer than G)
 *             OTHERS (with HOTPATH): another lock's call on the three
 *             nodes at any moment (it votes there, taking no lock key, so
 *             a copy can hold a fresh voted without a key of these
 *             clients); OLDCOPY: the copy restored only once the voted it
 *             holds is at least one tick old (must pass; without it, the
 *             limit docs/restart-guard.md states: a marker restored within
 *             a second of the vote it records is trusted for the rest of
 *             that second, and two leases are valid)
 *   PROMOTE   each node replaced, at any moment, by its replica: the keys
 *             and marker as of any earlier moment, a new replid, a
 *             process up long before (its start protects nothing);
 *             TOGETHER: both copied at one moment, promoted at one
 *   EVICT     the nodes switched to an evicting policy at any moment; then
 *             a lock key may vanish at any moment, the marker stays
 *   RESYNC    nodes 0 and 1 are writable replicas (replica-read-only
 *             no, a member pointed at a replica); at any moment each
 *             resyncs in full from its primary: its keys replaced by the
 *             primary's (no lock key), the primary's marker "complete
 *             since forever", stamped with the replid the replica now
 *             shares. With the role rule nodes 0 and 1 never vote, so no
 *             lease is ever granted: the check is of safety only
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
 *   AOFTRUST      with AOF or AOFOFF: a restart of a process that keeps
 *                 every write keeps the marker (the old AOF exemption):
 *                 fails with AOFOFF
 *   NOLOSSCOUNT   with RESTORE: the loss count compared only for a
 *                 missing marker (the old guard)
 *   THISPROC      with RESTORE and ACROSS: the count compared only on a
 *                 marker this process stamped
 *   NOROLE        with RESYNC: the role not checked: a replica votes
 *   NOFLUSHCHECK  with FLUSH: a missing marker counts from the process
 *                 start even after a flush
 *   UNSEEN        with PROMOTE: the promotion not seen (no REPLICAOF,
 *                 SLAVEOF or FAILOVER call counted): taken for a restart
 *   BLINDTRUST    with NOINFO: a node without INFO trusts the marker
 *   EVICTVOTES    with EVICT: an evicting node votes
 *   EVICTBACK     with EVICT: the policy set back to noeviction at any later
 *                 moment: the node votes again (EVICTCOUNT, must pass: a
 *                 call that finds evictions since the last call sets
 *                 since = max(since, now), as guard.lua's rule 9 does with
 *                 its count of evicted keys)
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
byte proc[N];       /* the node's process: changes at each start and
                       promotion (a replica's process takes over) */
byte lost[N];       /* the process's count of losses since its start: calls
                       that drop or replace data (FLUSHALL, FLUSHDB, SWAPDB,
                       DEBUG, RESTORE; evictions: EVICTCOUNT) */
byte mproc[N];      /* the marker's process (the one that stamped it; 0:
                       none of this node's) */
byte mcount[N];     /* ... and that process's count then */
bool aof[N];        /* the process persists every write */
#ifdef RESYNC
bool replica[N];    /* the node's role is not master */
#endif
#ifdef HOTPATH
byte hot[N];        /* the marker's voted + 1 while less than one tick old
                       (the tick at which the guard last let a call vote);
                       0: older, or none */
#define HOTWIPE(n) hot[n] = 0
#else
#define HOTWIPE(n) skip
#endif
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
#define AGE(k) EXPIRE(k); OLD(since[k]); OLD(started[k]); OLDVOTE(k); HOTWIPE(k)
active proctype Tick() {
	do
	:: atomic { clock < MAXCLOCK -> clock++; AGE(0); AGE(1); AGE(2); LAPSE(1); LAPSE(2) }
	:: else -> break
	od
}

/* a process of node n starts: a new replid */
#define START(n) replid[n]++; proc[n]++; started[n] = clock; lost[n] = 0

#ifdef HOTPATH
/* the copy's voted, back with it: still less than one tick old if
 * restored within the tick it was taken */
#define SAVEHOT(n) sHot[n] = hot[n]
#define LOADHOT(n) hot[n] = (sHot[n] == clock + 1 -> sHot[n] : 0)
#define FORGETHOT(n) sHot[n] = 0
#else
#define SAVEHOT(n) skip
#define LOADHOT(n) skip
#define FORGETHOT(n) skip
#endif
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

#if defined(SNAPSHOT) || defined(PROMOTE) || defined(AOFOFF) || defined(RESTORE)
/* the snapshot, the replica's copy, the frozen AOF or the key-level
 * backup (DUMP) of nodes 0 and 1 */
byte sOwner[2], sExpiry[2], sSince[2], sStamp[2], sProc[2], sCount[2];
bool sMarker[2], sForever[2];
#ifdef MIXED
byte sLongest[2];
#endif
#ifdef HOTPATH
byte sHot[2];
#endif
#define SAVE(n) sOwner[n] = owner[n]; sExpiry[n] = expiry[n]; sMarker[n] = marker[n]; \
	sForever[n] = forever[n]; sSince[n] = since[n]; sStamp[n] = stamp[n]; sProc[n] = mproc[n]; \
	sCount[n] = mcount[n]; SAVELONG(n); SAVEHOT(n)
#define LOAD(n) owner[n] = sOwner[n]; expiry[n] = sExpiry[n]; marker[n] = sMarker[n]; \
	forever[n] = sForever[n]; since[n] = sSince[n]; stamp[n] = sStamp[n]; mproc[n] = sProc[n]; \
	mcount[n] = sCount[n]; LOADLONG(n); LOADHOT(n)
#define FORGET(n) sOwner[n] = 0; sExpiry[n] = 0; sMarker[n] = false; sForever[n] = false; \
	sSince[n] = 0; sStamp[n] = 0; sProc[n] = 0; sCount[n] = 0; FORGETLONG(n); FORGETHOT(n)
#endif
#define WIPE(n) owner[n] = 0; marker[n] = false; forever[n] = false; stamp[n] = 0; \
	since[n] = 0; mproc[n] = 0; mcount[n] = 0; WIPELONG(n); WIPEVOTED(n); HOTWIPE(n)

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

#if defined(HOTPATH) && defined(OLDCOPY)
/* the copy's voted at least one tick old */
#define OLDENOUGH (sHot[0] != clock + 1 && sHot[1] != clock + 1)
#else
#define OLDENOUGH true
#endif

#if !defined(PROMOTE) && !defined(RESYNC)
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
	atomic { WIPE(0); lost[0]++; WIPE(1); lost[1]++ }
#endif
#ifdef AOF
	atomic { aof[0] = true; START(0); aof[1] = true; START(1) }
#endif
#ifdef AOFOFF
	/* every write kept (aof set at init) until the AOF is switched off:
	 * the persisted copy frozen; later a crash, and a process that loads
	 * it with the AOF on again (the config says so) */
	atomic { SAVE(0); aof[0] = false; SAVE(1); aof[1] = false };
	atomic { LOAD(0); START(0); aof[0] = true; LOAD(1); START(1); aof[1] = true; FORGET(0); FORGET(1) }
#endif
#ifdef RESTORE
	/* a key-level backup (DUMP of every key, the marker among them);
	 * ACROSS: the nodes restart, keeping every write, after it (the copy
	 * is their previous process's); later FLUSHALL, then RESTORE of the
	 * copy, each counted; a call may land between the two */
	atomic { SAVE(0); SAVE(1) };
#ifdef ACROSS
	atomic { START(0); START(1) };
#endif
	atomic { WIPE(0); lost[0]++; WIPE(1); lost[1]++ };
	atomic { OLDENOUGH -> LOAD(0); lost[0]++; LOAD(1); lost[1]++; FORGET(0); FORGET(1) }
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
#define PROMOTED(n) LOAD(n); FORGET(n); replid[n] = replid[n] + 1; proc[n]++; lost[n] = 0; \
	promoted[n] = true
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

#ifdef RESYNC
/* writable replica n (replica-read-only no) resyncs in full from its
 * primary, at any moment: its keys replaced by the primary's data, no lock
 * key, the primary's marker in order ("complete since forever"), stamped
 * with the replid the replica now shares; stamped by the primary's
 * process, whose count was 0 (a full sync counts nothing) */
proctype Resync(byte n) {
	atomic { owner[n] = 0; expiry[n] = 0; marker[n] = true; forever[n] = true; since[n] = 0;
		replid[n]++; stamp[n] = replid[n]; mproc[n] = 0; mcount[n] = 0; WIPELONG(n); WIPEVOTED(n);
		HOTWIPE(n) }
}
#endif

/* guard.lua on node i for a call whose own guard is arg: sets may (and g,
 * its guard); makes, restamps the marker */
#ifdef NOFLUSHCHECK
#define DROPPED(i) false
#else
#define DROPPED(i) (lost[i] > 0)
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
#if defined(NOINFO) && !defined(BLINDTRUST)
#define BLINDREF(i) blind[i]
#else
#define BLINDREF(i) false
#endif
#if defined(EVICT) && !defined(EVICTVOTES)
#define EVICTREF(i) evicting[i]
#else
#define EVICTREF(i) false
#endif
#if defined(RESYNC) && !defined(NOROLE)
#define ROLEREF(i) replica[i]
#else
#define ROLEREF(i) false
#endif
#define REFUSED(i) (BLINDREF(i) || EVICTREF(i) || ROLEREF(i))
#ifdef AOFTRUST
#define AOFKEPT(i) aof[i]
#else
#define AOFKEPT(i) false
#endif
/* losses since the marker was stamped: counted by the process that stamped
 * it, or any since the start of another one (THISPROC: only the first;
 * NOLOSSCOUNT: none, the count compared only for a missing marker) */
#ifdef NOLOSSCOUNT
#define COUNTED(i) skip
#else
#ifdef THISPROC
#define LOSTSINCE(i) (mproc[i] == proc[i] && mcount[i] != lost[i])
#else
#define LOSTSINCE(i) ((mproc[i] == proc[i] && mcount[i] != lost[i]) || (mproc[i] != proc[i] && lost[i] > 0))
#endif
#define COUNTED(i) if :: LOSTSINCE(i) -> RAISE(i, clock) :: else -> skip fi
#endif
#ifdef MIXED
#define GUARDLEN(i, arg) g = MAX(arg, longest[i]); longest[i] = g
#else
#define GUARDLEN(i, arg) g = arg
#endif
/* since = max(since, t), "forever" counting as 0 */
#define RAISE(i, t) since[i] = (forever[i] -> t : MAX(since[i], t)); forever[i] = false

#ifdef HOTPATH
#ifdef NOINFO
#define ANSWERS(i) !blind[i]
#else
#define ANSWERS(i) true
#endif
#ifdef MIXED
#define HOTG(i, arg) longest[i]
#else
#define HOTG(i, arg) arg
#endif
/* rule 1: the stamp matches, INFO answered, a master, longest >= the
 * call's guard (the role is all it asks of INFO beyond the replid) */
#define MATCHES(i, arg) (ANSWERS(i) && !ROLEREF(i) && marker[i] && stamp[i] == replid[i] && HOTG(i, arg) >= arg)
#define DUE(i, arg) (forever[i] || clock >= since[i] + HOTG(i, arg))
/* the steps below let the call vote: voted refreshed (not by a blind
 * node's, which writes no voted) */
#define REFRESH(i) if :: may && ANSWERS(i) -> hot[i] = clock + 1 :: else -> skip fi
#else
#define REFRESH(i) skip
#endif

inline guard(i, arg) {
#ifdef HOTPATH
	if
	:: MATCHES(i, arg) && !DUE(i, arg) -> may = false /* rule 1: quarantined */
	:: MATCHES(i, arg) && DUE(i, arg) && hot[i] == clock + 1 -> may = true /* rule 1: trusted */
	:: else ->
#endif
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
		:: else ->
			if
			:: COMPARED(i) ->
				if
				:: SEENPROMOTED(i) -> RAISE(i, clock)
				:: !SEENPROMOTED(i) && clock < started[i] + g && !AOFKEPT(i) && !UPLONG(i) -> RAISE(i, started[i])
				:: else -> skip
				fi
			:: else -> skip
			fi;
			COUNTED(i)
		fi;
#ifdef EVICTCOUNT
		if
		:: evicted[i] -> RAISE(i, clock); evicted[i] = false
		:: else -> skip
		fi;
#endif
		stamp[i] = replid[i]; mproc[i] = proc[i]; mcount[i] = lost[i];
#ifdef NOINFO
		fi;
#endif
		may = forever[i] || clock >= since[i] + g;
		REFRESH(i)
	fi
#ifdef HOTPATH
	fi
#endif
}

#if defined(UNDECLARED) || defined(EVICTCOUNT) || defined(OTHERS)
/* a script of another lock, at any moment: it makes the missing markers,
 * counts evictions (a refused vote does too, but these clients do not
 * retry), refreshes voted (OTHERS) */
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
#define DECLARE(n) marker[n] = true; forever[n] = true; stamp[n] = replid[n]; mproc[n] = proc[n]; \
	mcount[n] = lost[n]; HOTWIPE(n)
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
			replid[i] = 1; proc[i] = 1;
#ifndef UNDECLARED
			marker[i] = true; forever[i] = true; stamp[i] = 1; mproc[i] = 1;
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
#elif defined(RESYNC)
		replica[0] = true; replica[1] = true;
		run Resync(0); run Resync(1);
#else
#ifdef AOFOFF
		aof[0] = true; aof[1] = true;
#endif
		run Fault();
#endif
#if defined(UNDECLARED) || defined(EVICTCOUNT) || defined(OTHERS)
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
