/* libhpclb over MPI: the step function an application calls at its
 * synchronisation points, and point-to-point helpers to move its units.
 *
 * Who decides: rank 0 of a duplicate of the application's communicator.
 * Every rank sends its units (id, load, bytes) and its own measures (speed,
 * background load) with one MPI_Gatherv; rank 0 runs the plan (a pure,
 * deterministic function) and broadcasts it with one MPI_Bcast, so every
 * rank applies the same plan. One decider keeps the plan global (the
 * refinement and the migration plan look at every VCPU at once, as in the
 * papers) and costs O(units) bytes gathered plus the plan's O(U log U) time
 * on one rank: 1e5 units on 1e3 ranks is ~2.4 MB and well under a second
 * (make bench prints the decision time). Past that, a tree of deciders
 * (one per DRUM network node) would split the work; it is not built here.
 */
#ifndef HPCLB_MPI_H
#define HPCLB_MPI_H

#include "hpclb.h"
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hpclb_mode {
	HPCLB_MODE_NONE = 0,      /* measure and report only */
	HPCLB_MODE_REFINE = 1,    /* cloud-aware refinement (Algorithm 1) */
	HPCLB_MODE_CONTAINER = 2, /* container migration plan (Algorithm 2) */
	HPCLB_MODE_DRUM = 3,      /* DRUM node powers as shares, placed by refinement */
};

typedef struct hpclb_ctx hpclb_ctx;

/* Collective over comm (which is duplicated). Measures this rank's speed with
 * the refinement paper's loop (Figure 2). NULL on error (same on all ranks). */
hpclb_ctx *hpclb_mpi_new(MPI_Comm comm, int mode);
/* Collective. */
void hpclb_mpi_free(hpclb_ctx *c);
/* This rank's speed f_p (the Figure 2 loop's iterations per CPU second at
 * hpclb_mpi_new). At every step the refinement multiplies it by the CPU share
 * the rank had over the period (smoothed): its effective speed. */
double hpclb_mpi_speed(const hpclb_ctx *c);
/* Override this rank's speed f_p (e.g. an emulated slower CPU); > 0. */
int hpclb_mpi_set_speed(hpclb_ctx *c, double f);
/* Refinement tolerance epsilon as a fraction of Tk_avg (default 0.02). */
int hpclb_mpi_set_epsilon(hpclb_ctx *c, double fraction);
/* The damping every plan (refine, container, drum) goes through on rank 0
 * (hpclb_damping in hpclb.h; hpclb_damping_defaults gives the defaults,
 * which the context starts with). Set it on every rank alike; a bad value
 * returns -1 and changes nothing. */
int hpclb_mpi_set_damping(hpclb_ctx *c, const hpclb_damping *d);
int hpclb_mpi_damping(const hpclb_ctx *c, hpclb_damping *d);
/* The damping's min_gain alone: a plan moves nothing unless it shortens the
 * slowest rank's predicted time by at least this fraction (default 0.05;
 * [0, 1)). */
int hpclb_mpi_set_min_gain(hpclb_ctx *c, double fraction);
/* Migration cost: bytes per second of a move (default 100e6): the container
 * plan's dump rate and the damping's move_rate. */
int hpclb_mpi_set_dump_rate(hpclb_ctx *c, double bytes_per_s);
/* A unit this rank holds, with its measured load (seconds) since the last
 * step and its size in bytes. Register every unit once per period. */
int hpclb_mpi_unit(hpclb_ctx *c, int64_t id, double load, uint64_t bytes);
/* Optional: the units unit `id` exchanges data with (its neighbours in the
 * application's communication graph, e.g. a stencil block's), registered
 * with the unit each period. The refinement (and DRUM's placement) then
 * gives away, among the units that fit, the one with the most peers on the
 * receiver less those left behind, so moved work stays next to its peers
 * and the halo that crosses nodes does not grow with every move. Every peer
 * must be a registered unit (the step fails with the unit's id otherwise).
 * -1 when n > 0 and peers is NULL. */
int hpclb_mpi_unit_peers(hpclb_ctx *c, int64_t id, const int64_t *peers, size_t n);
/* Time (s) this rank waited for others since the last step (e.g. in its
 * halo exchange). When a rank reports it, its background load is
 * O_p = T_lb - sum(load) - wait (Eq. 2 with the rank's own idle time);
 * otherwise t_idle is its share of its CPUs' idle time from /proc/stat. */
