// SPDX-License-Identifier: GPL-2.0
/*
 * SCHED_HPC policy core: iteration accounting, heuristics, parameters.
 *
 * Portable C: the kernel, BPF programs and user space build this file as it
 * is (see hpc_types.h). Integer-only, no allocation, no library calls.
 */
#include "hpc_policy.h"

/*
 * The text side (knob names, heuristic names, error messages, lookups) is for
 * front ends that parse and print; BPF programs never do, and tables of
 * pointers in .rodata do not belong in a BPF object.
 */
#ifndef __bpf__
const char * const hpc_param_names[HPC_P_NR] = {
	[HPC_P_LOW_UTIL]	= "low_util",
	[HPC_P_HIGH_UTIL]	= "high_util",
	[HPC_P_MIN_PRIO]	= "min_prio",
	[HPC_P_MAX_PRIO]	= "max_prio",
	[HPC_P_GLOBAL_WEIGHT]	= "global_weight",
	[HPC_P_LAST_WEIGHT]	= "last_weight",
	[HPC_P_HEURISTIC]	= "heuristic",
	[HPC_P_MIN_WAIT_US]	= "min_wait_us",
};

const char * const hpc_heuristic_names[HPC_HEUR_NR] = {
	[HPC_HEUR_UNIFORM]	= "uniform",
	[HPC_HEUR_ADAPTIVE]	= "adaptive",
	[HPC_HEUR_PHASE]	= "phase",
};

static const char * const hpc_param_err_msgs[HPC_PARAM_ERR_NR] = {
	[HPC_PARAM_OK]			= "ok",
	[HPC_PARAM_ERR_UTIL_RANGE]	= "low_util and high_util must be within 0..100",
	[HPC_PARAM_ERR_UTIL_ORDER]	= "low_util must be below high_util",
	[HPC_PARAM_ERR_PRIO_RANGE]	= "min_prio and max_prio must be in the backend's range",
	[HPC_PARAM_ERR_PRIO_ORDER]	= "min_prio must not be above max_prio",
	[HPC_PARAM_ERR_WEIGHT_RANGE]	= "global_weight and last_weight must be within 0..100",
	[HPC_PARAM_ERR_WEIGHT_SUM]	= "global_weight + last_weight must be 100",
	[HPC_PARAM_ERR_HEURISTIC]	= "heuristic must be uniform, adaptive or phase",
	[HPC_PARAM_ERR_MIN_WAIT]	= "min_wait_us must be within 0..1000000",
};
#endif /* !__bpf__ */

void hpc_params_default(struct hpc_params *p)
{
	p->low_util = HPC_DEF_LOW_UTIL;
	p->high_util = HPC_DEF_HIGH_UTIL;
	p->min_prio = HPC_DEF_MIN_PRIO;
	p->max_prio = HPC_DEF_MAX_PRIO;
	p->global_weight = HPC_DEF_GLOBAL_WEIGHT;
	p->last_weight = HPC_DEF_LAST_WEIGHT;
	p->heuristic = HPC_DEF_HEURISTIC;
	p->min_wait_us = HPC_DEF_MIN_WAIT_US;
}

/*
 * Accept or reject a complete parameter set. @allowed is the priority range
 * of the mechanism backend in use; NULL means the whole hardware range.
 * Returns HPC_PARAM_OK or the first enum hpc_param_err that applies.
 */
