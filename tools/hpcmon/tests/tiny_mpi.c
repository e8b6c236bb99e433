// SPDX-License-Identifier: GPL-2.0
/*
 * tiny_mpi: a plain MPI program that knows nothing of hpcmon, built with an
 * implementation's own compiler wrapper (mpicc.mpich, mpicc.openmpi) to be
 * monitored through LD_PRELOAD. Each iteration computes, then sums the work
 * with MPI_Allreduce; odd ranks compute 4 times as much as even ones.
 *
 * usage: tiny_mpi ITERATIONS UNIT   (prints "tiny_mpi: R ranks, N iterations,
 * sum S" on rank 0; S = N * UNIT * sum over ranks of 1 or 4)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	return *end || v <= 0 ? -1 : v;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long iters = argc == 3 ? arg(argv[1]) : -1, unit = argc == 3 ? arg(argv[2]) : -1;
	if (iters < 0 || unit < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: %s ITERATIONS UNIT (both > 0)\n", argv[0]);
		MPI_Finalize();
		return 2;
	}
	volatile double x = 0;
	long total = 0;
	for (long it = 0; it < iters; it++) {
		long mine = (rank % 2 ? 4 : 1) * unit, sum = 0;
		for (long i = 0; i < mine * 1000; i++)
			x += i * 1e-9;
		MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		total += sum;
	}
	if (rank == 0)
		printf("tiny_mpi: %d ranks, %ld iterations, sum %ld\n", size, iters, total);
	MPI_Finalize();
	return 0;
}
