/* libhpclb: cross-node rebalancing, C API.
 *
 * Every function returning int returns 0 on success and -1 on bad input;
 * hpclb_last_error() then says why (per thread), and nothing was changed.
 * The C++ API (hpclb/hpclb.hpp) is the same functions with exceptions; the
 * MPI step function is in hpclb/hpclb_mpi.h.
 */
#ifndef HPCLB_H
#define HPCLB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *hpclb_last_error(void);

/* DRUM machine tree (Faik et al. §3): read from the paper's XML format. */
typedef struct hpclb_tree hpclb_tree;
hpclb_tree *hpclb_tree_parse_xml(const char *xml); /* NULL on error */
hpclb_tree *hpclb_tree_load_xml(const char *path); /* NULL on error */
hpclb_tree *hpclb_tree_flat(const char *const *hosts, size_t n);
void hpclb_tree_free(hpclb_tree *t);
/* Capabilities of a computing node: benchmark MFLOPS b_n, CPU used by the
 * job u_n and idle CPU i_n (in CPUs). */
int hpclb_tree_set_cpu(hpclb_tree *t, int id, double mflops, double cpu_util, double cpu_idle);
/* An interface of a node: speed (MB/s) and CAF = packets in + out per s. */
int hpclb_tree_add_interface(hpclb_tree *t, int id, double speed_mbs, double caf);
/* Node powers (§3.3) with w_dynamic in [0, 1]. */
int hpclb_tree_compute(hpclb_tree *t, double w_dynamic);
/* Computing nodes in depth-first order: ids and shares of the total work
 * (they add up to 1). Returns how many there are (fills at most cap). */
size_t hpclb_tree_leaves(const hpclb_tree *t, int *ids, double *shares, size_t cap);
/* H_cpu (§4) of n CPU speeds (all > 0); negative on error. */
double hpclb_h_cpu(const double *speeds, size_t n);

/* Cloud-aware refinement (Gupta et al. Algorithm 1). */
typedef struct {
	double freq;       /* f_p, iterations/s of the speed loop */
	double background; /* O_p, seconds */
} hpclb_vcpu;
typedef struct {
	int64_t id;
	double cpu_time; /* t_i, seconds */
	int proc;        /* where it ran */
	uint64_t bytes;
} hpclb_task;
/* new_proc[i]: the VCPU of task i after the plan; imbalance (max/avg of the
 * ticks) before and after may be NULL. */
int hpclb_refine(const hpclb_vcpu *vcpus, size_t nvcpu, const hpclb_task *tasks, size_t ntask,
		 double epsilon, int *new_proc, double *imbalance_before, double *imbalance_after);
/* The same with the communication graph: task i's peers (ids of the tasks
 * it exchanges data with) are peers[peer_start[i] .. peer_start[i + 1]);
 * peer_start has ntask + 1 non-decreasing entries. A donor then gives the
 * task with the most peers on the receiver less those left behind. -1 (and
 * nothing written) on a peer that is no task or a bad peer_start. */
int hpclb_refine_peers(const hpclb_vcpu *vcpus, size_t nvcpu, const hpclb_task *tasks, size_t ntask,
		       double epsilon, const size_t *peer_start, const int64_t *peers,
		       int *new_proc, double *imbalance_before, double *imbalance_after);
double hpclb_background_load(double t_lb, double task_time, double t_idle);

/* Container migration plan (Zhao et al. Algorithm 2). */
typedef struct {
	double ecu;      /* NumECU: capacity */
	double interval; /* execution time this period */
	double psi;      /* imbalance indicator psi_k (seconds) */
} hpclb_host;
typedef struct {
	int64_t id;
	int host;
	double exe_t;   /* sliding-window execution time, seconds */
	uint64_t bytes; /* state to move */
} hpclb_container;
typedef struct {
	int64_t id;
	int from, to;
} hpclb_move;
/* Writes at most cap moves; *nmoves is the plan's length. */
int hpclb_migration_plan(const hpclb_host *hosts, size_t nhost, const hpclb_container *c, size_t nc,
			 double dump_rate, hpclb_move *moves, size_t cap, size_t *nmoves);

