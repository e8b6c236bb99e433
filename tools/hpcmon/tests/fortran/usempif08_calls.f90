! SPDX-License-Identifier: GPL-2.0
! libhpcmon test program, binding 'use mpi_f08': every call libhpcmon wraps,
! its result checked, so that the Fortran wrappers can be shown not to change
! what the program computes (MPI_IN_PLACE, MPI_STATUS_IGNORE, statuses, the
! optional IERROR given and left out). Rank 0 prints TAP, then "calls N": the
! wrapped calls each rank made after MPI_Init. Run with 3 or more ranks.
program usempif08_calls
   use mpi_f08
   implicit none
   integer :: rank, nproc, left, right, v, s, r, i, cnt, got, ierr
   integer :: idx1, idx2, idx3, ntest, ncalls
   integer, allocatable :: all(:), all2(:)
   type(MPI_Status) :: st, sts(2)
   type(MPI_Request) :: req, reqs(2)
   logical :: ok

   call MPI_Init()
   call MPI_Comm_rank(MPI_COMM_WORLD, rank)
   call MPI_Comm_size(MPI_COMM_WORLD, nproc)
   right = mod(rank + 1, nproc)
   left = mod(rank + nproc - 1, nproc)
   allocate (all(0:nproc - 1), all2(0:nproc - 1))
   ntest = 0
   ncalls = 0

   call MPI_Barrier(MPI_COMM_WORLD, ierr)
   call report(1, ierr == MPI_SUCCESS, 'MPI_Barrier (IERROR)')

   v = merge(42, -1, rank == 0)
   call MPI_Bcast(v, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
   call report(1, v == 42, 'MPI_Bcast')

   s = rank + 1
   r = 0
   call MPI_Reduce(s, r, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
   call report(1, rank /= 0 .or. r == nproc * (nproc + 1) / 2, 'MPI_Reduce')

   r = rank + 1
   call MPI_Allreduce(MPI_IN_PLACE, r, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
   call report(1, r == nproc, 'MPI_Allreduce (MPI_IN_PLACE)')

   all = -1
   call MPI_Gather(rank, 1, MPI_INTEGER, all, 1, MPI_INTEGER, 1, MPI_COMM_WORLD)
   call report(1, rank /= 1 .or. all(nproc - 1) == nproc - 1, 'MPI_Gather')

   all = [(100 + i, i = 0, nproc - 1)]
   call MPI_Scatter(all, 1, MPI_INTEGER, v, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
   call report(1, v == 100 + rank, 'MPI_Scatter')

   call MPI_Allgather(rank, 1, MPI_INTEGER, all, 1, MPI_INTEGER, MPI_COMM_WORLD)
   call report(1, all(nproc - 1) == nproc - 1 .and. all(0) == 0, 'MPI_Allgather')

   all = [(rank * 1000 + i, i = 0, nproc - 1)]
   call MPI_Alltoall(all, 1, MPI_INTEGER, all2, 1, MPI_INTEGER, MPI_COMM_WORLD)
   call report(1, all2(left) == left * 1000 + rank, 'MPI_Alltoall')

   call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 7, v, 1, MPI_INTEGER, left, 7, &
                     MPI_COMM_WORLD, st)
   call report(1, v == left .and. st%MPI_SOURCE == left .and. st%MPI_TAG == 7, &
               'MPI_Sendrecv (status)')

   call MPI_Isend(rank, 1, MPI_INTEGER, right, 8, MPI_COMM_WORLD, req)
   call MPI_Probe(left, 8, MPI_COMM_WORLD, st)
   call MPI_Get_count(st, MPI_INTEGER, cnt)
   ok = st%MPI_SOURCE == left .and. cnt == 1
   call MPI_Recv(v, 1, MPI_INTEGER, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, st)
   ok = ok .and. v == left .and. st%MPI_SOURCE == left
   call MPI_Wait(req, MPI_STATUS_IGNORE)
   call report(3, ok .and. req == MPI_REQUEST_NULL, &
               'MPI_Probe, MPI_Recv (MPI_ANY_SOURCE), MPI_Wait (MPI_STATUS_IGNORE)')

   got = -1
   call MPI_Irecv(got, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, reqs(1))
   call MPI_Isend(rank, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, reqs(2))
   call MPI_Waitall(2, reqs, sts)
   call report(1, got == left .and. sts(1)%MPI_SOURCE == left &
               .and. reqs(1) == MPI_REQUEST_NULL, 'MPI_Waitall (statuses)')

   got = -1
   call MPI_Irecv(got, 1, MPI_INTEGER, left, 10, MPI_COMM_WORLD, reqs(1))
   call MPI_Isend(rank, 1, MPI_INTEGER, right, 10, MPI_COMM_WORLD, reqs(2))
   idx3 = 5
   call MPI_Waitany(2, reqs, idx1, st)
   call MPI_Waitany(2, reqs, idx2, st)
   call MPI_Waitany(2, reqs, idx3, st) ! all inactive: MPI_UNDEFINED
   ! Indices 1 and 2; MPICH 4.0's mpi_f08 returns C's 0 and 1 (with or
   ! without the monitor): either pair, as long as it is the same MPI's.
   call report(3, got == left .and. abs(idx1 - idx2) == 1 .and. min(idx1, idx2) >= 0 &
               .and. max(idx1, idx2) <= 2 .and. idx3 == MPI_UNDEFINED, &
               'MPI_Waitany (then all inactive: MPI_UNDEFINED)')

   call MPI_Recv(v, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, st)
   call report(1, st%MPI_SOURCE == MPI_PROC_NULL, 'MPI_Recv from MPI_PROC_NULL')

   if (rank == 0) then
      print '(a, i0)', '1..', ntest
      print '(a, i0)', 'calls ', ncalls
   end if
   call MPI_Finalize(ierr)
contains
   ! One TAP line from rank 0 for the test @name, true if @ok on every rank;
   ! @n wrapped calls were made for it, and one more here (MPI_Allreduce).
   subroutine report(n, ok, name)
      integer, intent(in) :: n
      logical, intent(in) :: ok
      character(len=*), intent(in) :: name
      logical :: every
      call MPI_Allreduce(ok, every, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD)
      ncalls = ncalls + n + 1
      ntest = ntest + 1
      if (rank == 0) print '(a, 1x, i0, 2a)', trim(merge('ok    ', 'not ok', every)), &
         ntest, ' - ', name
   end subroutine report
end program usempif08_calls
