/*
 * rwlock.pml: the read-write lock (RWMutex): readers that share the lock,
 * a writer that has it alone. Checked with Spin (model/check.sh).
 *
 * On each node the lock is one key: the field owner and a field per hold.
 * A writer's owner is its own id; every reader holds under one shared
 * owner, the reader marker R (node.Readers), which no writer's id equals.
 * So a node's key is free, held by the readers (owner R, a hold field per
 * read hold), or held by the writer (or handed to it and not claimed).
 * The expiry is the key's, not a hold's: a reader's hold lives as long as
 * the key, which every read grant and renewal raises (never lowers) to a
 * full TTL from then.
 *
 * Three nodes, quorum 2, three clients:
 *   1, a reader (acquire_read.lua): refused while a writer holds the key
 *      or waits in the node's queue (writer preference);
 *   2, a reader re-entering (a read hold inside a read hold of its own,
 *      the outer one not modelled): acquire_read.lua with "nested", not
 *      refused for a waiting writer;
 *   3, the writer, fair (acquire_queued.lua): a refused request queues
 *      it; a reader's release of the key's last hold hands the key, on a
 *      node where the writer waits, to the writer (hand in queue.lua),
 *      unclaimed, for WINDOW ticks; the writer's acquire claims it (a full
 *      TTL from then). Up to TRIES rounds, each with a hold id of its own;
 *      a failed round gives back what it got and keeps the writer's place
 *      (ReleaseKeepingPlace). It leaves the queues when it holds or gives
 *      up.
 * Each client: an acquire round that returns at a quorum of grants, or
 * when every node answered; a lease valid until start + TTL - DRIFT,
 * start the moment the round's first request lands (an earlier start only
 * shortens the lease), if the quorum came before then. While the lease is
 * valid, up to RENEWS (reader 1), RENEWS2 (reader 2), WRENEWS (the
 * writer) renewal rounds: renew.lua under the client's owner (R for a
 * reader), which re-creates the hold on a node where the key is free or
 * the owner's; a quorum of renewals that came while the lease and the new
 * window (renewStart + TTL - DRIFT) are both valid extends the lease to
 * that window (leases.Lease.renewed, internal/leases/extend.go). Then, at any moment, the lease
 * ends and a release goes to every node that is up (release.lua; for a
 * round that failed, its undo). Every request is a step of its client
 * taken at any later moment, or never (lost: the client then waits for it
 * forever, and its keys expire); a node runs each script atomically; a
 * clock ticks and a key expires TTL ticks after its last raise.
 *
 * Left out, as all they do is take keys or refuse requests (to another
 * client, the same as a request of its own lost): a release delivered to
 * one node at a time, or lost (modelled as delivered to every node that
 * is up, at once); the writer's requests landing after its release; a
 * writer still queued after it holds or gave up (until its heartbeat
 * lapses).
 *
 * Property (assert in Monitor): no tick at which the writer's lease is
 * valid and a reader's lease is valid too. Readers may overlap.
 *
 * Margins: TTL 2, DRIFT 0. There is one clock for all, so no drift to
 * allow for; a lease then ends exactly when the earliest key that granted
 * it may expire (the tightest the protocol allows: a key kept a tick
 * shorter breaks it, see the JOINKEEPSEXPIRY variants), and a renewal a
 * tick after the acquire extends the lease (with TTL 2 and DRIFT 1 a lease
 * is valid for one tick, and no renewal can extend it).
 *
 * Configurations (-D):
 *   CRASH     node 0 (the nodes are alike to every client) goes down and
 *             restarts empty (keys, queue, tombstones gone) a TTL later,
 *             at a time that lets it restart before the clock stops.
 *   LATE      after its release, a reader's request may land once more
 *             on each node, at any later moment or never: late on its
 *             way, or sent twice. It is the reader's renewal if it
 *             renewed (a renewal grants wherever its acquire would), else
 *             its acquire. Reader 1's releases leave a tombstone for its
 *             hold (acquire_read.lua and renew.lua refuse it); reader 2's
 *             do not, so its late requests may be granted.
 *   PLAIN     the writer is not fair (acquire.lua): it never queues, so
 *             no writer preference and no handoff.
 *   TRIES, RENEWS, RENEWS2, WRENEWS, MAXCLOCK: the writer's rounds (2),
 *             the renewal rounds of reader 1 (1), reader 2 (0) and the
 *             writer (0), the last tick (3).
 * Negative variants (-D), each must fail:
 *   READIGNORESWRITER   acquire_read.lua checks the queue but not the
 *             owner: a key the writer holds (it is no longer queued) is
 *             granted to a reader.
 *   WRITERJOINSREADERS  the writer acquires under the reader marker (as it
 *             would if a read lease's owner could be a writer's): a key
 *             the readers hold is a re-entry to it.
 *   RELEASEDELETES      a reader's release deletes the key though other
 *             readers' holds are in it.
 *   JOINKEEPSEXPIRY     acquire_read.lua sets the key's expiry only when
 *             it creates the key: a reader that joins the others' key
 *             keeps their expiry.
 *   RENEWJOINKEEPSEXPIRY renew.lua raises the expiry only for a hold it
 *             finds: a reader's hold it re-creates in a key the other
 *             readers hold keeps their expiry.
 */
