// SPDX-License-Identifier: GPL-2.0
/*
 * SMT throughput model of the SCHED_HPC emulation backend.
 *
 * Decode split (POWER5): with priorities a > b on the two contexts of a core,
 * d = a - b and R = 2^(d + 1); the higher context gets R - 1 of every R
 * decode cycles, the lower one gets 1. Priorities 0 (thread off),
 * 1 (background: leftovers) and 7 (single-thread mode) are outside the
 * table and handled first.
 *
 * Speed map: a piecewise-linear map from decode share to speed, given by the
 * knots below. Two busy contexts at equal priority run at 60 % of
 * single-thread speed each; at d = 2 the high context runs at 961 permille
 * (95 % of the gain of d = 5, as the POWER5 characterisation reports) and
 * the low one at 174.
 *
 * A waiting sibling. A context whose task waits (for a message or at a
 * barrier, sleeping or polling) runs no task at the task's priority: its
 * wait releases the core (single-thread mode) for HPC_SMT_WAIT_RELEASED
 * permille of the time, and competes at normal priority (4) for the rest,
 * whatever its task's priority. The busy context's speed is the average.
 *
 * The knots and HPC_SMT_WAIT_RELEASED are one least-squares fit to the
 * paper's Tables III, IV and V (baseline and static rows, times and
 * % compute): the hpcsched project's tools/sim/fit/fit_smt.py prints it,
 * with its residuals, and its sched-hpc-policy.rst discusses it.
 */
#include "hpc_smt.h"

struct hpc_smt_knot {
	u32 share;	/* decode share, 1/HPC_SHARE_SCALE */
	u32 speed;	/* permille of single-thread speed */
};

static const struct hpc_smt_knot hpc_smt_knots[] = {
	{    0,   0 },
	{  128, 174 },
	{  256, 495 },
	{  512, 600 },
	{  768, 913 },
	{  896, 961 },
	{ 1024, 983 },
};

#define HPC_SMT_NR_KNOTS	ARRAY_SIZE(hpc_smt_knots)

/* Speed (permille) of a busy context that gets @share of the decode cycles. */
u32 hpc_smt_share_speed(u32 share)
{
	unsigned int i;

	if (share >= HPC_SHARE_SCALE)
		return hpc_smt_knots[HPC_SMT_NR_KNOTS - 1].speed;
	for (i = 1; i < HPC_SMT_NR_KNOTS; i++) {
		const struct hpc_smt_knot *a = &hpc_smt_knots[i - 1];
		const struct hpc_smt_knot *b = &hpc_smt_knots[i];

		if (share <= b->share)
			return a->speed + (share - a->share) *
			       (b->speed - a->speed) / (b->share - a->share);
	}
	return hpc_smt_knots[HPC_SMT_NR_KNOTS - 1].speed;
}

/*
 * Decode share (1/HPC_SHARE_SCALE) of a context at priority @own whose
 * sibling, also busy, is at @sib. Both priorities must be within 1..6.
 */
u32 hpc_smt_decode_share(u32 own, u32 sib)
{
	u32 d, r;

	if (own == 1 && sib == 1)
		return HPC_SHARE_SCALE / 2;
	/* A background context gets what the foreground leaves over. */
	if (own == 1)
		return HPC_SHARE_SCALE >> (HPC_SMT_MAX_DIFF + 1);
	if (sib == 1)
		return HPC_SHARE_SCALE - (HPC_SHARE_SCALE >> (HPC_SMT_MAX_DIFF + 1));

	d = own > sib ? own - sib : sib - own;
	if (d > HPC_SMT_MAX_DIFF)
		d = HPC_SMT_MAX_DIFF;
	r = 1U << (d + 1);
	if (own > sib)
		return HPC_SHARE_SCALE - HPC_SHARE_SCALE / r;
	if (own < sib)
		return HPC_SHARE_SCALE / r;
	return HPC_SHARE_SCALE / 2;
}

/*
 * Speed (permille of single-thread speed) of a context at priority @own
 * beside a sibling context at priority @sib. @sib_busy: the sibling
 * computes; false when its task waits (sleeping or polling in a wait) or it
 * has no task: the waiting sibling releases the core part of the time and
 * competes at normal priority for the rest, whatever @sib. @sib 0 (context
 * off) or @own 7 is single-thread mode.
 */
