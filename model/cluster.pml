/*
 * cluster.pml: the restart guard (node/scripts/guard.lua) on a member of
 * the set that is a Redis Cluster, whose marker is one per slot
 * ("redlock:node:{<tag>}", a key of the slot, moving with its data).
 * Checked with Spin (model/check.sh).
 *
 * Three members (quorum 2), two clients, one Lock each, as in guard.pml:
 * a lease is valid until start + TTL - DRIFT, start taken at its first
 * request; every request lands at any later moment, or never; a script
 * runs atomically. Members 1 and 2 are plain nodes that keep their data.
 * Member 0 is a Cluster of two master shards, 0 and 1; the lock lives in
 * one slot, served by shard `at`. The slot's data is its lock key and its
 * marker: since (or "complete since forever") and the replid of the shard
 * it was stamped on. A shard's replid changes at its restart and at its
 * replica's promotion, never to one used before. Member 0 starts as
 * `redlock init` leaves a brand-new member (declare_shard.lua, then a SET
 * per slot): the marker declared, stamped with shard 0's replid. Neither
 * shard has counted a command that brings slots (came false): the harder
 * case, since came only ever moves since to now.
 *
 * The guard on shard k for the slot's marker, as guard.lua's judged,
 * f.moved and f.slots_came, with G = TTL:
 *   stamped with replid[k]: no vote while now < since + G (the hot path);
 *   stamped with another replid: since = max(since, now) (f.moved: on a
 *     Cluster whenever the stamp differs), restamped;
 *   missing: since = now if a slot can have come to k since its start
 *     (came[k]: master_replid2 set, or a CLUSTER ADDSLOTS, SETSLOT, ... or
 *     RESTORE(-ASKING) call counted), else k's process start; stamped.
 *     (f.dropped, a flush or an eviction, is guard.pml's.)
 *
 * Faults on member 0 (-D, combinable), each at any moment:
 *   EMPTY     each shard restarts without data: the slot's key and marker
 *             go if it serves the slot; a new replid and start, nothing
 *             counted since (came false)
 *   MIGRATE   the slot moves to the other shard with its key and marker,
 *             any number of times (MOVES: at most that many), counted on
 *             the target (redis-cli --cluster reshard: CLUSTER SETSLOT and
 *             MIGRATE's RESTORE-ASKING run there; the source's SETSLOT is
 *             left out, the weaker assumption)
 *   FAILOVER  each shard replaced by its replica: the shard's data as of
 *             any earlier moment (the slot's key and marker, or nothing if
 *             it did not serve the slot then), a new replid,
 *             master_replid2 set (came); the old primary is gone
 *   ONE       with EMPTY or FAILOVER: one shard, either, instead of each
 *   NOHOME    with MIGRATE: the slot never moves to the shard whose replid
 *             its marker bears (with FAILOVER, the rules hold only so)
 *   GOSSIP    the slot reassigned to the other shard without its data
 *             (CLUSTER SETSLOT NODE run on another node, spread by
 *             gossip): the old shard drops the slot's keys, the new one
 *             has none and counted nothing. Outside the rules' assumption
 * Negative variants (each must yield two valid leases):
 *   NOCAME    with EMPTY and MIGRATE: a missing marker counts from the
 *             start even when slots came (f.slots_came left out)
 *   ATONCE    with EMPTY: a missing marker votes at once (since 0)
 *   TRUSTMOVED with FAILOVER: a marker stamped on other data is kept (as
 *             f.moved without its Cluster clause keeps it on a promoted
 *             replica up longer than G)
 *   GOSSIP    as it is
 *   FAILOVER and MIGRATE without NOHOME: a marker comes back to the shard
 *             that stamped it after a failover elsewhere lost a lease (a
 *             gap in the rules)
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
#define MAXCLOCK 3
#endif
#define G TTL

#define MAX(a, b) ((a) > (b) -> (a) : (b))

byte clock;
byte owner[N];      /* 0 free, else the client holding the key (member 0: the slot's) */
byte expiry[N];     /* clock at which the key expires */
/* the slot's marker, on the shard that serves it */
bool marker;        /* the marker key exists */
bool forever;       /* ... and says complete since forever */
byte since;         /* ... else the node time it holds */
byte stamp;         /* ... stamped with this replid */
byte at;            /* the shard serving the slot */
/* member 0's shards */
byte replid[2];     /* shard k's: k + 1, + 2 at each restart or promotion */
byte started[2];    /* when the process started */
bool came[2];       /* slots can have come to it since its start (f.slots_came) */

