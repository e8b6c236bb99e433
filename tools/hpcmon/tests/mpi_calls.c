// SPDX-License-Identifier: GPL-2.0
// Exercises every call libhpcmon wraps and checks its result, so that the
// monitor (and its blocking-wait replacements) can be shown not to change what
// the program computes. Rank 0 prints TAP. Run with 3 or more ranks.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_test;

static void report(int ok, const char *name)
{
	int all;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		printf("%sok %d - %s\n", all ? "" : "not ", ++n_test, name);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int v, ok;

	report(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Barrier");

	v = rank == 0 ? 42 : -1;
	MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	report(v == 42, "MPI_Bcast");

	int s = rank + 1, r = 0;
	MPI_Reduce(&s, &r, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	report(rank != 0 || r == size * (size + 1) / 2, "MPI_Reduce");

	MPI_Allreduce(&s, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	report(r == size, "MPI_Allreduce");

	int *all = calloc(size, sizeof(int)), *all2 = calloc(size, sizeof(int));
	MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 1, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; rank == 1 && i < size; i++)
		ok &= all[i] == i;
	report(ok, "MPI_Gather");

	for (int i = 0; i < size; i++)
		all[i] = 100 + i;
	MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	report(v == 100 + rank, "MPI_Scatter");

	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= all[i] == i;
	report(ok, "MPI_Allgather");

	for (int i = 0; i < size; i++)
		all[i] = rank * 1000 + i;
	MPI_Alltoall(all, 1, MPI_INT, all2, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= all2[i] == i * 1000 + rank;
	report(ok, "MPI_Alltoall");

	MPI_Status st;
	MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &v, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
	report(v == left && st.MPI_SOURCE == left && st.MPI_TAG == 7, "MPI_Sendrecv (status)");

	MPI_Request req;
	MPI_Isend(&rank, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &req);
	MPI_Probe(left, 8, MPI_COMM_WORLD, &st);
	int cnt = 0;
	MPI_Get_count(&st, MPI_INT, &cnt);
	ok = st.MPI_SOURCE == left && cnt == 1;
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &st);
	ok &= v == left && st.MPI_SOURCE == left;
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	report(ok && req == MPI_REQUEST_NULL, "MPI_Probe, MPI_Recv (ANY_SOURCE), MPI_Wait");

	MPI_Request reqs[2];
	int got = -1;
	MPI_Irecv(&got, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(&rank, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &reqs[1]);
	MPI_Status sts[2];
	MPI_Waitall(2, reqs, sts);
	report(got == left && sts[0].MPI_SOURCE == left && reqs[0] == MPI_REQUEST_NULL,
	       "MPI_Waitall (statuses)");

	got = -1;
	MPI_Irecv(&got, 1, MPI_INT, left, 10, MPI_COMM_WORLD, &reqs[0]);
	MPI_Isend(&rank, 1, MPI_INT, right, 10, MPI_COMM_WORLD, &reqs[1]);
	int idx1 = -1, idx2 = -1, idx3 = 5;
	MPI_Waitany(2, reqs, &idx1, &st);
	MPI_Waitany(2, reqs, &idx2, &st);
	MPI_Waitany(2, reqs, &idx3, &st); // all inactive: MPI_UNDEFINED
	report(got == left && idx1 != idx2 && idx1 >= 0 && idx2 >= 0 && idx1 < 2 && idx2 < 2 &&
		       idx3 == MPI_UNDEFINED,
	       "MPI_Waitany (then all inactive -> MPI_UNDEFINED)");

	MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
	report(st.MPI_SOURCE == MPI_PROC_NULL, "MPI_Recv from MPI_PROC_NULL");

	// A longer run of iterations: imbalanced compute then Barrier.
	volatile double x = 0;
	for (int it = 0; it < 5; it++) {
		for (long i = 0; i < 200000L * (rank + 1); i++)
			x += i * 1e-9;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	report(1, "imbalanced iterations");

	free(all);
	free(all2);
	if (rank == 0)
		printf("1..%d\n", n_test);
	MPI_Finalize();
	return 0;
}