int hpclb_mpi_wait(hpclb_ctx *c, double seconds);
/* Since the last step this rank ran its units for `wall` seconds (wall
 * clock) and had its CPU for `cpu` of them: the CPU time of the thread that
 * ran them (hpclb_thread_seconds()), read around the loop
 * over the units rather than around each (a read costs about 0.5 us). May be
 * called any number of times per period; the sums count. When a rank reports
 * it, its CPU share (its speed is f_p times the share) is cpu / wall over its
 * units, whatever it does while it waits: a rank that busy-polls in MPI under
 * a CPU quota spends the quota polling, and the share measured over the whole
 * period takes it for faster than it is. Without it, the share is the
 * process's CPU time over the period less the reported waits. -1 when a time
 * is negative or not finite, or when `cpu` exceeds `wall` (a process's CPU
 * time over several threads); nothing is counted then. */
int hpclb_mpi_busy(hpclb_ctx *c, double wall, double cpu);
/* CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID): read it
 * around the loop over the units, for hpclb_mpi_busy. */
double hpclb_thread_seconds(void);
/* Collective: decide. Afterwards hpclb_mpi_moves() is the plan (the same on
 * every rank); imbalance (max/avg of the loads, before and predicted after)
 * may be NULL. */
int hpclb_mpi_step(hpclb_ctx *c, double *imbalance_before, double *imbalance_after);
size_t hpclb_mpi_moves(const hpclb_ctx *c, const hpclb_move **moves);
/* Collective: apply the plan's moves of contiguous buffers. For each move
 * from this rank, get(id) gives the buffer to send (it may be freed after the
 * call returns); for each move to this rank, put(id, buf, len) receives it
 * (buf is valid during the call only). */
typedef const void *(*hpclb_get_fn)(int64_t id, size_t *len, void *arg);
typedef void (*hpclb_put_fn)(int64_t id, const void *buf, size_t len, void *arg);
int hpclb_mpi_exchange(hpclb_ctx *c, hpclb_get_fn get, hpclb_put_fn put, void *arg);
/* DRUM mode: the machine tree from the paper's XML file (read on rank 0)
 * instead of the discovered one (one computing node per host name). A
 * computing node's description is its host name: MPI_Get_processor_name of
 * the first rank of the node's shared-memory group, or $HPCLB_HOST when set.
 * Collective; -1 on every rank (and the tree unchanged) when the file is
 * bad, a rank's host is no computing node, or a computing node has no rank. */
int hpclb_mpi_set_machine(hpclb_ctx *c, const char *xml_path);
/* (Re)start the monitor thread (CPU used by this rank, idle CPU, memory,
 * packets per interface) with this period, seconds in [0.001, 60]. DRUM mode
 * starts one at 0.1 s; the step reads its aggregates. A bad period changes
 * nothing. hpclb_mpi_free stops it. */
int hpclb_mpi_set_monitor_period(hpclb_ctx *c, double seconds);
/* Samples the monitor thread took so far (0 without one). */
size_t hpclb_mpi_monitor_samples(const hpclb_ctx *c);
/* Measure f_p again at every step, for `seconds` of the Figure 2 loop (all
 * ranks at once); 0 (the default) measures it once, at hpclb_mpi_new. A
 * speed set with hpclb_mpi_set_speed scales the later measures alike. */
int hpclb_mpi_set_remeasure(hpclb_ctx *c, double seconds);
/* The communicator the library uses (the duplicate). */
MPI_Comm hpclb_mpi_comm(const hpclb_ctx *c);

/* RUPER-LB at thread and MPI level (collective; MPI initialised with at
 * least MPI_THREAD_FUNNELED: only the calling thread uses MPI). `iterations`
 * iterations are split over `threads` threads on every rank of comm; each
 * thread calls fn(count, thread, arg) to run `count` iterations (at most
 * `chunk` at a time). Threads report to their rank's task; the calling
 * thread is the rank's monitor: it reports the predicted iterations done to
 * rank 0 (§2.2), which re-assigns the remaining iterations by speed at its
 * checkpoints until the predicted remaining time is below the threshold,
 * then freezes the assignment. On return, *done_here is what this rank ran
 * and *done_total (all ranks) is >= iterations; it exceeds it only by what
 * ran between a report and its answer. Returns 0, or -1 (bad input, same on
 * all ranks). */
typedef void (*hpclb_iter_fn)(uint64_t count, int thread, void *arg);
int hpclb_ruper_mpi_run(MPI_Comm comm, uint64_t iterations, int threads, uint64_t chunk,
			const hpclb_ruper_params *p, hpclb_iter_fn fn, void *arg,
			uint64_t *done_here, uint64_t *done_total);

#ifdef __cplusplus
}
#endif
#endif
