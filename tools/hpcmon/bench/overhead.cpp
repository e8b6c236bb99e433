// SPDX-License-Identifier: GPL-2.0
// Per-call cost of cheap blocking MPI calls; run it with and without
// LD_PRELOAD=libhpcmon.so (one rank) and compare: the difference is the
// monitor's overhead per wrapped call.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mpi.h>

static double now_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int rank, x = 1, y = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now_s();
		for (long i = 0; i < n; i++)
			MPI_Barrier(MPI_COMM_WORLD);
		double t1 = now_s();
		for (long i = 0; i < n; i++)
			MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		double t2 = now_s();
		if (rank == 0)
			printf("rep %d: MPI_Barrier %.1f ns/call, MPI_Allreduce %.1f ns/call\n",
			       rep, (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9);
	}
	MPI_Finalize();
	return 0;
}