/* Damping of the plans (hpclb::Damper; every method goes through it over
 * MPI): a plan only when the same rank was overloaded (time >= (1 +
 * threshold) x the mean) in `persistence` LB periods in a row, made from the
 * loads averaged over them; at most min(max_moves, max(1, max_move_fraction
 * x units)) moves, largest first, each shortening the longer of its two
 * ranks' times; a unit is not sent back where the last plan took it from
 * unless the imbalance clearly reversed; kept only if the slowest rank's
 * time falls by min_gain of it and the saving over `horizon` periods
 * exceeds bytes / move_rate; a plan that did not deliver half of the
 * improvement it predicted doubles the periods the next one needs, up to
 * max_backoff x persistence. Defaults: 3, 0.10, 0.05, 0.25, INT64_MAX,
 * 100e6, 10, 8. */
typedef struct {
	int persistence;          /* periods, >= 1 (1: a plan at every overloaded period) */
	double threshold;         /* >= 0 */
	double min_gain;          /* [0, 1) */
	double max_move_fraction; /* (0, 1] */
	int64_t max_moves;        /* >= 1 */
	double move_rate;         /* bytes/s, > 0 */
	int horizon;              /* periods, >= 1 */
	int max_backoff;          /* >= 1 (1: no backoff) */
} hpclb_damping;
void hpclb_damping_defaults(hpclb_damping *d);
typedef struct hpclb_damper hpclb_damper;
hpclb_damper *hpclb_damper_new(const hpclb_damping *d); /* NULL on bad parameters */
void hpclb_damper_free(hpclb_damper *d);
int hpclb_damper_set(hpclb_damper *d, const hpclb_damping *p);
/* One LB period: the units where they ran with their loads (cpu_time, s)
 * and each rank's effective speed (> 0); *plan is 1 when a plan may be made
 * now, else 0. */
int hpclb_damper_observe(hpclb_damper *d, const hpclb_task *tasks, size_t ntask,
			 const double *speeds, size_t nrank, int *plan);
/* The last period's units, in the same order, with loads averaged over the
 * window (what a plan is made from). Writes at most cap; *n is how many. */
int hpclb_damper_smoothed(const hpclb_damper *d, hpclb_task *out, size_t cap, size_t *n);
/* Filters a plan in place: *n moves in, the kept ones (in order) out. */
int hpclb_damper_admit(hpclb_damper *d, hpclb_move *moves, size_t *n);

/* RUPER-LB task (speed-based redistribution of iterations). */
typedef struct hpclb_ruper hpclb_ruper;
typedef struct {
	double checkpoint_interval, threshold, max_deviation, min_report, max_report;
} hpclb_ruper_params;
void hpclb_ruper_defaults(hpclb_ruper_params *p);
hpclb_ruper *hpclb_ruper_new(uint64_t iterations, size_t workers, const hpclb_ruper_params *p,
			     double now);
void hpclb_ruper_free(hpclb_ruper *r);
/* Returns the worker's preliminary assignment. */
int hpclb_ruper_start(hpclb_ruper *r, size_t w, double now, uint64_t *assigned);
/* Returns the suggested time until the next report in *next. */
int hpclb_ruper_report(hpclb_ruper *r, size_t w, uint64_t done, double now, double *next);
/* 0 finish, 1 report first, 2 continue (more iterations were assigned). */
int hpclb_ruper_request_finish(hpclb_ruper *r, size_t w, double now, int *answer);
uint64_t hpclb_ruper_assigned(const hpclb_ruper *r, size_t w);
int hpclb_ruper_finished(const hpclb_ruper *r);

#ifdef __cplusplus
}
#endif
#endif