bool holding[3];
byte until[3];

#define BOTHVALID (holding[1] && holding[2] && clock < until[1] && clock < until[2])
active proctype Monitor() {
	atomic { BOTHVALID -> assert(!BOTHVALID) }
}

#ifdef FAILOVER
/* each shard's replica's copy of the slot's data, if it served the slot */
bool cHas[2], cMarker[2], cForever[2];
byte cOwner[2], cExpiry[2], cSince[2], cStamp[2];
#define CEXPIRE(k) if :: cOwner[k] != 0 && cExpiry[k] <= clock -> cOwner[k] = 0; cExpiry[k] = 0 :: else -> skip fi
#define COLD(k) OLD(cSince[k])
#else
#define CEXPIRE(k) skip
#define COLD(k) skip
#endif

/* Fewer states, no behaviour lost: at each tick an expired key or lease
 * is dropped, and a time at least G ago (since, a start) is set to 0,
 * which no guard can tell from it. */
#define EXPIRE(k) if :: owner[k] != 0 && expiry[k] <= clock -> owner[k] = 0; expiry[k] = 0 :: else -> skip fi
#define LAPSE(c) if :: holding[c] && until[c] <= clock -> holding[c] = false; until[c] = 0 :: else -> skip fi
#define OLD(t) if :: t != 0 && t + G <= clock -> t = 0 :: else -> skip fi
active proctype Tick() {
	do
	:: atomic { clock < MAXCLOCK -> clock++; EXPIRE(0); EXPIRE(1); EXPIRE(2);
		OLD(since); OLD(started[0]); OLD(started[1]); CEXPIRE(0); CEXPIRE(1); COLD(0); COLD(1);
		LAPSE(1); LAPSE(2) }
	:: else -> break
	od
}

/* the slot's data gone (member 0) */
#define WIPE owner[0] = 0; expiry[0] = 0; marker = false; forever = false; since = 0; stamp = 0
/* a process of shard k starts empty */
#define NEWID(k) replid[k] = replid[k] + 2
#define START(k) NEWID(k); started[k] = clock; came[k] = false

/* ONE: one shard, either, instead of each at its own moment */
#ifdef ONE
#define PICK(k) if :: k = 0 :: k = 1 fi
#else
#define PICK(k) skip
#endif

#ifdef EMPTY
proctype Restart(byte k) {
	atomic { PICK(k); if :: at == k -> WIPE :: else -> skip fi; START(k) }
}
#endif

#ifdef MIGRATE
/* the slot moves with its data: nothing of the slot changes but `at`
 * (NOHOME: never to the shard whose replid the marker bears) */
#ifdef NOHOME
#define MOVE :: atomic { !(marker && stamp == replid[1 - at]) MOVES_LEFT -> at = 1 - at; came[at] = true; MOVED }
#elif defined(MOVES)
#define MOVE :: atomic { true MOVES_LEFT -> at = 1 - at; came[at] = true; MOVED }
#else
#define MOVE :: atomic { at = 1 - at; came[at] = true }
#endif
#ifdef MOVES
#define MOVES_LEFT && moves < MOVES
#define MOVED moves++
#else
#define MOVES_LEFT
#define MOVED skip
#endif
proctype Migrate() {
#ifdef MOVES
	byte moves;
#endif
	do
	MOVE
	od
}
#endif

