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
 * Speed map: a concave, piecewise-linear map from decode share to speed,
 * given by the knots below. Two busy contexts at equal priority run at 60 %
 * of single-thread speed each; most of what a higher priority can win is won
 * by d = 2 (92 % of the gain of d = 5) while the low context loses speed
 * steeply, as the POWER5 characterisation reports. The knots are calibrated
 * on MetBench (polling waits, light load 25.34 % of the heavy one): its
 * static best priorities are (4, 6), as in the paper, with the paper's 13 %
 * gain; (4, 5) gains a little less. The unit tests and the simulator's
 * calibration test keep it so; Documentation/scheduler/sched-hpc-policy.rst
 * gives the derivation.
 */
#include "hpc_smt.h"

struct hpc_smt_knot {
	u32 share;	/* decode share, 1/HPC_SHARE_SCALE */
	u32 speed;	/* permille of single-thread speed */
};

static const struct hpc_smt_knot hpc_smt_knots[] = {
	{    0,   0 },
	{  128, 175 },
	{  512, 600 },
	{  768, 688 },
	{  896, 700 },
	{ 1024, 710 },
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
 * Speed (permille of single-thread speed) of a context at priority @own,
 * given its sibling's priority @sib and whether the sibling is busy.
 */
u32 hpc_smt_speed(u32 own, u32 sib, bool sib_busy)
{
	if (own == 0)
		return 0;
	if (!sib_busy || sib == 0 || own >= 7)
		return HPC_SMT_SCALE;
	if (sib >= 7)
		return 0;
	return hpc_smt_share_speed(hpc_smt_decode_share(own, sib));
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