u32 hpc_smt_speed(u32 own, u32 sib, bool sib_busy)
{
	u32 shared;

	if (own == 0)
		return 0;
	if (sib == 0 || own >= 7)
		return HPC_SMT_SCALE;
	if (sib_busy)
		return sib >= 7 ? 0 :
		       hpc_smt_share_speed(hpc_smt_decode_share(own, sib));
	shared = hpc_smt_share_speed(hpc_smt_decode_share(own, HPC_SMT_PRIO_NORMAL));
	return (HPC_SMT_WAIT_RELEASED * HPC_SMT_SCALE +
		(HPC_SMT_SCALE - HPC_SMT_WAIT_RELEASED) * shared) / HPC_SMT_SCALE;
}

/*
 * Real 2-way SMT core (x86 Hyper-Threading). The hardware gives two busy
 * threads the same speed s2 = HPC_SMT_REAL_DUAL_SPEED; the only lever left
 * is time. The lighter thread may run for a duty q of every bandwidth
 * period, the heavier one runs all the time, alone for the rest of it:
 *
 *	v_lo = q * s2,	v_hi = q * s2 + (1 - q)	(single-thread speed = 1)
 *
 * Their ratio is the POWER5 model's, r = hpc_smt_speed(hi, lo, true) /
 * hpc_smt_speed(lo, hi, true) = P_hi / P_lo, when v_hi / v_lo = r:
 *
 *	q = 1 / (1 + s2 * (r - 1)) = P_lo / (P_lo + s2 * (P_hi - P_lo))
 *
 * Priorities outside HPC_SMT_EMUL_PRIO_MIN..MAX count as the nearer end:
 * a budget can neither switch a thread off nor give it the whole core.
 */

/*
 * Permille of every bandwidth period that a context at priority @own may
 * run while its sibling hardware thread is busy at priority @sib: 1000 at
 * an equal or higher priority, else the duty above, rounded to the nearest
 * permille and at least 1.
 */
u32 hpc_smt_real_duty(u32 own, u32 sib)
{
	u32 lo, hi, num, den, q;

	if (own < HPC_SMT_EMUL_PRIO_MIN)
		own = HPC_SMT_EMUL_PRIO_MIN;
	if (own > HPC_SMT_EMUL_PRIO_MAX)
		own = HPC_SMT_EMUL_PRIO_MAX;
	if (sib < HPC_SMT_EMUL_PRIO_MIN)
		sib = HPC_SMT_EMUL_PRIO_MIN;
	if (sib > HPC_SMT_EMUL_PRIO_MAX)
		sib = HPC_SMT_EMUL_PRIO_MAX;
	if (own >= sib)
		return HPC_SMT_SCALE;

	lo = hpc_smt_speed(own, sib, true);
	hi = hpc_smt_speed(sib, own, true);
	if (hi > HPC_SMT_SCALE)
		hi = HPC_SMT_SCALE;
	if (hi <= lo)
		return HPC_SMT_SCALE;
	/* lo < hi <= 1000: num <= 10^9, den <= 10^6, no overflow in u32. */
	num = HPC_SMT_SCALE * HPC_SMT_SCALE * lo;
	den = HPC_SMT_SCALE * lo + HPC_SMT_REAL_DUAL_SPEED * (hi - lo);
	q = (num + den / 2) / den;
	return q ? q : 1;
}

/*
 * Speed (permille of single-thread speed) of a context at priority @own
 * whose sibling hardware thread is busy at priority @sib, both running
 * under hpc_smt_real_duty(): s2 while both run, 1000 while @own runs alone.
 */
u32 hpc_smt_real_speed(u32 own, u32 sib)
{
	u32 q_own = hpc_smt_real_duty(own, sib);
	u32 q_sib = hpc_smt_real_duty(sib, own);
	u32 both = q_own < q_sib ? q_own : q_sib;

	/* <= 1000 * 1000 + 1000 * 650 + 500: no overflow in u32. */
	return (both * HPC_SMT_REAL_DUAL_SPEED +
		(q_own - both) * HPC_SMT_SCALE + HPC_SMT_SCALE / 2) /
	       HPC_SMT_SCALE;
}
