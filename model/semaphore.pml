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
 * Under PERMITCHECK also (assert when a permit is granted): no client
 * that holds a valid permit got it under another K. (Not: no two clients
 * ever pass the check with different counts. The count expires once no
 * client uses it, and then another may be stored: what must not happen
 * is two counts with valid permits at once; two permits valid at one
 * tick are both valid at the later one's grant, where it is asserted.)
 * Not modelled under PERMITCHECK: a permit's renewal and the keeper's
 * later checks (each is a check as the first: it reads, keeps the count,
 * and moves the bound; a permit without renewal lives a TTL at most).
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
 *             count where none is stored and answers the stored one; it
 *             keeps an equal count (a stored one too) for at least CTTL
 *             ticks from then (never shortens its life), and the count
 *             expires once that passed (then another may be stored). The
 *             client goes on at a quorum of answers equal to its own
 *             count, and stops for good (ErrConfig) at an answer that
 *             differs before then (one after then is not waited for: more
 *             permissive than waiting for every answer). Reads not yet
 *             delivered may still land later, storing or keeping the count
 *             as any read does. A permit is valid no longer than CTTL -
 *             DRIFT after the check's first read landed (Semaphore.check's
 *             bound). With MISMATCH it must pass.
 *   NOCAP     with PERMITCHECK: permits without that bound, valid for
 *             their TTL whenever they were granted after the check (a
 *             count kept a TTL after each check, and nothing more). With
 *             MISMATCH it must fail: a client checks, its count expires
 *             before its round, and another count is stored and granted
 *             beside its permit.
 *   CRASH     one node goes down at any time, and restarts empty (no slot
 *             keys, no stored count) a TTL after it went down (the lock's
 *             own rule, which the restart guard enforces: permits.lua has
 *             the guard too); must pass, with PERMITCHECK too: a count the
 *             node had before it went down expires there no later than a
 *             TTL after it was last read, and so does every permit whose
 *             check read it (the bound).
 *   EARLY     with CRASH: the node restarts empty at once (the restart
 *             guard off). With MISMATCH PERMITCHECK it must fail: the
 *             count 2, stored on two nodes, is lost on one of them while a
 *             permit of 2 is valid, and client 1 stores 3 there and on the
 *             third node, and passes.
 *   TWO       clients 1 and 2 only. The permits check's property is about
 *             two clients (two counts with valid permits at once), and
 *             the slots' bound is checked without it: when all valid
 *             permits share one count, they are slots of that count, which
 *             the checks without PERMITCHECK bound by K. Three clients
 *             with the count's expiry are out of reach of this machine
 *             (over 25 M states and 3 GB at a 2-tick clock).
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
#ifndef CTTL
#define CTTL TTL       /* the count's life after each read (Go: the TTL) */
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
byte cexp[N];          /* the clock at which that count expires */
bool agreed;           /* a grant's check, set and cleared within its step */
#endif

bool permitted[4];     /* client c holds a permit */
byte endsAt[4];        /* ... valid while clock < endsAt[c] */
byte lim = 255;        /* the smallest K of the clients that went on to acquire */

#define VALIDP(c) (permitted[c] && clock < endsAt[c] -> 1 : 0)
#ifdef PERMITCHECK
/* a permit granted to me: no valid permit of another count */
#define AGREES(c) (VALIDP(c) == 0 || KOF(c) == KOF(me))
#define AGREE agreed = (AGREES(1) && AGREES(2) && AGREES(3)); assert(agreed); agreed = false
/* the end of a permit granted now: its TTL, and the check's bound */
#ifdef NOCAP
#define ENDS (start + TTL - DRIFT)
#else
#define ENDS (start + TTL - DRIFT < bound -> start + TTL - DRIFT : bound)
#endif
#else
#define AGREE skip
#define ENDS (start + TTL - DRIFT)
#endif
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
#ifdef PERMITCHECK
		for (j : 0 .. N - 1) {
			if :: stored[j] != 0 && cexp[j] <= clock -> stored[j] = 0; cexp[j] = 0 :: else -> skip fi
		}
#endif
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
#ifdef EARLY
	atomic { true ->
#else
	atomic { clock >= since + TTL ->
#endif
		for (s : 0 .. NS - 1) {
			owner[s * N + n] = 0; expiry[s * N + n] = 0
		}
#ifdef PERMITCHECK
		stored[n] = 0; cexp[n] = 0;
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
		:: clock < ENDS -> AGREE; permitted[me] = true; endsAt[me] = ENDS; start = 0; UNBOUND; goto holds \
		:: else -> GIVEBACK; start = 0; UNBOUND; goto stopped \
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
 * none is, keeping an equal one CTTL ticks from now */
#ifdef PERMITCHECK
#define KEEP(i) if \
	:: stored[i] == 0 -> stored[i] = KOF(me); cexp[i] = clock + CTTL \
	:: stored[i] == KOF(me) && cexp[i] < clock + CTTL -> cexp[i] = clock + CTTL \
	:: else -> skip \
	fi
#define UNBOUND bound = 0
#define FIRSTREAD if :: !asked[0] && !asked[1] && !asked[2] -> bound = clock + CTTL - DRIFT :: else -> skip fi
#define READ(i) :: atomic { !asked[i] && up[i] -> FIRSTREAD; asked[i] = true; KEEP(i); \
	if \
	:: stored[i] != KOF(me) -> answers = 0; bound = 0; goto stopped /* ErrConfig */ \
	:: else -> answers++ \
	fi; \
	if \
	:: answers >= Q -> /* passed */ \
		answers = 0; \
		if :: KOF(me) < lim -> lim = KOF(me) :: else -> skip fi; \
		goto acquire \
	:: else -> skip \
	fi }
/* a read the client no longer waits for lands */
#define LATE(i) :: atomic { !asked[i] && up[i] -> asked[i] = true; KEEP(i) }
#define LATEREADS LATE(0) LATE(1) LATE(2)
#else
#define LATEREADS
#define UNBOUND skip
#endif

proctype Client(byte me; byte slot) {
	byte votes, start, j;
	bool sent[N];
#ifdef PERMITCHECK
	bool asked[N];
	byte answers, bound;
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
		run Client(1, s1); run Client(2, s2);
#ifndef TWO
		run Client(3, s3);
#endif
#ifdef CRASH
		run Crash();
#endif
		s1 = 0; s2 = 0; s3 = 0
	}
}
