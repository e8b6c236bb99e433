! SPDX-License-Identifier: GPL-2.0
! libhpcmon test program, binding 'use mpi_f08': MPI_Init_thread, then NITER
! iterations: rank r computes r * UNIT_MS of wall-clock busy time, then
! MPI_Allreduce (sum of the ranks, checked every iteration).
! Usage: usempif08_allreduce NITER UNIT_MS. Rank 0 prints "done NITER".
program usempif08_allreduce
   use mpi_f08
   implicit none
   integer :: ierr, rank, nproc, niter, unit_ms, i, provided, total

   call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank)
   call MPI_Comm_size(MPI_COMM_WORLD, nproc)
   call read_args(niter, unit_ms)
   do i = 1, niter
      call busy_ms(rank * unit_ms)
      call MPI_Allreduce(rank + i, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
      if (ierr /= MPI_SUCCESS) error stop 'MPI_Allreduce failed'
      if (total /= nproc * (nproc - 1) / 2 + nproc * i) error stop 'wrong sum'
   end do
   if (rank == 0) print '(a, i0)', 'done ', niter
   call MPI_Finalize()
contains
   include 'common.inc'
end program usempif08_allreduce