#define N 3
#define Q 2
#ifndef TTL
#define TTL 2
#endif
#ifndef DRIFT
#define DRIFT 0
#endif
#ifndef MAXCLOCK
#define MAXCLOCK 3
#endif
#ifndef WINDOW
#define WINDOW 1
#endif
#ifndef TRIES
#define TRIES 2
#endif
#ifndef RENEWS
#define RENEWS 1
#endif
#ifndef RENEWS2
#define RENEWS2 0
#endif
#ifndef WRENEWS
#define WRENEWS 0
#endif
#define ALL 7      /* a request to each node: bit i for node i */
#define R 9        /* the readers' shared owner (node.Readers) */
#define W 3        /* the writer's own owner id */
#ifdef WRITERJOINSREADERS
#define WOWNER R
#else
#define WOWNER W
#endif

byte clock;
bool up[N];
byte own[N];       /* 0 free, R the readers, else the writer */
byte expiry[N];    /* the clock at which the key expires (0: no key) */
byte holds[N];     /* hold fields: bit c for reader c's hold, 1 << (2 + t) for the writer's round t */
bool handed[N];    /* handed to the writer, not claimed */
bool queued[N];    /* the writer waits in the node's queue */
byte tomb[N];      /* released holds (tombstones), bits as in holds */

bool readLease[3];
byte readUntil[3];
bool writeLease;
byte writeUntil;

#define READVALID(c) (readLease[c] && clock < readUntil[c])
#define CLASH (writeLease && clock < writeUntil && (READVALID(1) || READVALID(2)))
active proctype Monitor() {
	atomic { CLASH -> assert(!CLASH) }
}

/* The clock ticks; an expired key is deleted, a lease past its validity
 * is lost (lease.expire): fewer states, the same behaviour. */
active proctype Tick() {
	byte j;
	do
	:: clock < MAXCLOCK -> atomic {
		clock++;
		for (j : 0 .. N - 1) {
			if
			:: expiry[j] != 0 && expiry[j] <= clock -> own[j] = 0; holds[j] = 0; handed[j] = false; expiry[j] = 0
			:: else -> skip
			fi
		}
		for (j : 1 .. 2) {
			if :: readLease[j] && readUntil[j] <= clock -> readLease[j] = false; readUntil[j] = 0 :: else -> skip fi
		}
		if :: writeLease && writeUntil <= clock -> writeLease = false; writeUntil = 0 :: else -> skip fi;
		j = 0 }
	:: else -> break
	od
}

#ifdef CRASH
proctype Crash() {
	byte since;
	atomic { clock + TTL <= MAXCLOCK -> up[0] = false; since = clock };
	atomic { clock >= since + TTL ->
		own[0] = 0; holds[0] = 0; handed[0] = false; expiry[0] = 0;
		queued[0] = false; tomb[0] = 0; up[0] = true; since = 0 }
}
#endif

#define BIT(i) (1 << (i))

/* PEXPIRE when the key's remaining life is shorter than a TTL */
#define RAISE(i) if :: expiry[i] < clock + TTL -> expiry[i] = clock + TTL :: else -> skip fi

/* hand (queue.lua): the freed key goes to the writer if it waits here */
#define HAND(i) if \
	:: queued[i] -> queued[i] = false; own[i] = WOWNER; handed[i] = true; holds[i] = 0; expiry[i] = clock + WINDOW \
	:: else -> own[i] = 0; handed[i] = false; holds[i] = 0; expiry[i] = 0 \
	fi

/* ---- the readers (owner R, hold bit HB) ---- */
#define HB BIT(me)

#ifdef READIGNORESWRITER
#define WRITERHERE(i) false
#else
#define WRITERHERE(i) (own[i] != 0 && own[i] != R)
#endif
#ifdef JOINKEEPSEXPIRY
#define READRAISE(i) if :: own[i] == 0 -> expiry[i] = clock + TTL :: else -> skip fi
#else
#define READRAISE(i) RAISE(i)
#endif

/* acquire_read.lua on node i */
#define READACQ(i) \
	if \
	:: WRITERHERE(i) -> skip \
	:: else -> \
		if \
		:: (tomb[i] & HB) || (!nested && queued[i]) -> skip \
		:: else -> READRAISE(i); own[i] = R; handed[i] = false; holds[i] = holds[i] | HB; votes++ \
		fi \
	fi

