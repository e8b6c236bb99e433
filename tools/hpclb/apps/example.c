/* The complete libhpclb example (Documentation/hpclb.rst): every rank owns
 * work units (a buffer each), computes them, and at each synchronisation
 * point reports their measured loads and its busy time (wall and CPU); the
 * step function returns the plan
 * and the helper moves the buffers. Rank 1 is made slower (its units cost
 * 3x), so units flow away from it. Prints each rank's unit count at the end.
 *
 * build: cc example.c $(pkg-config --cflags --libs hpclb) -o example
 * run:   mpirun -np 2 ./example
 */
#include <hpclb/hpclb_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNITS 32
#define LEN 4096

static double *data[UNITS]; /* data[id]: the unit's buffer, NULL if not here */

static const void *get(int64_t id, size_t *len, void *arg)
{
	(void)arg;
	*len = LEN * sizeof(double);
	return data[id];
}

static void put(int64_t id, const void *buf, size_t len, void *arg)
{
	(void)arg;
	data[id] = malloc(len);
	memcpy(data[id], buf, len);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	hpclb_ctx *lb = hpclb_mpi_new(MPI_COMM_WORLD, HPCLB_MODE_REFINE);
	if (!lb) {
		fprintf(stderr, "example: %s\n", hpclb_last_error());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* Rank 1 emulates a CPU 3x slower: its f_p is a third (a really slower
	 * CPU is measured so by hpclb_mpi_new's speed loop). */
	if (rank == 1)
		hpclb_mpi_set_speed(lb, hpclb_mpi_speed(lb) / 3);
	for (int id = 0; id < UNITS; id++)
		if (id * size / UNITS == rank)
			data[id] = calloc(LEN, sizeof(double));
	for (int period = 0; period < 5; period++) {
		const double w0 = MPI_Wtime(), c0 = hpclb_thread_seconds();
		for (int id = 0; id < UNITS; id++) {
			if (!data[id])
				continue;
			double t0 = MPI_Wtime();
			int reps = rank == 1 ? 1500 : 500; /* rank 1 is 3x slower */
			for (int r = 0; r < reps; r++)
				for (int k = 0; k < LEN; k++)
					data[id][k] = data[id][k] * 0.5 + k;
			hpclb_mpi_unit(lb, id, MPI_Wtime() - t0, LEN * sizeof(double));
		}
		if (hpclb_mpi_busy(lb, MPI_Wtime() - w0, hpclb_thread_seconds() - c0) != 0) {
			fprintf(stderr, "example: %s\n", hpclb_last_error());
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		double before, after;
		if (hpclb_mpi_step(lb, &before, &after) != 0) {
			fprintf(stderr, "example: %s\n", hpclb_last_error());
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		const hpclb_move *mv;
		size_t n = hpclb_mpi_moves(lb, &mv);
		hpclb_mpi_exchange(lb, get, put, NULL);
		for (size_t k = 0; k < n; k++)
			if (mv[k].from == rank) {
				free(data[mv[k].id]);
				data[mv[k].id] = NULL;
			}
		if (rank == 0)
			printf("step %d: imbalance %.2f -> %.2f, %zu moves\n", period, before,
			       after, n);
	}
	int mine = 0;
	for (int id = 0; id < UNITS; id++)
		mine += data[id] != NULL;
	printf("rank %d: %d units\n", rank, mine);
	hpclb_mpi_free(lb);
	MPI_Finalize();
	return 0;
}
