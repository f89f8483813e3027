/*
 * invitation.pml: the merge of Garcia-Molina's invitation algorithm as
 * package invitation implements it, for spin. 3 nodes (IDs 1..3, rank =
 * ID), a network that loses messages (up to MAXLOSS of them) and drops
 * what does not fit a receiver's queue, and one partition (one node cut
 * off from the other two, chosen nondeterministically) that starts and
 * heals at arbitrary moments. See README.md for what is modelled, what is
 * abstracted and what the checks mean.
 *
 * Checked in every reachable state (monitor) or at every group creation
 * (assertion):
 *   S1  no group number (seq, id) is created twice; a node's new number is
 *       above every sequence it has persisted or seen
 *   S2  at most one node is Normal and coordinator of a group number
 *   S3  nodes in Normal or Reorganization with the same group number have
 *       the same coordinator, and a Normal node's member list holds itself
 *       and its coordinator
 *   S4  Normal nodes with the same group number and member-list version
 *       have the same member list
 *   R   role consistency: a node is coordinator exactly when its group
 *       number ends in its own ID
 *
 * Mutants (check.sh mutants), each of which must be caught:
 * -DMUTANT_NOPERSIST does not keep the counter of the numbers it creates,
 * -DMUTANT_STALE_SEQ picks a new sequence from the node's own counter only
 * (not above the sequences seen), -DMUTANT_NOVERSION drops a member without
 * a new member-list version.
 */

#define N 3
#ifndef MAXSEQ
#define MAXSEQ 4        /* bound: no node creates a sequence above this */
#endif
#ifndef MAXLOSS
#define MAXLOSS 2       /* bound: messages the network may lose (besides partition drops and full queues) */
#endif
#ifndef QSZ
#define QSZ 2           /* messages waiting per receiver; a full queue drops (as a socket buffer does) */
#endif
#ifndef MAXVER
#define MAXVER 2        /* bound: member-list versions within one group */
#endif
#ifndef MAXRETX
#define MAXRETX 2       /* bound (with -DRETRANSMIT): retransmission rounds, all nodes together */
#endif

#define NORMAL   0
#define ELECTION 1
#define REORG    2

mtype = { INV, ACC, RDY };

/* inbox[i]: type, from, sender's state, sender's group (seq, id), body
 * group (seq, id), member bitmask, version. Index 0 unused. */
chan inbox[N+1] = [QSZ] of { mtype, byte, byte, byte, byte, byte, byte, byte, byte };

byte st[N+1];      /* NORMAL, ELECTION, REORG */
byte gseq[N+1];    /* group number: (gseq, gid); gid is its coordinator */
byte gid[N+1];
bool coord[N+1];   /* I coordinate my group (the runtime's role, kept apart from gid to check R) */
byte ctr[N+1];     /* persisted counter */
byte seen[N+1];    /* highest sequence seen in any message */
byte mem[N+1];     /* member list (bit i: node i); a coordinator's Up set */
byte ver[N+1];     /* member-list version */
bool merging[N+1]; /* accept window open */
byte invited[N+1]; /* invitations sent in this merge */
bool created[(MAXSEQ+1)*N];

byte phase;        /* 0 connected, 1 partitioned, 2 healed */
byte alone;        /* the node on its own side while partitioned */
byte losses;
byte retx;         /* retransmission rounds so far (-DRETRANSMIT) */

#define B(i)        (1 << (i))
#define CUT(a, b)   (phase == 1 && (a) != (b) && ((a) == alone || (b) == alone))
#ifndef MUTANT_STALE_SEQ
#define NEXT(i)     ((ctr[i] > seen[i] -> ctr[i] : seen[i]) + 1)
#else
#define NEXT(i)     (ctr[i] + 1)    /* mutant: forgets the sequences seen */
#endif
#define SEEN(s)     if :: (s) > seen[me] -> seen[me] = (s) :: else -> skip fi

/* Send: dropped by the partition, lost (while losses last), or queued;
 * dropped when the receiver's queue is full. */
inline send(pto, pt, ps, pg, pms, pv) {
	if
	:: CUT(me, pto) -> skip
	:: !CUT(me, pto) && losses < MAXLOSS -> losses++
	:: !CUT(me, pto) && nfull(inbox[pto]) -> inbox[pto]!pt(me, st[me], gseq[me], gid[me], ps, pg, pms, pv)
	:: !CUT(me, pto) && full(inbox[pto]) -> skip
	fi
}

/* create: a new group number of mine; persisted before anything carries
 * it (the store's fsync happens here, atomically in the model). */
inline create() {
	n = NEXT(me);
	assert(n <= MAXSEQ);
	assert(!created[n*N + me - 1]);          /* S1: never created twice */
	assert(n > ctr[me] && n > seen[me]);     /* S1: above everything persisted or seen */
	created[n*N + me - 1] = 1;
#ifndef MUTANT_NOPERSIST
	ctr[me] = n;
	seen[me] = n;
#endif
	gseq[me] = n;
	gid[me] = me;
	coord[me] = 1
}

