/*
 * semaphore.pml: the semaphore (at most K holders at once) built of K
 * slots, each slot an ordinary lock of its own on every node. Checked
 * with Spin (model/check.sh).
 *
 * Three nodes, quorum 2, K = 2 slots, three clients (one more than there
 * are permits), one permit each. A client takes a permit by taking a slot
 * with an ordinary acquire round: it picks any slot of the K it believes
 * in and sends an acquire to every node; a node grants if the slot's key
 * there is free or expired, or already the client's (re-entry: the
 * expiry is raised to a full TTL, never lowered), and sets it for TTL
 * ticks. The round returns at a quorum of grants; a permit is valid until
 * start + TTL - DRIFT, and only if that has not passed when the quorum
 * came; a quorum that came too late is given back. A holder ends its
 * permit and releases the slot at any moment. Every request is a step of
 * its client taken at any later moment, or never (lost); a node runs each
 * script atomically. A clock ticks; a key expires TTL ticks after it was
 * set.
 *
 * Left out, as it only takes keys, and a key taken refuses requests,
 * which to a node is the same as a request lost: a round that fails and
 * the client's next round on another slot (the model's client picks that
 * slot from the start, and starts at any moment); a give-back or release
 * lost or late (modelled as delivered to every node that is up at once);
 * requests still on their way after the quorum (lost); a second slot
 * granted to one Acquire waiting on all of them, and given back; a
 * holder that never releases (its release may come after its permit
 * ended). A
 * re-entered key counts as a fresh grant: its expiry is raised to a full
 * TTL. And the round's start is the moment its first request lands: a
 * start taken earlier only shortens the permit.
 *
 * Property (assert in Monitor): at no tick are more permits valid than
 * the smallest K of the clients that went on to acquire: K itself, but
 * under PERMITCHECK, where it is the K of those that passed the check.
 * Under PERMITCHECK also (assert when a client passes the check): every
 * client that passed the check before used the same K.
 *
 * Variants (-D):
 *   COUNTS    one semaphore key per node holding the clients it admitted,
 *             each admission for TTL ticks: a node admits a client while
 *             fewer than K live admissions are there; a client holds a
 *             permit when a quorum admitted it. Must fail: admissions on
 *             {0,1}, {1,2}, {0,2} give three valid permits.
 *   MISMATCH  client 1 believes there are K + 1 permits (slots 0..K); the
 *             others K. Must fail without PERMITCHECK.
 *   PERMITCHECK before its round a client reads the permit count stored
 *             for the name from every node, each read delivered at any
 *             later moment or never; a node's script stores the client's
 *             count where none is stored (set once, never changed) and
 *             answers the stored one. The client goes on at a quorum of
 *             answers equal to its own count, and stops for good
 *             (ErrConfig) at an answer that differs before then (one
 *             after then is not waited for: more permissive than waiting
 *             for every answer). Reads not yet delivered may still land
 *             later, storing the count where none is. With MISMATCH it
 *             must pass.
 *   CRASH     one node goes down at any time, and restarts empty (no slot
 *             keys, no stored count) a TTL after it went down (the lock's
 *             own rule); must pass, but with MISMATCH PERMITCHECK, where
 *             it must fail: a count stored on two nodes is left on one,
 *             and a client with another count reads the restarted node
 *             and the third one, and passes.
 *   SHARED    clients 2 and 3 take their permits with one owner id (what
 *             semaphore.go rules out: every Acquire has an owner of its
 *             own, even under WithOwner): a slot held by one is
 *             re-entered by the other. Must fail.
 */
#define N 3
#define Q 2
#ifndef K
#define K 2
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

/* the count client c believes in; the slots there are */
#ifdef MISMATCH
#define KOF(c) (c == 1 -> K + 1 : K)
#define NS (K + 1)
#else
#define KOF(c) K
#define NS K
#endif
#ifdef COUNTS
#undef NS
#define NS 1
#endif

/* the owner id a client acquires with */
#ifdef SHARED
#define ME (me == 3 -> 2 : me)
#else
#define ME me
#endif

byte clock;
bool up[N];
byte owner[NS * N];    /* slot s on node i at s * N + i: 0 free, else the owner id */
byte expiry[NS * N];   /* the clock at which that key expires */
#ifdef COUNTS
byte admitted[N * 4];  /* node i, client c at i * 4 + c: the clock at which the admission expires, 0 none */
#endif
#ifdef PERMITCHECK
byte stored[N];        /* the permit count stored on node i, 0 none */
byte agreed;           /* the count of the clients that passed the check, 0 none yet */
#endif

bool permitted[4];     /* client c holds a permit */
byte endsAt[4];        /* ... valid while clock < endsAt[c] */
byte lim = 255;        /* the smallest K of the clients that went on to acquire */

#define VALIDP(c) (permitted[c] && clock < endsAt[c] -> 1 : 0)
#define OVER (VALIDP(1) + VALIDP(2) + VALIDP(3) > lim)
active proctype Monitor() {
	atomic { OVER -> assert(!OVER) }
}

/* The clock ticks; what expired is forgotten (an expired key is free, a
 * permit past its validity counts for nothing): fewer states, the same
 * behaviour. */
active proctype Tick() {
	byte j;
	do
	:: clock < MAXCLOCK -> atomic {
		clock++;
		for (j : 0 .. NS * N - 1) {
			if :: expiry[j] != 0 && expiry[j] <= clock -> owner[j] = 0; expiry[j] = 0 :: else -> skip fi
		}
#ifdef COUNTS
		for (j : 0 .. N * 4 - 1) {
			if :: admitted[j] != 0 && admitted[j] <= clock -> admitted[j] = 0 :: else -> skip fi
		}
#endif
		for (j : 1 .. 3) {
			if :: permitted[j] && endsAt[j] <= clock -> permitted[j] = false; endsAt[j] = 0 :: else -> skip fi
		}
		j = 0 }
	:: else -> break
	od
}

