! SPDX-License-Identifier: GPL-2.0
! libhpcmon test program, binding include 'mpif.h': NITER iterations, rank r
! computes r * UNIT_MS of wall-clock busy time, then MPI_Barrier.
! Usage: mpif_barrier NITER UNIT_MS. Rank 0 prints "done NITER".
program mpif_barrier
   implicit none
   include 'mpif.h'
   integer :: ierr, rank, nproc, niter, unit_ms, i

   call MPI_Init(ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
   call read_args(niter, unit_ms)
   do i = 1, niter
      call busy_ms(rank * unit_ms)
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      if (ierr /= MPI_SUCCESS) error stop 'MPI_Barrier failed'
   end do
   if (rank == 0) print '(a, i0)', 'done ', niter
   call MPI_Finalize(ierr)
contains
   include 'common.inc'
end program mpif_barrier