/* recover: Recovery, a singleton group with a new number. */
inline recover() {
	create();
	st[me] = NORMAL;
	mem[me] = B(me);
	ver[me] = 1;
	merging[me] = 0
}

/* ready: send the member list to every member but me. */
inline ready() {
	i = 1;
	do
	:: i <= N -> if :: i != me && (mem[me] & B(i)) -> send(i, RDY, gseq[me], gid[me], mem[me], ver[me]) :: else -> skip fi; i++
	:: i > N -> break
	od
}

/* drop: a coordinator drops one member (silent past MemberTimeout, or not
 * acknowledging Ready) with a new version. */
inline drop() {
	/* callers make sure there is one, and ver[me] < MAXVER */
	if
	:: me != 1 && (mem[me] & B(1)) -> i = 1
	:: me != 2 && (mem[me] & B(2)) -> i = 2
	:: me != 3 && (mem[me] & B(3)) -> i = 3
	fi;
	mem[me] = mem[me] & ~B(i);
#ifndef MUTANT_NOVERSION
	ver[me]++;
#endif
	ready()
}

proctype Node(byte me) {
	mtype t;
	byte f, fst, hs, hi, s, g, ms, v, i, n, old, targets;
	bool accept;

	atomic { recover() }
end:
	do
	/* ---- messages ---- */
	:: atomic {
		inbox[me]?t(f, fst, hs, hi, s, g, ms, v) ->
		SEEN(hs); SEEN(s);
		if
		:: t == INV ->
			if
			:: s == gseq[me] && g == gid[me] ->
				/* a duplicate: repeat the Accept */
				if :: !coord[me] -> send(g, ACC, s, g, 0, 0) :: else -> skip fi
			:: g == gid[me] && s < gseq[me] -> skip   /* an old invitation from my coordinator */
			:: g == me -> skip
			:: else ->
				if
				:: st[me] == NORMAL && coord[me] -> accept = (f == g && me < f)
				:: st[me] == NORMAL && !coord[me] -> accept = (f == gid[me] || (f == g && gid[me] < f))
				:: else -> accept = 0              /* Election or Reorganization: ignore */
				fi;
				if
				:: accept ->
					/* a coordinator brings its members along */
					if
					:: coord[me] ->
						i = 1;
						do
						:: i <= N -> if :: i != me && i != g && (mem[me] & B(i)) -> send(i, INV, s, g, 0, 0) :: else -> skip fi; i++
						:: i > N -> break
						od
					:: else -> skip
					fi;
					/* join g: Reorganization until its Ready */
					st[me] = REORG; gseq[me] = s; gid[me] = g; coord[me] = 0;
					mem[me] = 0; ver[me] = 0;
					send(g, ACC, s, g, 0, 0)
				:: else -> skip
				fi
			fi
		:: t == ACC ->
			if
			:: s == gseq[me] && g == gid[me] && coord[me] ->
				if
				:: merging[me] -> mem[me] = mem[me] | B(f)
				:: !merging[me] && (mem[me] & B(f)) -> send(f, RDY, gseq[me], gid[me], mem[me], ver[me])
				:: !merging[me] && !(mem[me] & B(f)) && ver[me] < MAXVER ->
					/* a late Accept: take it in with a new version */
					mem[me] = mem[me] | B(f); ver[me]++; ready()
				:: !merging[me] && !(mem[me] & B(f)) && ver[me] >= MAXVER -> skip   /* bound */
				fi
			:: else -> skip
			fi
		:: t == RDY ->
			if
			:: s == gseq[me] && g == gid[me] && !coord[me] && f == g && v > ver[me] ->
				if
				:: (ms & B(me)) -> st[me] = NORMAL; mem[me] = ms; ver[me] = v
				:: !(ms & B(me)) && st[me] == NORMAL -> recover()   /* dropped: start again alone */
				:: !(ms & B(me)) && st[me] != NORMAL -> skip        /* my Accept is late: keep waiting */
				fi
			:: else -> skip
			fi
		fi;
		t = 0; f = 0; fst = 0; hs = 0; hi = 0; s = 0; g = 0; ms = 0; v = 0; accept = 0; i = 0; n = 0
	   }
	/* ---- a coordinator's timers ---- */
	:: atomic {
		st[me] == NORMAL && coord[me] && me > 1 && NEXT(me) <= MAXSEQ ->
		/* Check, then Merge. The Check (AreYouCoordinator, Yes) tells
		 * a coordinator which lower-ranked nodes coordinate a group;
		 * its answers may be stale by the time the invitations arrive,
		 * so the model lets a coordinator invite any non-empty set of
		 * lower-ranked nodes, plus its own members. The merge delay
		 * (a head start for higher coordinators) is timing: the model
		 * merges whenever it may. */
		select(targets : 1 .. (B(me) - 2) / 2);     /* a non-empty subset of {1 .. me-1}, as bits 1 .. me-1 */
		targets = targets << 1;
		old = mem[me];
		create();
		st[me] = ELECTION; merging[me] = 1;
		invited[me] = (targets | old) & ~B(me);
		mem[me] = B(me); ver[me] = 0;
		i = 1;
		do
		:: i <= N -> if :: (invited[me] & B(i)) -> send(i, INV, gseq[me], gid[me], 0, 0) :: else -> skip fi; i++
		:: i > N -> break
		od;
		i = 0; n = 0; old = 0; targets = 0
	   }
#ifdef RETRANSMIT
	:: atomic {
		merging[me] && (invited[me] & ~mem[me]) != 0 && retx < MAXRETX ->
		/* retransmit the invitations not yet accepted */
		retx++;
		i = 1;
		do
		:: i <= N -> if :: (invited[me] & ~mem[me] & B(i)) -> send(i, INV, gseq[me], gid[me], 0, 0) :: else -> skip fi; i++
		:: i > N -> break
		od;
		i = 0
	   }
#endif
	:: atomic {
		merging[me] ->
		/* the accept window closes: Ready to whoever accepted */
		merging[me] = 0; st[me] = REORG; ver[me] = 1;
		ready();
		i = 0
	   }
	:: atomic {
		st[me] == REORG && coord[me] ->
		/* Ready round over: everyone acknowledged ... */
		st[me] = NORMAL
	   }
	:: atomic {
		st[me] == REORG && coord[me] && (mem[me] & ~B(me)) != 0 && ver[me] < MAXVER ->
		/* ... or the silent are dropped with a new version */
		st[me] = NORMAL;
		drop();
		i = 0
	   }
#ifdef RETRANSMIT
	:: atomic {
		(st[me] == NORMAL || st[me] == REORG) && coord[me] && !merging[me] && retx < MAXRETX ->
		/* retransmit Ready */
		retx++;
		ready();
		i = 0
	   }
#endif
	:: atomic {
		st[me] == NORMAL && coord[me] && !merging[me] && (mem[me] & ~B(me)) != 0 && ver[me] < MAXVER ->
		/* a member went silent (MemberTimeout) */
		drop();
		i = 0
	   }
	/* ---- a participant's timers ---- */
	:: atomic {
		!coord[me] && (st[me] == NORMAL || st[me] == REORG) && NEXT(me) <= MAXSEQ ->
		/* the coordinator does not answer AreYouThere (or said No), or
		 * no Ready came: Recovery. Failure detection under loss and
		 * partition can be wrong at any time, so the model lets it
		 * happen at any time. */
		recover();
		n = 0
	   }
	od
}