#ifdef RENEWJOINKEEPSEXPIRY
#define RENEWRAISE(i, h) if :: own[i] == R && !(holds[i] & (h)) -> skip :: else -> RAISE(i) fi
#else
#define RENEWRAISE(i, h) RAISE(i)
#endif

/* renew.lua on node i for hold h of owner o: refused for a hold released
 * here, or a key another owner holds; else the hold is (re-)created (a key
 * handed to o is claimed) and the expiry raised */
#define RENEWAT(i, o, h) \
	if \
	:: !(holds[i] & (h)) && (tomb[i] & (h)) -> skip \
	:: else -> \
		if \
		:: own[i] != 0 && own[i] != (o) -> skip \
		:: else -> \
			if :: !(holds[i] & (h)) && handed[i] -> holds[i] = 0; handed[i] = false; expiry[i] = 0 :: else -> skip fi; \
			RENEWRAISE(i, h); own[i] = o; holds[i] = holds[i] | (h); votes++ \
		fi \
	fi

#if defined(LATE)
#define READTOMB(i) if :: me == 1 -> tomb[i] = tomb[i] | HB :: else -> skip fi
#else
#define READTOMB(i) skip
#endif

/* release.lua on node i for the reader's hold: the last hold frees the
 * key, handed to the writer if it waits here */
#ifdef RELEASEDELETES
#define OTHERREADERS(i) false
#else
#define OTHERREADERS(i) (holds[i] != HB)
#endif
#define READRELEASE(i) \
	if \
	:: own[i] == R && (holds[i] & HB) -> \
		if \
		:: OTHERREADERS(i) -> holds[i] = holds[i] & ~HB \
		:: else -> HAND(i) \
		fi \
	:: else -> skip \
	fi

/* a round's start is the moment its first request lands: an earlier
 * start only shortens the lease */
#define FIRST if :: sent == 0 -> start = clock :: else -> skip fi

/* at a quorum the round returns: a lease if its validity has not passed */
#define RDECIDE if \
	:: votes >= Q -> \
		if :: clock < start + TTL - DRIFT -> readLease[me] = true; readUntil[me] = start + TTL - DRIFT :: else -> skip fi; \
		votes = 0; start = 0; sent = 0; goto held \
	:: else -> skip \
	fi
/* a renewal at a quorum extends the lease if both the lease and the new
 * window are valid (leases.Lease.renewed, internal/leases/extend.go) */
#define RRENEWED if \
	:: votes >= Q -> \
		if \
		:: readLease[me] && clock < start + TTL - DRIFT && readUntil[me] < start + TTL - DRIFT -> readUntil[me] = start + TTL - DRIFT \
		:: else -> skip \
		fi; \
		votes = 0; start = 0; sent = 0; goto held \
	:: else -> skip \
	fi

#define RVOTE(i) :: atomic { !(sent & BIT(i)) && up[i] -> FIRST; sent = sent | BIT(i); READACQ(i); RDECIDE }
#define RRENEW(i) :: atomic { !(sent & BIT(i)) && up[i] -> FIRST; sent = sent | BIT(i); RENEWAT(i, R, HB); RRENEWED }
#define RFREE(i) if :: up[i] -> READTOMB(i); READRELEASE(i) :: else -> skip fi
/* a request of the reader's lands once more: its renewal if it renewed
 * (a renewal grants wherever its acquire would), else its acquire */
#define RLATE(i) \
	:: atomic { !(late & BIT(i)) && up[i] -> late = late | BIT(i); \
		if :: renews > 0 -> RENEWAT(i, R, HB) :: else -> READACQ(i) fi; votes = 0 }

proctype Reader(byte me; bool nested; byte rounds) {
	byte votes, start, sent, renews, late;

	do
	RVOTE(0)
	RVOTE(1)
	RVOTE(2)
	:: sent == ALL -> goto release /* every node answered, no quorum */
	od;
held:
	/* the watchdog: renewal rounds while the lease is valid */
	do
	:: atomic { readLease[me] && renews < rounds -> renews++ };
		do
		RRENEW(0)
		RRENEW(1)
		RRENEW(2)
		:: atomic { sent == ALL -> votes = 0; start = 0; sent = 0; goto held } /* no quorum */
		od
	:: break
	od;
release:
	/* RUnlock (or the undo of a failed round): the lease ends, a release
	 * goes to every node */
	atomic {
		readLease[me] = false; readUntil[me] = 0; votes = 0; start = 0; sent = 0;
		RFREE(0); RFREE(1); RFREE(2)
	};
#ifdef LATE
	do
	RLATE(0)
	RLATE(1)
	RLATE(2)
	:: break
	od;
	late = 0;
#endif
	renews = 0
}

/* ---- the writer (owner WOWNER, hold bit hb of its current round) ---- */

