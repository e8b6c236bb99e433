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