int hpc_params_check(const struct hpc_params *p,
		     const struct hpc_prio_range *allowed)
{
	u32 lo = 0, hi = HPC_PRIO_LIMIT;

	if (allowed) {
		lo = allowed->min;
		hi = allowed->max > HPC_PRIO_LIMIT ? HPC_PRIO_LIMIT : allowed->max;
	}
	if (p->low_util > 100 || p->high_util > 100)
		return HPC_PARAM_ERR_UTIL_RANGE;
	if (p->low_util >= p->high_util)
		return HPC_PARAM_ERR_UTIL_ORDER;
	if (p->min_prio < lo || p->min_prio > hi ||
	    p->max_prio < lo || p->max_prio > hi)
		return HPC_PARAM_ERR_PRIO_RANGE;
	if (p->min_prio > p->max_prio)
		return HPC_PARAM_ERR_PRIO_ORDER;
	if (p->global_weight > 100 || p->last_weight > 100)
		return HPC_PARAM_ERR_WEIGHT_RANGE;
	if (p->global_weight + p->last_weight != 100)
		return HPC_PARAM_ERR_WEIGHT_SUM;
	if (p->heuristic >= HPC_HEUR_NR)
		return HPC_PARAM_ERR_HEURISTIC;
	if (p->min_wait_us > HPC_MAX_MIN_WAIT_US)
		return HPC_PARAM_ERR_MIN_WAIT;
	return HPC_PARAM_OK;
}

#ifndef __bpf__
const char *hpc_param_err_str(int err)
{
	if (err < 0 || err >= HPC_PARAM_ERR_NR)
		return "unknown parameter error";
	return hpc_param_err_msgs[err];
}

