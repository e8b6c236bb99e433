/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhpcmon's Fortran entry points, generated from one table.
 *
 * The Fortran bindings of Open MPI (libmpi_mpifh for mpif.h and 'use mpi',
 * libmpi_usempif08 for 'use mpi_f08') and most of MPICH's 'use mpi_f08' (in
 * libmpichfort, MPI_Init_thread included) call the C PMPI_* functions, so
 * the C wrappers alone never see those Fortran programs.
 * Each call of HPCMON_FORTRAN_CALLS is therefore also defined under every
 * Fortran linker name the two MPIs export for it:
 *
 *   mpi_waitall mpi_waitall_ mpi_waitall__ MPI_WAITALL   mpif.h, 'use mpi'
 *   mpi_waitall_f08_                                     'use mpi_f08' (Open MPI, and
 *                                                        MPICH's calls without a buffer)
 *   mpi_recv_f08ts_ mpi_recv_f08ts_large_                'use mpi_f08', MPICH's calls
 *                                                        with a choice buffer
 *
 * Design: pass-through. A wrapper takes the Fortran arguments as opaque
 * pointer-sized values (each is an address, or an integer for a VALUE dummy;
 * none is CHARACTER, so there is no hidden length argument, and none is
 * floating point, so each travels in one integer register or stack slot and
 * is forwarded unchanged), runs the same enter/exit monitoring as the C
 * wrapper and hands the same values to the
 * next definition of the same name (dlsym(RTLD_NEXT): the MPI's own Fortran
 * binding, or another tool preloaded after this one), which converts and
 * calls PMPI. Converting here instead (MPI_Comm_f2c, MPI_Request_f2c,
 * MPI_Status_c2f, MPI_F_STATUS_IGNORE, then the C PMPI) would work for mpif.h
 * and 'use mpi', but not for the other entries: the f08 choice buffers of
 * MPICH are Fortran 2018 array descriptors (CFI_cdesc_t, noncontiguous
 * sections included) with MPI_Count counts in the _large_ variants, and
 * MPI_IN_PLACE / MPI_BOTTOM have an implementation-private address in each
 * binding with no standard C way to recognise them. The MPI's binding
 * already does all of that right; passing through keeps every binding of both
 * MPIs exact (IERROR, the optional f08 IERROR passed as a null pointer,
 * statuses, MPI_STATUS(ES)_IGNORE) and needs no Fortran library at link time.
 * The price: HPCMON_BLOCKING_WAIT (which turns a wait into MPI_Test polling
 * on C handles) reaches a Fortran call only if the MPI's binding goes through
 * the C MPI_* function (MPICH's mpif.h and 'use mpi' do, and some calls of
 * its mpi_f08, e.g. MPI_Allreduce; Open MPI's bindings never do). Such a nested C wrapper does not
 * count the call twice: the monitor only accounts the outermost wrapped call.
 *
 * hpcmon.cpp includes this file once, after its C wrappers, with
 * HPCMON_FORTRAN_WAIT, HPCMON_FORTRAN_INIT and HPCMON_FORTRAN_FINALIZE
 * defined: each receives (linker name, number of arguments, parameter list,
 * argument list) and defines one function.
 */

/* Parameter and argument lists of 1 to 13 opaque Fortran arguments. */
#define HPCMON_FP1 void *a1
#define HPCMON_FP2 HPCMON_FP1, void *a2
#define HPCMON_FP3 HPCMON_FP2, void *a3
#define HPCMON_FP4 HPCMON_FP3, void *a4
#define HPCMON_FP5 HPCMON_FP4, void *a5
#define HPCMON_FP6 HPCMON_FP5, void *a6
#define HPCMON_FP7 HPCMON_FP6, void *a7
#define HPCMON_FP8 HPCMON_FP7, void *a8
#define HPCMON_FP9 HPCMON_FP8, void *a9
#define HPCMON_FP10 HPCMON_FP9, void *a10
#define HPCMON_FP11 HPCMON_FP10, void *a11
#define HPCMON_FP12 HPCMON_FP11, void *a12
#define HPCMON_FP13 HPCMON_FP12, void *a13
#define HPCMON_FA1 a1
#define HPCMON_FA2 HPCMON_FA1, a2
#define HPCMON_FA3 HPCMON_FA2, a3
#define HPCMON_FA4 HPCMON_FA3, a4
#define HPCMON_FA5 HPCMON_FA4, a5
#define HPCMON_FA6 HPCMON_FA5, a6
#define HPCMON_FA7 HPCMON_FA6, a7
#define HPCMON_FA8 HPCMON_FA7, a8
#define HPCMON_FA9 HPCMON_FA8, a9
#define HPCMON_FA10 HPCMON_FA9, a10
#define HPCMON_FA11 HPCMON_FA10, a11
#define HPCMON_FA12 HPCMON_FA11, a12
#define HPCMON_FA13 HPCMON_FA12, a13

/*
 * The table: X(lower-case name, upper-case name, Fortran arguments including
 * IERROR, kind (WAIT, INIT, FINALIZE), f08 entries (plain: mpi_x_f08_; ts:
 * also MPICH's mpi_x_f08ts_ and mpi_x_f08ts_large_)). One row per C wrapper
 * of hpcmon.cpp (tests/fortran.py checks it).
 */
#define HPCMON_FORTRAN_CALLS(X)                                                                    \
	X(init, INIT, 1, INIT, plain)                                                              \
	X(init_thread, INIT_THREAD, 3, INIT, plain)                                                \
	X(finalize, FINALIZE, 1, FINALIZE, plain)                                                  \
	X(barrier, BARRIER, 2, WAIT, plain)                                                        \
	X(wait, WAIT, 3, WAIT, plain)                                                              \
	X(waitall, WAITALL, 4, WAIT, plain)                                                        \
	X(waitany, WAITANY, 5, WAIT, plain)                                                        \
	X(recv, RECV, 8, WAIT, ts)                                                                 \
	X(probe, PROBE, 5, WAIT, plain)                                                            \
	X(sendrecv, SENDRECV, 13, WAIT, ts)                                                        \
	X(bcast, BCAST, 6, WAIT, ts)                                                               \
	X(reduce, REDUCE, 8, WAIT, ts)                                                             \
	X(allreduce, ALLREDUCE, 7, WAIT, ts)                                                       \
	X(gather, GATHER, 9, WAIT, ts)                                                             \
	X(scatter, SCATTER, 9, WAIT, ts)                                                           \
	X(allgather, ALLGATHER, 8, WAIT, ts)                                                       \
	X(alltoall, ALLTOALL, 8, WAIT, ts)

/* One wrapper: HPCMON_FORTRAN_<kind>(name, "name", n, params, args). */
#define HPCMON_FDEF(sym, n, kind) HPCMON_FORTRAN_##kind(sym, #sym, n, HPCMON_FP##n, HPCMON_FA##n)

#define HPCMON_F08_plain(lc, n, kind) HPCMON_FDEF(mpi_##lc##_f08_, n, kind)
#define HPCMON_F08_ts(lc, n, kind)                                                                 \
	HPCMON_FDEF(mpi_##lc##_f08_, n, kind)                                                      \
	HPCMON_FDEF(mpi_##lc##_f08ts_, n, kind)                                                    \
	HPCMON_FDEF(mpi_##lc##_f08ts_large_, n, kind)

/* Every linker name of one table row. */
#define HPCMON_FORTRAN_ROW(lc, UC, n, kind, f08)                                                   \
	HPCMON_FDEF(mpi_##lc, n, kind)                                                             \
	HPCMON_FDEF(mpi_##lc##_, n, kind)                                                          \
	HPCMON_FDEF(mpi_##lc##__, n, kind)                                                         \
	HPCMON_FDEF(MPI_##UC, n, kind)                                                             \
	HPCMON_F08_##f08(lc, n, kind)

HPCMON_FORTRAN_CALLS(HPCMON_FORTRAN_ROW)