/* acquire_queued.lua (fair) on node i: refused and queued when the
 * readers hold the key; else a free key is taken (the writer, the only
 * one, heads the queue), a key handed to it claimed (a full TTL from now),
 * its own key re-entered. Under PLAIN, acquire.lua: the same, never
 * queued. */
#define WACQ(i) \
	if \
	:: own[i] != 0 && own[i] != WOWNER -> QUEUE(i) \
	:: else -> \
		if \
		:: own[i] == 0 -> own[i] = WOWNER; holds[i] = hb; expiry[i] = clock + TTL \
		:: else -> \
			if \
			:: handed[i] -> handed[i] = false; holds[i] = hb; expiry[i] = clock + TTL \
			:: else -> holds[i] = holds[i] | hb; RAISE(i) \
			fi \
		fi; \
		queued[i] = false; GOT(i); votes++ \
	fi

#define WDECIDE if \
	:: votes >= Q -> \
		if \
		:: clock < start + TTL - DRIFT -> \
			writeLease = true; writeUntil = start + TTL - DRIFT; LEAVE; \
			votes = 0; start = 0; sent = 0; got = 0; tries = 0; goto wheld \
		:: else -> skip /* too late: undone */ \
		fi \
	:: else -> skip \
	fi
#define WRENEWED if \
	:: votes >= Q -> \
		if \
		:: writeLease && clock < start + TTL - DRIFT && writeUntil < start + TTL - DRIFT -> writeUntil = start + TTL - DRIFT \
		:: else -> skip \
		fi; \
		votes = 0; start = 0; sent = 0; goto wheld \
	:: else -> skip \
	fi

#ifdef PLAIN
#define QUEUE(i) skip
#else
#define QUEUE(i) queued[i] = true
#endif
#define GOT(i) got = got | BIT(i)
#define CLAIM(i) :: atomic { !(sent & BIT(i)) && up[i] && votes < Q -> FIRST; sent = sent | BIT(i); WACQ(i); WDECIDE }

/* the undo of a failed round (one whose quorum came too late, or did not
 * come) on the nodes that granted: release.lua with the writer's ticket:
 * its hold dropped, its place kept; a freed key is left free (the writer
 * heads the queue and tries again). Under PLAIN, a plain release. */
#define UNDO(i) if :: (got & BIT(i)) && up[i] -> \
	if \
	:: own[i] == WOWNER && !handed[i] && (holds[i] & hb) -> \
		if \
		:: holds[i] != hb -> holds[i] = holds[i] & ~hb \
		:: else -> own[i] = 0; holds[i] = 0; expiry[i] = 0 \
		fi \
	:: else -> skip \
	fi; \
	QUEUE(i) \
	:: else -> skip fi

#define WRENEW(i) :: atomic { !(sent & BIT(i)) && up[i] -> FIRST; sent = sent | BIT(i); RENEWAT(i, WOWNER, hb); WRENEWED }

/* release.lua on node i for the writer's hold (it has left the queue) */
#define WFREE(i) if :: up[i] -> \
	if \
	:: own[i] == WOWNER && handed[i] -> HAND(i) \
	:: else -> \
		if \
		:: own[i] == WOWNER && (holds[i] & hb) -> \
			if \
			:: holds[i] != hb -> holds[i] = holds[i] & ~hb \
			:: else -> HAND(i) \
			fi \
		:: else -> skip \
		fi \
	fi \
	:: else -> skip fi

#define LEAVE queued[0] = false; queued[1] = false; queued[2] = false

proctype Writer() {
	byte votes, start, tries, sent, got, renews, hb;

	do
	:: atomic { tries < TRIES -> tries++; hb = BIT(2 + tries) }; /* a new hold id each round */
		do
		CLAIM(0)
		CLAIM(1)
		CLAIM(2)
		:: votes >= Q || sent == ALL -> break /* too late, or no quorum */
		od;
		atomic { UNDO(0); UNDO(1); UNDO(2); votes = 0; start = 0; sent = 0; got = 0 }
	:: else -> atomic { LEAVE; tries = 0 }; goto wdone
	od;
wheld:
	do
	:: atomic { writeLease && renews < WRENEWS -> renews++ };
		do
		WRENEW(0)
		WRENEW(1)
		WRENEW(2)
		:: atomic { sent == ALL -> votes = 0; start = 0; sent = 0; goto wheld } /* no quorum */
		od
	:: break
	od;
	/* Unlock: the lease ends, a release goes to every node */
	atomic {
		writeLease = false; writeUntil = 0; renews = 0; got = 0;
		WFREE(0); WFREE(1); WFREE(2)
	};
wdone:
	hb = 0
}

init {
	atomic {
		up[0] = true; up[1] = true; up[2] = true;
		run Reader(1, false, RENEWS); run Reader(2, true, RENEWS2); run Writer();
#ifdef CRASH
		run Crash();
#endif
	}
}
