! SPDX-License-Identifier: GPL-2.0
! libhpcmon test program, binding 'use mpi': NITER iterations, rank r computes
! r * UNIT_MS of wall-clock busy time, then exchanges its rank with both
! ring neighbours (MPI_Irecv, MPI_Isend, MPI_Waitall with statuses). The
! received values and statuses are checked every iteration.
! Usage: usempi_waitall NITER UNIT_MS. Rank 0 prints "done NITER".
program usempi_waitall
   use mpi
   implicit none
   integer :: ierr, rank, nproc, niter, unit_ms, i, left, right
   integer :: sendv(2), recvv(2), reqs(4), stats(MPI_STATUS_SIZE, 4)

   call MPI_Init(ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
   call read_args(niter, unit_ms)
   left = mod(rank + nproc - 1, nproc)
   right = mod(rank + 1, nproc)
   do i = 1, niter
      call busy_ms(rank * unit_ms)
      sendv = rank + i
      recvv = -1
      call MPI_Irecv(recvv(1), 1, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_Irecv(recvv(2), 1, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_Isend(sendv(1), 1, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(3), ierr)
      call MPI_Isend(sendv(2), 1, MPI_INTEGER, left, 2, MPI_COMM_WORLD, reqs(4), ierr)
      call MPI_Waitall(4, reqs, stats, ierr)
      if (ierr /= MPI_SUCCESS) error stop 'MPI_Waitall failed'
      if (recvv(1) /= left + i .or. recvv(2) /= right + i) error stop 'wrong data'
      if (stats(MPI_SOURCE, 1) /= left .or. stats(MPI_TAG, 2) /= 2) error stop 'wrong status'
      if (any(reqs /= MPI_REQUEST_NULL)) error stop 'requests not freed'
   end do
   if (rank == 0) print '(a, i0)', 'done ', niter
   call MPI_Finalize(ierr)
contains
   include 'common.inc'
end program usempi_waitall