/* The network: one node is cut off from the others at some moment, and
 * the partition heals at a later one. */
active proctype Net() {
	if
	:: alone = 1
	:: alone = 2
	:: alone = 3
	fi;
	phase = 1;
	phase = 2
}

#define S2(i, j) !(st[i] == NORMAL && coord[i] && st[j] == NORMAL && coord[j] && gseq[i] == gseq[j] && gid[i] == gid[j])
#define INGROUP(i) (st[i] == NORMAL || st[i] == REORG)
#define S3(i, j) (!(INGROUP(i) && INGROUP(j) && gseq[i] == gseq[j] && gid[i] == gid[j]) || gid[i] == gid[j])
#define S3M(i) (st[i] != NORMAL || gseq[i] == 0 || ((mem[i] & B(i)) && (mem[i] & B(gid[i]))))
#define S4(i, j) (!(st[i] == NORMAL && st[j] == NORMAL && gseq[i] == gseq[j] && gid[i] == gid[j] && ver[i] == ver[j]) || mem[i] == mem[j])
#define R(i) (gseq[i] == 0 || coord[i] == (gid[i] == i))

#define INV_S2 (S2(1, 2) && S2(1, 3) && S2(2, 3))
#define INV_S3 (S3(1, 2) && S3(1, 3) && S3(2, 3) && S3M(1) && S3M(2) && S3M(3))
#define INV_S4 (S4(1, 2) && S4(1, 3) && S4(2, 3))
#define INV_R  (R(1) && R(2) && R(3))

/* The monitor: checks the invariants in every reachable state (it can run
 * its single step at any point of any interleaving). */
active proctype Monitor() {
end:	atomic {
		!(INV_S2 && INV_S3 && INV_S4 && INV_R) ->
		assert(INV_S2); assert(INV_S3); assert(INV_S4); assert(INV_R)
	}
}

/* Coverage (pan -DCOVER ...: see check.sh): the model can reach the
 * converged state after the heal, so the checks above are not vacuous. */
#ifdef COVER
active proctype Cover() {
end:	atomic {
		phase == 2 && st[1] == NORMAL && st[2] == NORMAL && st[3] == NORMAL &&
		gid[1] == 3 && gid[2] == 3 && gid[3] == 3 && gseq[1] == gseq[3] && gseq[2] == gseq[3] &&
		mem[1] == (B(1) | B(2) | B(3)) && mem[2] == mem[1] && mem[3] == mem[1] ->
		assert(false)   /* reached: pan reports this "violation" as the witness */
	}
}
#endif

init {
	atomic {
		run Node(1); run Node(2); run Node(3)
	}
}