/* Bounded string equality: the names are short, and BPF needs a bound. */
static bool hpc_streq(const char *a, const char *b)
{
	int i;

	for (i = 0; i < 32; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return false;
}

/* The enum hpc_param_id of @name, or -1. */
int hpc_param_lookup(const char *name)
{
	int i;

	for (i = 0; i < HPC_P_NR; i++)
		if (hpc_streq(name, hpc_param_names[i]))
			return i;
	return -1;
}

/* The enum hpc_heuristic called @name, or -1. */
int hpc_heuristic_lookup(const char *name)
{
	int i;

	for (i = 0; i < HPC_HEUR_NR; i++)
		if (hpc_streq(name, hpc_heuristic_names[i]))
			return i;
	return -1;
}
#endif /* !__bpf__ */

/* Where each tunable lives in struct hpc_params. */
static const unsigned short hpc_param_offs[HPC_P_NR] = {
	[HPC_P_LOW_UTIL]	= __builtin_offsetof(struct hpc_params, low_util),
	[HPC_P_HIGH_UTIL]	= __builtin_offsetof(struct hpc_params, high_util),
	[HPC_P_MIN_PRIO]	= __builtin_offsetof(struct hpc_params, min_prio),
	[HPC_P_MAX_PRIO]	= __builtin_offsetof(struct hpc_params, max_prio),
	[HPC_P_GLOBAL_WEIGHT]	= __builtin_offsetof(struct hpc_params, global_weight),
	[HPC_P_LAST_WEIGHT]	= __builtin_offsetof(struct hpc_params, last_weight),
	[HPC_P_HEURISTIC]	= __builtin_offsetof(struct hpc_params, heuristic),
	[HPC_P_MIN_WAIT_US]	= __builtin_offsetof(struct hpc_params, min_wait_us),
};

/* The value of tunable @id (an enum hpc_param_id; 0 for an unknown id). */
u32 hpc_param_get(const struct hpc_params *p, int id)
{
	if (id < 0 || id >= HPC_P_NR)
		return 0;
	return *(const u32 *)((const char *)p + hpc_param_offs[id]);
}

/*
 * Set one tunable in @p (a copy: check the result with hpc_params_check()
 * before publishing it). The two Adaptive weights are complementary: setting
 * one to a value within 0..100 sets the other to the rest, so that a single
 * write can change the blend.
 */
void hpc_param_put(struct hpc_params *p, int id, u32 val)
{
	if (id < 0 || id >= HPC_P_NR)
		return;
	*(u32 *)((char *)p + hpc_param_offs[id]) = val;
	if (val > 100)
		return;
	if (id == HPC_P_GLOBAL_WEIGHT)
		p->last_weight = 100 - val;
	else if (id == HPC_P_LAST_WEIGHT)
		p->global_weight = 100 - val;
}

/* @run / @total in HPC_UTIL_SCALE units, without overflow, capped at 100 %. */
u32 hpc_util(u64 run, u64 total)
{
	if (!total)
		return 0;
	if (run > total)
		run = total;
	/* Keep run * HPC_UTIL_SCALE below 2^64 (HPC_UTIL_SCALE < 2^14). */
	if (total >= (1ULL << 50)) {
		run >>= 14;
		total >>= 14;
	}
	return (u32)hpc_div64(run * HPC_UTIL_SCALE, total);
}

int hpc_classify(u32 util, const struct hpc_params *p)
{
	if (util < p->low_util * (HPC_UTIL_SCALE / 100))
		return HPC_CLASS_LOW;
	if (util > p->high_util * (HPC_UTIL_SCALE / 100))
		return HPC_CLASS_HIGH;
	return HPC_CLASS_MEDIUM;
}

/*
 * The utilisation the heuristic decides on. @prev_global is the global
 * utilisation before the iteration that closes now (@nr_prev iterations),
 * @global includes it, @last is its own utilisation, @phase the
 * utilisation since the loads last changed (the iteration included).
 *
 * Uniform: @global, the whole history. Adaptive: G * @prev_global +
 * L * @last, mostly the last iteration. Phase: @phase, the mean of the
 * iterations since the loads last changed (a deep wait, the task's own or
 * its sibling's: see hpc_phase()), Uniform's history restarted at every
 * change. Uniform is slow to follow a change (its history outweighs the
 * new loads) and Adaptive follows one iteration's noise; Phase follows a
 * change at once and averages the noise of the loads it has.
 */
static u32 hpc_heur_util(const struct hpc_params *p, u32 prev_global,
			 u64 nr_prev, u32 global, u32 last, u32 phase)
{
	switch (p->heuristic) {
	case HPC_HEUR_ADAPTIVE:
		if (!nr_prev)
			return last;
		return (p->global_weight * prev_global +
			p->last_weight * last) / 100;
	case HPC_HEUR_PHASE:
		return phase;
	default:
		return global;
	}
}

/*
 * Phase's history (t->ph_util over t->ph_nr iterations) starts again when
 * the loads change: on a deep wait (HPC_CLASS_DEEP) of the task's
 * iteration that closes now (@own) or of the sibling's it is judged
 * against (@peer). No noise halves a task's share of an iteration (the
 * detector's own reading of a deep wait, hpc_peer_judged()).
 */
static void hpc_phase_reset(struct hpc_task *t, int own, int peer)
{
	if ((own >= 0 && (own & HPC_CLASS_DEEP)) ||
	    (peer >= 0 && (peer & HPC_CLASS_DEEP)))
		t->ph_nr = 0;
}

/* The mean of Phase's history with one more iteration at @util. */
static u32 hpc_phase_mean(const struct hpc_task *t, u32 util)
{
	u32 nr = t->ph_nr;

	/* <= 10000 * 1000 + 10000 + 500: no overflow in u32. */
	return (t->ph_util * nr + util + (nr + 1) / 2) / (nr + 1);
}

static u32 hpc_clamp(u32 prio, const struct hpc_params *p)
{
	if (prio < p->min_prio)
		return p->min_prio;
	if (prio > p->max_prio)
		return p->max_prio;
	return prio;
}

/*
 * The rule. @own_class is the heuristic's class of the task (its history),
 * @own_now the class of its own last (or open) iteration, @peer what
 * hpc_peer_class() says of the sibling: the class of its last iteration,
 * LOW only when it waits for us for sure, and HPC_PEER_RAISED when it runs
 * above min_prio. In order:
 *
 * 1. Raised, yet its last iteration waited for a busy sibling: the lead is
 *    too large (a noisy iteration, or it was raised on noise): one step
 *    down; if that wait was deep (HPC_CLASS_DEEP: the loads changed), the
 *    lead is wrong: back to min_prio, also when the sibling has already
 *    taken the lead (see hpc_peer_judged()). A lead is rebuilt one step at
 *    a time.
 * 2. The sibling raised: step down if raised too, else hold. Priority acts
 *    only through the difference of the pair, so a pair at (5, 5) or (6, 6)
 *    is (4, 4) with less room; it is brought back down, never kept, and
 *    nobody is raised beside a raised sibling.
 * 3. Low by the heuristic (the task waits a lot), and the sibling does not
 *    wait too: one step down. Where both wait, they wait for a task
 *    elsewhere, which the pair's lead does not slow: it holds.
 * 4. High by the heuristic, and the sibling waits for us: one step up. A
 *    lead is started (from min_prio) only on an unambiguous wait (not
 *    HPC_PEER_UNSURE: deep, or confirmed by the iteration before, see
 *    hpc_peer_class()) of a sibling while the task was busy in its last two
 *    iterations, so that the noise of a balanced pair never raises anyone:
 *    equal tasks keep equal priorities. A lead already taken grows on any
 *    low iteration of the sibling, unless the task waited itself.
 * 5. Anything else holds: a busy pair is a fixed point, at any difference.
 *
 * One step up per decision bounds any overshoot.
 */
u32 hpc_decide(u32 prio, int own_class, int own_now, int peer,
	       const struct hpc_params *p)
{
	int peer_class = hpc_class_of(peer);
	int now_class = hpc_class_of(own_now);

	prio = hpc_clamp(prio, p);
	if (now_class == HPC_CLASS_LOW && peer_class == HPC_CLASS_HIGH &&
	    prio > p->min_prio)
		return own_now & HPC_CLASS_DEEP ? p->min_prio : prio - 1;
	if (peer >= 0 && (peer & HPC_PEER_RAISED))
		return prio > p->min_prio ? prio - 1 : prio;
	if (own_class == HPC_CLASS_LOW && prio > p->min_prio &&
	    peer_class != HPC_CLASS_LOW)
		return prio - 1;
	if (own_class != HPC_CLASS_HIGH || peer_class != HPC_CLASS_LOW ||
	    prio >= p->max_prio)
		return prio;
	if (prio > p->min_prio ? now_class != HPC_CLASS_LOW :
	    now_class == HPC_CLASS_HIGH && !(peer & HPC_PEER_UNSURE))
		return prio + 1;
	return prio;
}

/*
 * What the detector says of a sibling whose judged iteration computed @run
 * at utilisation @util, after an iteration at @before (HPC_UTIL_SCALE if
 * none, or if it computed nothing): its class, with HPC_PEER_RAISED when
 * @prio, the priority it runs at or ran the judged iteration at, is above
 * min_prio (see hpc_peer_closed()). A low iteration is a wait for us only
 * if (else MEDIUM) it computed something (at least min_wait_us: back-to-back
 * waits, e.g. MPI's start-up, are communication, not a share of a compute
 * phase), and
 *
 * - it is deep (below half of low_util): the loads changed. No noise halves
 *   a balanced task's share, and a raised sibling that waits that long has
 *   the wrong lead and drops it at its own decision (rule 2 of
 *   hpc_decide()): we are the heavy task now, and take the lead at once,
 *   without the raised flag;
 * - or the sibling ran it at min_prio, not raised: the shallow wait of a
 *   raised task comes from its own lead (rule 2 reduces it). It then
 *   carries HPC_PEER_UNSURE unless confirmed by the iteration before it (a
 *   wait that lasts): one noisy iteration of a balanced pair starts no
 *   lead.
 */
static int hpc_peer_judged(u32 prio, u64 run, u32 util, u32 before,
			   const struct hpc_params *p)
{
	u32 low = p->low_util * (HPC_UTIL_SCALE / 100);
	int class = hpc_classify(util, p);
	int raised = prio > p->min_prio ? HPC_PEER_RAISED : 0;

	if (class != HPC_CLASS_LOW)
		return class | raised;
	if (run < (u64)p->min_wait_us * 1000)
		return HPC_CLASS_MEDIUM | raised;
	/* A deep wait: the loads changed; a raised sibling drops its lead. */
	if (util < low / 2)
		return class | HPC_CLASS_DEEP;
	if (raised)
		return HPC_CLASS_MEDIUM | raised;
	if (before >= low)
		return class | HPC_PEER_UNSURE;
	return class;
}

/*
 * hpc_peer_judged() of the last closed iteration of a sibling (snapshot
 * @peer), raised if it runs above min_prio or ran that iteration (at
 * prev_prio) above it: a pair that steps down from (5, 5) one task after
 * the other comes down to (4, 4), not (4, 5).
 */
static int hpc_peer_closed(const struct hpc_task *peer,
			   const struct hpc_params *p)
{
	u32 prio = peer->prio > peer->prev_prio ? peer->prio : peer->prev_prio;

	return hpc_peer_judged(prio, peer->last_run, peer->last_util,
			       peer->prev_util, p);
}

/*
 * The class of a task's own present, from its last (or open) iteration at
 * @util after one at @before: HIGH only when both are high (busy in two
 * iterations running, like the sibling's confirmed wait of
 * hpc_peer_judged()), so that a task that was busy once does not take a step
 * up; LOW on the one iteration, so that a lead it waits for is reduced at
 * once, with HPC_CLASS_DEEP below half of low_util.
 */
static int hpc_own_now(u32 util, u32 before, const struct hpc_params *p)
{
	int class = hpc_classify(util, p);

	if (class == HPC_CLASS_HIGH && hpc_classify(before, p) != HPC_CLASS_HIGH)
		return HPC_CLASS_MEDIUM;
	if (class == HPC_CLASS_LOW &&
	    util < p->low_util * (HPC_UTIL_SCALE / 100) / 2)
		return class | HPC_CLASS_DEEP;
	return class;
}

/*
 * A step down was the lead's own doing: the task's wait was shallow, and
 * its sibling, not raised, computed (rule 1, or rule 3 beside a sibling
 * that does not wait).
 */
static bool hpc_lead_overshot(int own_now, int peer)
{
	int peer_class = hpc_class_of(peer);

	return own_now >= 0 && !(own_now & HPC_CLASS_DEEP) && peer >= 0 &&
	       !(peer & HPC_PEER_RAISED) &&
	       (peer_class == HPC_CLASS_MEDIUM || peer_class == HPC_CLASS_HIGH);
}

/*
 * hpc_decide() for @t, with a lid against a limit cycle. Where the balance
 * point of a pair lies between two priorities, P is too little (the task
 * stays busy, its sibling waits: rule 4 raises it) and P + 1 too much (it
 * waits for its busy sibling: rule 1 or 3 brings it back): alone, the rule
 * would alternate for ever. A task brought down from a lead that overshot
 * (hpc_lead_overshot()) keeps the priority it came down to as its lid and
 * does not rise above it for HPC_LID_DECISIONS decisions, or until the
 * loads change (a deep wait of its own; the sibling's deep waits are the
 * normal state of a pair whose light task computes 25 %, as MetBench's);
 * then it may try once more. Steps down are never held back.
 */
static void hpc_task_decide(struct hpc_task *t, int own_class, int own_now,
			    int peer, const struct hpc_params *p)
{
	u32 prio = hpc_decide(t->prio, own_class, own_now, peer, p);

	if (own_now >= 0 && (own_now & HPC_CLASS_DEEP)) {
		t->lid = 0;
	} else if (prio < t->prio && hpc_lead_overshot(own_now, peer)) {
		t->lid = prio;
		t->lid_left = HPC_LID_DECISIONS;
	} else if (t->lid && !--t->lid_left) {
		t->lid = 0;
	}
	if (t->lid && prio > t->prio && prio > t->lid)
		prio = t->prio > t->lid ? t->prio : t->lid;
	t->prev_prio = t->prio;
	t->prio = prio;
}

void hpc_task_init(struct hpc_task *t, u64 now, const struct hpc_params *p)
{
	t->iter_start = now;
	t->seg_start = now;
	t->cur_run = 0;
	t->sum_run = 0;
	t->sum_total = 0;
	t->last_run = 0;
	t->last_wait = 0;
	t->nr_iter = 0;
	t->judged_at = 0;
	t->nr_judged = 0;
	t->last_util = 0;
	t->prev_util = HPC_UTIL_SCALE;
	t->global_util = 0;
	t->heur_util = 0;
	t->prio = hpc_clamp(HPC_PRIO_NORMAL, p);
	t->prev_prio = t->prio;
	t->ph_util = 0;
	t->ph_nr = 0;
	t->state = HPC_TASK_RUNNABLE;
	t->lid = 0;
	t->lid_left = 0;
}

static u64 hpc_since(u64 now, u64 then)
{
	return now > then ? now - then : 0;
}

/*
 * Fold the running segment into the current iteration (for live readers).
 * A @now before the last fold (a front end that learns of an event late,
 * from a record of it) takes back the run time folded after it: the task
 * did not compute then.
 */
void hpc_task_tick(struct hpc_task *t, u64 now)
{
	u64 back = hpc_since(t->seg_start, now);

	if (t->state != HPC_TASK_RUNNABLE)
		return;
	t->cur_run += hpc_since(now, t->seg_start);
	t->cur_run -= back < t->cur_run ? back : t->cur_run;
	t->seg_start = now;
}

/* The task stops running to sleep: the compute phase (so far) ends. */
void hpc_task_sleep(struct hpc_task *t, u64 now)
{
	if (t->state != HPC_TASK_RUNNABLE)
		return;
	hpc_task_tick(t, now);
	t->state = HPC_TASK_SLEEPING;
}

/* Close the current iteration (t->cur_run computing, @wait waiting); decide. */
static void hpc_close(struct hpc_task *t, u64 now, u64 wait,
		      const struct hpc_params *p, int peer_class)
{
	u64 run = t->cur_run;
	u64 total = run + wait;
	u32 prev_global = t->global_util;
	int own_now;

	/* An iteration that computed nothing is no evidence of a wait. */
	t->prev_util = t->last_run < (u64)p->min_wait_us * 1000 ?
		       HPC_UTIL_SCALE : t->last_util;
	t->last_run = run;
	t->last_wait = wait;
	t->last_util = hpc_util(run, total);
	t->sum_run += run;
	t->sum_total += total;
	t->global_util = hpc_util(t->sum_run, t->sum_total);
	/*
	 * The first iteration is the task's start-up: no iteration before it
	 * confirms a busy one (tasks released together, one of which was
	 * ready last, start equal).
	 */
	own_now = hpc_own_now(t->last_util, t->nr_iter ? t->prev_util : 0, p);
	hpc_phase_reset(t, own_now, peer_class);
	t->ph_util = hpc_phase_mean(t, t->last_util);
	if (t->ph_nr < HPC_PHASE_MAX_NR)
		t->ph_nr++;
	t->heur_util = hpc_heur_util(p, prev_global, t->nr_iter,
				     t->global_util, t->last_util, t->ph_util);
	t->nr_iter++;

	hpc_task_decide(t, hpc_classify(t->heur_util, p), own_now, peer_class,
			p);

	t->iter_start = now;
	t->seg_start = now;
	t->cur_run = 0;
}

/*
 * The task becomes runnable. If it slept at least min_wait_us, its iteration
 * closes, the heuristic runs and t->prio holds the priority for the next
 * compute phase. @peer_class is what hpc_peer_class() says of the task on
 * the sibling context (HPC_CLASS_NONE if there is none).
 * Returns 1 if an iteration closed, 0 otherwise.
 */
int hpc_task_wakeup(struct hpc_task *t, u64 now, const struct hpc_params *p,
		    int peer_class)
{
	u64 wait;

	if (t->state != HPC_TASK_SLEEPING)
		return 0;
	wait = hpc_since(now, t->seg_start);
	t->state = HPC_TASK_RUNNABLE;
	t->seg_start = now;
	if (!hpc_wait_closes(wait, p)) {
		t->cur_run += wait;
		return 0;
	}
	hpc_close(t, now, wait, p, peer_class);
	return 1;
}

/*
 * How long a task computes without a wait before its pair is taken for a
 * busy one (hpc_pair_busy()): HPC_BUSY_PAIR_NS, or twice its last iteration
 * if that is longer.
 */
static u64 hpc_busy_horizon(const struct hpc_task *t)
{
	u64 twice = 2 * (t->last_run + t->last_wait);

	return twice > HPC_BUSY_PAIR_NS ? twice : HPC_BUSY_PAIR_NS;
}

/*
 * Neither @t nor its sibling @peer has waited for a whole horizon
 * (hpc_busy_horizon()): nobody waits for anybody, so nothing justifies a
 * lead. Rule 5 of hpc_decide() keeps a busy pair where it is, which holds
 * the lead of a pair balanced by it: there the light task still waits, a
 * little, in every iteration. Tasks that never wait at all (their lead, if
 * any, was taken on a start-up wait) are equal: a raised @t steps down one
 * priority per horizon, back to min_prio. Returns 1 if it did.
 */
static int hpc_pair_busy(struct hpc_task *t, u64 now,
			 const struct hpc_params *p,
			 const struct hpc_task *peer)
{
	u64 horizon = hpc_busy_horizon(t);

	if (t->prio <= p->min_prio || t->state != HPC_TASK_RUNNABLE ||
	    peer->state != HPC_TASK_RUNNABLE ||
	    hpc_since(now, t->iter_start) < horizon ||
	    hpc_since(now, peer->iter_start) < hpc_busy_horizon(peer) ||
	    hpc_since(now, t->judged_at) < horizon)
		return 0;
	t->judged_at = now;
	t->nr_judged++;
	t->prev_prio = t->prio;
	t->prio = hpc_clamp(t->prio - 1, p);
	return 1;
}

/*
 * The task on the sibling context (snapshot @peer) has closed an iteration.
 * A task on the critical path never waits, so its own iterations never close
 * and it would never be judged. It is judged here instead, without closing
 * anything (its accounting stays exactly what its own run/sleep says): on
 * the utilisation its open iteration would have if it closed now, against
 * the sibling's iteration that just closed.
 *
 * @t qualifies when it is runnable, its open iteration spans the sibling's
 * whole last iteration, and it is overdue: it has closed nothing yet, or its
 * open iteration already lasts longer than its last closed one. A task that
 * waits regularly, only with a longer period than its sibling, is judged at
 * its own wake-ups, not mid-compute (where its live utilisation would look
 * high whatever its real one). Idempotent: each sibling iteration judges @t
 * at most once (t->judged_at). Before all this, a raised @t of a busy
 * pair gives its lead back (hpc_pair_busy()).
 *
 * The sibling's iteration must still be news: one that closed a whole busy
 * horizon ago (hpc_busy_horizon()) is over, the sibling has computed ever
 * since, and waits for nobody. Judged on it again, after a step down of
 * hpc_pair_busy() or after a migration brought a new sibling, @t would take
 * its lead back at every tick.
 * Returns 1 if @t was judged (t->prio may have changed), 0 otherwise.
 */
int hpc_task_sibling_judge(struct hpc_task *t, u64 now,
			   const struct hpc_params *p,
			   const struct hpc_task *peer)
{
	u64 peer_prev_start, open;
	u32 live, global;
	int peer_class;

	if (hpc_pair_busy(t, now, p, peer))
		return 1;
	if (t->state != HPC_TASK_RUNNABLE || !peer->nr_iter ||
	    now < peer->iter_start || t->judged_at == peer->iter_start ||
	    hpc_since(now, peer->iter_start) >= hpc_busy_horizon(peer))
		return 0;
	peer_prev_start = hpc_since(peer->iter_start,
				    peer->last_run + peer->last_wait);
	if (t->iter_start > peer_prev_start)
		return 0;
	open = hpc_since(now, t->iter_start);
	if (t->nr_iter && open <= t->last_run + t->last_wait)
		return 0;

	hpc_task_tick(t, now);
	live = hpc_util(t->cur_run, open);
	global = hpc_util(t->sum_run + t->cur_run, t->sum_total + open);
	peer_class = hpc_peer_closed(peer, p);
	hpc_phase_reset(t, HPC_CLASS_NONE, peer_class);
	t->heur_util = hpc_heur_util(p, t->global_util, t->nr_iter, global,
				     live, hpc_phase_mean(t, live));
	t->judged_at = peer->iter_start;
	t->nr_judged++;
	/* Busy through the sibling's whole iteration and overdue: confirmed. */
	hpc_task_decide(t, hpc_classify(t->heur_util, p),
			hpc_classify(live, p), peer_class, p);
	return 1;
}

/* Bring t->prio back into [min_prio, max_prio] after the knobs changed. */
u32 hpc_task_clamp_prio(struct hpc_task *t, const struct hpc_params *p)
{
	t->prio = hpc_clamp(t->prio, p);
	return t->prio;
}

/*
 * The priority @t computes with: @fixed if the task has one (a fixed
 * priority is kept whatever the core decides; its iterations are still
 * accounted, and its sibling sees it), else the core's, within the knobs.
 */
u32 hpc_task_next_prio(struct hpc_task *t, const struct hpc_params *p,
		       u32 fixed)
{
	if (fixed) {
		t->prio = fixed;
		return fixed;
	}
	return hpc_task_clamp_prio(t, p);
}

/*
 * @t becomes runnable at @now: if it was sleeping, close its iteration when
 * the wait was long enough, judging the task on the sibling context from
 * its snapshot @peer (NULL: none). 1 if it decided: t->prio is then the
 * priority of the next compute phase (@fixed: see hpc_task_next_prio()).
 */
int hpc_on_wakeup(struct hpc_task *t, u64 now, const struct hpc_params *p,
		  const struct hpc_task *peer, u32 fixed)
{
	int peer_class = HPC_CLASS_NONE;

	if (t->state != HPC_TASK_SLEEPING)
		return 0;
	if (peer)
		peer_class = hpc_peer_class(peer, now, t->seg_start, p);
	if (!hpc_task_wakeup(t, now, p, peer_class))
		return 0;
	hpc_task_next_prio(t, p, fixed);
	return 1;
}

/*
 * The periodic event of a task that computes (the scheduler tick, or a
 * front end's own period): fold its run time, and judge it if it computed
 * through an iteration its sibling @peer (NULL: none) closed, or if the
 * pair is busy (hpc_task_sibling_judge()). 1 if it decided, as for
 * hpc_on_wakeup().
 */
int hpc_on_tick(struct hpc_task *t, u64 now, const struct hpc_params *p,
		const struct hpc_task *peer, u32 fixed)
{
	hpc_task_tick(t, now);
	if (!peer || !hpc_task_sibling_judge(t, now, p, peer))
		return 0;
	hpc_task_next_prio(t, p, fixed);
	return 1;
}

/*
 * Class of the task on the sibling context, from a snapshot @peer of its
 * state, as seen by a task that went to sleep at @since and wakes at @now.
 *
 * This is the load-imbalance detector: it asks whether the sibling waits for
 * us *now*, so it judges the sibling's last iteration only, not its history
 * (the heuristics judge the task's own utilisation). If the sibling closed
 * an iteration while we waited (it woke at the same barrier, a little
 * earlier), that iteration is the answer, also when the sibling has since
 * computed and gone back to sleep before our wake-up was handled; otherwise
 * its open iteration is judged as if it closed now: a sibling that has been
 * computing all along is high, one that has been waiting is low. Either is
 * LOW only under the conditions of hpc_peer_judged(), and carries
 * HPC_PEER_RAISED when the sibling runs above min_prio (hpc_decide()).
 */
int hpc_peer_class(const struct hpc_task *peer, u64 now, u64 since,
		   const struct hpc_params *p)
{
	u64 run, total;
	u32 before;

	if (peer->nr_iter && peer->iter_start >= since)
		return hpc_peer_closed(peer, p);

	run = peer->cur_run;
	if (peer->state == HPC_TASK_RUNNABLE)
		run += hpc_since(now, peer->seg_start);
	total = hpc_since(now, peer->iter_start);
	if (!total)
		return HPC_CLASS_NONE;
	before = peer->nr_iter && peer->last_run >= (u64)p->min_wait_us * 1000 ?
		 peer->last_util : HPC_UTIL_SCALE;
	return hpc_peer_judged(peer->prio, run, hpc_util(run, total), before, p);
}