#ifdef CRASH
proctype Crash() {
	byte n, since, s;
	if
	:: n = 0
	:: n = 1
	:: n = 2
	fi;
	atomic { up[n] = false; since = clock };
	atomic { clock >= since + TTL ->
		for (s : 0 .. NS - 1) {
			owner[s * N + n] = 0; expiry[s * N + n] = 0
		}
#ifdef PERMITCHECK
		stored[n] = 0;
#endif
		s = 0; since = 0;
		up[n] = true }
}
#endif

#define AT(i) (slot * N + i)

/* the round's start is when its first request lands */
#define FIRST if :: !sent[0] && !sent[1] && !sent[2] -> start = clock :: else -> skip fi

/* at a quorum the round returns: a permit if its validity has not passed,
 * else what it took is given back */
#define DECIDE if \
	:: votes >= Q -> \
		sent[0] = false; sent[1] = false; sent[2] = false; votes = 0; \
		if \
		:: clock < start + TTL - DRIFT -> permitted[me] = true; endsAt[me] = start + TTL - DRIFT; start = 0; goto holds \
		:: else -> GIVEBACK; start = 0; goto stopped \
		fi \
	:: else -> skip \
	fi

#ifdef COUNTS
/* the design the issue warns about: a count of live admissions per node */
#define LIVE(i, c) (admitted[i * 4 + c] > clock -> 1 : 0)
#define VOTE(i) :: atomic { !sent[i] && up[i] -> FIRST; sent[i] = true; \
	if \
	:: LIVE(i, me) || LIVE(i, 1) + LIVE(i, 2) + LIVE(i, 3) < K -> \
		admitted[i * 4 + me] = clock + TTL; votes++ \
	:: else -> skip \
	fi; DECIDE }
#define GIVEBACK for (j : 0 .. N - 1) { if :: up[j] -> admitted[j * 4 + me] = 0 :: else -> skip fi }; j = 0
#else
/* acquire.lua on node i for the slot's key: free, expired, or re-entered */
#define VOTE(i) :: atomic { !sent[i] && up[i] -> FIRST; sent[i] = true; \
	if \
	:: owner[AT(i)] == 0 || expiry[AT(i)] <= clock || owner[AT(i)] == ME -> \
		owner[AT(i)] = ME; \
		if :: expiry[AT(i)] < clock + TTL -> expiry[AT(i)] = clock + TTL :: else -> skip fi; \
		votes++ \
	:: else -> skip \
	fi; DECIDE }
/* release.lua on every node: drop the client's hold of the slot (under
 * SHARED the other's hold would stay: no releases there) */
#ifdef SHARED
#define GIVEBACK skip
#else
#define GIVEBACK for (j : 0 .. N - 1) { \
	if :: up[j] && owner[AT(j)] == ME -> owner[AT(j)] = 0; expiry[AT(j)] = 0 :: else -> skip fi }; j = 0
#endif
#endif

/* the permits check: read the count on node i, storing the client's where
 * none is */
#ifdef PERMITCHECK
#define READ(i) :: atomic { !asked[i] && up[i] -> asked[i] = true; \
	if :: stored[i] == 0 -> stored[i] = KOF(me) :: else -> skip fi; \
	if \
	:: stored[i] != KOF(me) -> answers = 0; goto stopped /* ErrConfig */ \
	:: else -> answers++ \
	fi; \
	if \
	:: answers >= Q -> /* passed */ \
		assert(agreed == 0 || agreed == KOF(me)); \
		agreed = KOF(me); answers = 0; \
		if :: KOF(me) < lim -> lim = KOF(me) :: else -> skip fi; \
		goto acquire \
	:: else -> skip \
	fi }
/* a read the client no longer waits for lands */
#define LATE(i) :: atomic { !asked[i] && up[i] -> asked[i] = true; \
	if :: stored[i] == 0 -> stored[i] = KOF(me) :: else -> skip fi }
#define LATEREADS LATE(0) LATE(1) LATE(2)
#else
#define LATEREADS
#endif

proctype Client(byte me; byte slot) {
	byte votes, start, j;
	bool sent[N];
#ifdef PERMITCHECK
	bool asked[N];
	byte answers;
	do
	READ(0)
	READ(1)
	READ(2)
	od;
acquire:
#endif
	do
	VOTE(0)
	VOTE(1)
	VOTE(2)
	LATEREADS
	od;
holds:
	atomic { permitted[me] = false; endsAt[me] = 0; GIVEBACK }; /* Release */
stopped:
	do
	LATEREADS
	:: break
	od
}

init {
	byte s1, s2, s3;
	atomic {
		/* the slot each client tries: any of the K it believes in */
		for (s1 : 0 .. 2) { if :: true -> break :: s1 + 1 < KOF(1) && s1 + 1 < NS -> skip fi }
		for (s2 : 0 .. 2) { if :: true -> break :: s2 + 1 < KOF(2) && s2 + 1 < NS -> skip fi }
		for (s3 : 0 .. 2) { if :: true -> break :: s3 + 1 < KOF(3) && s3 + 1 < NS -> skip fi }
		up[0] = true; up[1] = true; up[2] = true;
#ifndef PERMITCHECK
		lim = K; /* every client goes on to acquire; the smallest count is K */
#endif
		run Client(1, s1); run Client(2, s2); run Client(3, s3);
#ifdef CRASH
		run Crash();
#endif
		s1 = 0; s2 = 0; s3 = 0
	}
}