#ifdef GOSSIP
/* the slot reassigned without its data, by a command run elsewhere */
proctype Gossip() {
	atomic { at = 1 - at; WIPE }
}
#endif

#ifdef FAILOVER
/* shard k replaced by its replica: its copy taken at any moment, promoted
 * at any later one */
proctype Replica(byte k) {
	atomic {
		PICK(k);
		cHas[k] = (at == k);
		if
		:: at == k -> cOwner[k] = owner[0]; cExpiry[k] = expiry[0]; cMarker[k] = marker;
			cForever[k] = forever; cSince[k] = since; cStamp[k] = stamp
		:: else -> skip
		fi
	};
	atomic {
		if
		:: at == k && cHas[k] -> owner[0] = cOwner[k]; expiry[0] = cExpiry[k]; marker = cMarker[k];
			forever = cForever[k]; since = cSince[k]; stamp = cStamp[k]
		:: at == k && !cHas[k] -> WIPE
		:: else -> skip
		fi;
		NEWID(k); came[k] = true;
		cHas[k] = false; cOwner[k] = 0; cExpiry[k] = 0; cMarker[k] = false; cForever[k] = false;
		cSince[k] = 0; cStamp[k] = 0
	}
}
#endif

#ifdef NOCAME
#define CAME(k) false
#else
#define CAME(k) came[k]
#endif

/* guard.lua on the shard serving the slot: sets may */
inline guard() {
	if
	:: !marker ->
		marker = true;
#ifdef ATONCE
		forever = true
#else
		forever = false; since = (CAME(at) -> clock : started[at])
#endif
	:: marker && stamp != replid[at] ->
#ifndef TRUSTMOVED
		since = (forever -> clock : MAX(since, clock)); forever = false
#else
		skip
#endif
	:: else -> skip
	fi;
	stamp = replid[at];
	may = forever || clock >= since + G
}

/* A Lock's start is the moment its first request lands: an earlier start
 * only shortens the lease. */
#define BEGIN if :: votes == 0 && !sent[0] && !sent[1] && !sent[2] -> start = clock :: else -> skip fi

#define FREE(i) (owner[i] == 0 || expiry[i] <= clock)
#define TAKE(i) owner[i] = me; expiry[i] = clock + TTL; votes++
/* acquire.lua on member 0 (the slot's shard) and on members 1 and 2 */
#define VOTE0 :: atomic { !sent[0] -> BEGIN; sent[0] = true; guard(); \
	if :: may && FREE(0) -> TAKE(0) :: else -> skip fi; may = false }
#define VOTE(i) :: atomic { !sent[i] -> BEGIN; sent[i] = true; \
	if :: FREE(i) -> TAKE(i) :: else -> skip fi }

proctype Client(byte me) {
	byte votes, start;
	bool sent[N];
	bool may;

	do
	VOTE0
	VOTE(1)
	VOTE(2)
	:: votes >= Q -> break
	od;
	atomic {
		if
		:: clock < start + TTL - DRIFT -> holding[me] = true; until[me] = start + TTL - DRIFT
		:: else -> skip
		fi;
		start = 0; votes = 0; sent[0] = false; sent[1] = false; sent[2] = false /* dead */
	}
}

init {
	atomic {
		replid[0] = 1; replid[1] = 2;
		marker = true; forever = true; stamp = 1; at = 0;
		run Client(1); run Client(2);
#ifdef ONE
#ifdef EMPTY
		run Restart(0);
#endif
#ifdef FAILOVER
		run Replica(0);
#endif
#else
#ifdef EMPTY
		run Restart(0); run Restart(1);
#endif
#ifdef FAILOVER
		run Replica(0); run Replica(1);
#endif
#endif
#ifdef MIGRATE
		run Migrate();
#endif
#ifdef GOSSIP
		run Gossip();
#endif
		skip
	}
}
