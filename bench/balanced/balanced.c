/*
 * balanced: a balanced MPI application, the shape of NAS BT-MZ class A with
 * NPB's own zone balancing (4 ranks of nearly equal work). Every step each
 * rank computes its share (the same for all, scaled by a deterministic
 * per-rank, per-step noise of +-NOISE %), then exchanges a boundary with
 * both ring neighbours (MPI_Isend / MPI_Irecv / MPI_Waitall). The ranks
 * compute 88-91 % of the time, as BT-MZ class A does.
 *
 * The same program in Fortran is balanced.f90: the same options, the same
 * noise, the same output. This one is C so that libhpcmon (a PMPI monitor of
 * the C bindings) sees its MPI calls.
 *
 * usage: balanced [--steps N] [--work N] [--noise PCT] [--json] [--trace FILE]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HALO 1024		/* doubles per boundary message */
#define VEC 4096		/* the compute kernel's vector */

/* Noise factor of rank r in step s: 1 + noise/100 * (2u - 1), u in [0, 1). */
static double noise_factor(int r, int s, double noise)
{
	int64_t x = (int64_t)(r + 1) * 1000003 + (int64_t)(s + 1) * 7919;
	int k;

	for (k = 0; k < 3; k++)
		x = (x * 1103515245 + 12345) % 2147483648LL;
	return 1.0 + noise / 100.0 * (2.0 * (double)x / 2147483648.0 - 1.0);
}

/* @units passes of a fixed floating-point kernel over a vector. */
static double compute(double *a, long units)
{
	double acc = 0;
	long u;
	int i;

	for (u = 0; u < units; u++)
		for (i = 0; i < VEC; i++) {
			a[i] = a[i] * 0.999999 + 1e-6 * (double)i;
			acc += a[i];
		}
	return acc;
}

struct opts {
	int steps;
	long work;
	double noise;
	int json;
	const char *trace;
};

static int parse(int argc, char **argv, struct opts *o)
{
	int i;

	o->steps = 200;
	o->work = 400;
	o->noise = 5;
	o->json = 0;
	o->trace = NULL;
	for (i = 1; i < argc; i++) {
		char *end = NULL;
		int has = i + 1 < argc;

		if (!strcmp(argv[i], "--json")) {
			o->json = 1;
		} else if (!strcmp(argv[i], "--steps") && has) {
			o->steps = (int)strtol(argv[++i], &end, 10);
			if (*end || o->steps < 1 || o->steps > 1000000)
				return -1;
		} else if (!strcmp(argv[i], "--work") && has) {
			o->work = strtol(argv[++i], &end, 10);
			if (*end || o->work < 1 || o->work > 100000000)
				return -1;
		} else if (!strcmp(argv[i], "--noise") && has) {
			o->noise = strtod(argv[++i], &end);
			if (*end || !(o->noise >= 0 && o->noise < 100))
				return -1;
		} else if (!strcmp(argv[i], "--trace") && has) {
			o->trace = argv[++i];
		} else {
			return -1;
		}
	}
	return 0;
}

static void exchange(double *out, double *in, int rank, int size)
{
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	MPI_Request req[4];

	MPI_Irecv(in, HALO, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
	MPI_Irecv(in + HALO, HALO, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
	MPI_Isend(out, HALO, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
	MPI_Isend(out, HALO, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
	MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

static int64_t ns(double t)
{
	return (int64_t)(t * 1e9);
}

/* Rank 0 prints the result (MetBench's --json form) and writes the trace. */
static void report(const struct opts *o, int size, const double *st,
		   const double *tr, double checksum)
{
	double total = 0;
	int r, s;

	for (r = 0; r < size; r++)
		if (st[3 * r + 2] > total)
			total = st[3 * r + 2];
	if (o->json) {
		printf("{\"program\": \"balanced\", \"steps\": %d, \"noise_pct\": %g, "
		       "\"checksum\": %.6e, \"total_time_s\": %.6f, \"ranks\": [",
		       o->steps, o->noise, checksum, total);
		for (r = 0; r < size; r++) {
			double c = st[3 * r], w = st[3 * r + 1];

			printf("%s{\"rank\": %d, \"proc\": \"P%d\", \"compute_s\": %.6f, "
			       "\"wait_s\": %.6f, \"compute_pct\": %.3f}",
			       r ? ", " : "", r, r + 1, c, w,
			       c + w > 0 ? 100 * c / (c + w) : 0.0);
		}
		printf("]}\n");
	} else {
		printf("balanced: %d ranks, %d steps, noise %g %%: %.3f s\n", size,
		       o->steps, o->noise, total);
		for (r = 0; r < size; r++) {
			double c = st[3 * r], w = st[3 * r + 1];

			printf("P%-4d %% compute %6.2f\n", r + 1,
			       c + w > 0 ? 100 * c / (c + w) : 0.0);
		}
	}
	if (o->trace) {
		FILE *f = fopen(o->trace, "w");

		if (!f) {
			fprintf(stderr, "balanced: cannot write trace '%s'\n", o->trace);
			return;
		}
		fprintf(f, "rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns\n");
		for (r = 0; r < size; r++)
			for (s = 0; s < o->steps; s++) {
				const double *t = &tr[((size_t)r * o->steps + s) * 3];

				fprintf(f, "%d,P%d,%d,%.4f,%lld,%lld,%lld\n", r, r + 1, s,
					noise_factor(r, s, o->noise),
					(long long)ns(t[0]), (long long)ns(t[1]),
					(long long)ns(t[2]));
			}
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	static double a[VEC], out[HALO], in[2 * HALO];
	double t0, comp = 0, wait = 0, acc = 0, mine[3], *st = NULL, *tr, *all = NULL;
	struct opts o;
	int rank, size, s, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (parse(argc, argv, &o)) {
		if (!rank)
			fprintf(stderr, "usage: balanced [--steps N (1..1000000)] [--work N (1..1e8)] "
				"[--noise PCT (0..100)] [--json] [--trace FILE]\n");
		MPI_Finalize();
		return 2;
	}
	tr = calloc((size_t)o.steps * 3, sizeof(*tr));
	if (!tr)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = 0; i < VEC; i++)
		a[i] = 1.0 + (double)i / VEC;
	exchange(out, in, rank, size);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (s = 0; s < o.steps; s++) {
		double ta = MPI_Wtime(), tb, tc;

		acc += compute(a, (long)(o.work * noise_factor(rank, s, o.noise) + 0.5));
		for (i = 0; i < HALO; i++)
			out[i] = a[i] + in[i];
		tb = MPI_Wtime();
		exchange(out, in, rank, size);
		tc = MPI_Wtime();
		tr[3 * s] = ta;
		tr[3 * s + 1] = tb;
		tr[3 * s + 2] = tc;
		comp += tb - ta;
		wait += tc - tb;
	}
	mine[0] = comp;
	mine[1] = wait;
	mine[2] = MPI_Wtime() - t0;
	if (!rank) {
		st = malloc(3 * (size_t)size * sizeof(*st));
		all = malloc((size_t)o.steps * 3 * size * sizeof(*all));
		if (!st || !all)
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Gather(mine, 3, MPI_DOUBLE, st, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Gather(tr, 3 * o.steps, MPI_DOUBLE, all, 3 * o.steps, MPI_DOUBLE, 0,
		   MPI_COMM_WORLD);
	MPI_Reduce(rank ? &acc : MPI_IN_PLACE, &acc, 1, MPI_DOUBLE, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (!rank)
		report(&o, size, st, all, acc);
	free(st);
	free(all);
	free(tr);
	MPI_Finalize();
	return 0;
}
