! balanced: a balanced MPI application, the shape of NAS BT-MZ class A with
! NPB's own zone balancing (4 ranks of nearly equal work), in Fortran as
! BT-MZ is. Every step each rank computes its share (the same for all,
! scaled by a deterministic per-rank, per-step noise of +-NOISE %), then
! exchanges a boundary with both ring neighbours (MPI_Isend / MPI_Irecv /
! MPI_Waitall). The ranks compute 88-91 % of the time, as BT-MZ class A does.
!
! balanced.c is the same program in C (the same options, noise and output).
!
! usage: balanced-f [--steps N] [--work N] [--noise PCT] [--json] [--trace FILE]
module balanced_mod
   use, intrinsic :: iso_fortran_env, only: int64, real64
   implicit none
   integer, parameter :: halo = 1024, vec = 4096
   integer, parameter :: dp = real64
contains
   ! Noise factor of rank r in step s: 1 + noise/100 * (2u - 1), u in [0, 1).
   pure function noise_factor(r, s, noise) result(f)
      integer, intent(in) :: r, s
      real(dp), intent(in) :: noise
      real(dp) :: f
      integer(int64) :: x
      integer :: k
      x = int(r + 1, int64) * 1000003_int64 + int(s + 1, int64) * 7919_int64
      do k = 1, 3
         x = modulo(x * 1103515245_int64 + 12345_int64, 2147483648_int64)
      end do
      f = 1.0_dp + noise / 100.0_dp * (2.0_dp * real(x, dp) / 2147483648.0_dp - 1.0_dp)
   end function noise_factor

   ! units passes of a fixed floating-point kernel over a vector.
   function compute(a, units) result(acc)
      real(dp), intent(inout) :: a(vec)
      integer(int64), intent(in) :: units
      real(dp) :: acc
      integer(int64) :: u
      integer :: i
      acc = 0
      do u = 1, units
         do i = 1, vec
            a(i) = a(i) * 0.999999_dp + 1.0e-6_dp * real(i - 1, dp)
            acc = acc + a(i)
         end do
      end do
   end function compute

   subroutine exchange(out, in, rank, nproc)
      use mpi
      real(dp), intent(in) :: out(halo)
      real(dp), intent(inout) :: in(2 * halo)
      integer, intent(in) :: rank, nproc
      integer :: left, right, req(4), ierr
      left = modulo(rank + nproc - 1, nproc)
      right = modulo(rank + 1, nproc)
      call MPI_Irecv(in(1), halo, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, req(1), ierr)
      call MPI_Irecv(in(halo + 1), halo, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, &
                     req(2), ierr)
      call MPI_Isend(out, halo, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, req(3), ierr)
      call MPI_Isend(out, halo, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, req(4), ierr)
      call MPI_Waitall(4, req, MPI_STATUSES_IGNORE, ierr)
   end subroutine exchange
end module balanced_mod

program balanced
   use mpi
   use balanced_mod
   implicit none
   integer :: rank, nproc, ierr, steps, s, i, r, nargs, ios
   integer(int64) :: work
   real(dp) :: noise, t0, ta, tb, tc, comp, wait, acc, accsum, total, c, w
   real(dp) :: mine(3)
   real(dp), allocatable :: tr(:), st(:), all(:)
   real(dp) :: a(vec), out(halo), in(2 * halo)
   logical :: json, bad
   character(len=4096) :: arg, trace
   character(len=2) :: sep

   call MPI_Init(ierr)
   call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
   call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
   steps = 200
   work = 400
   noise = 5
   json = .false.
   trace = ''
   bad = .false.
   nargs = command_argument_count()
   i = 1
   do while (i <= nargs .and. .not. bad)
      call get_command_argument(i, arg)
      if (arg == '--json') then
         json = .true.
      else if (i < nargs .and. (arg == '--steps' .or. arg == '--work' .or. &
                                arg == '--noise' .or. arg == '--trace')) then
         i = i + 1
         select case (trim(arg))
         case ('--steps')
            call get_command_argument(i, arg)
            read (arg, *, iostat=ios) steps
            bad = ios /= 0 .or. steps < 1 .or. steps > 1000000
         case ('--work')
            call get_command_argument(i, arg)
            read (arg, *, iostat=ios) work
            bad = ios /= 0 .or. work < 1 .or. work > 100000000
         case ('--noise')
            call get_command_argument(i, arg)
            read (arg, *, iostat=ios) noise
            bad = ios /= 0 .or. .not. (noise >= 0 .and. noise < 100)
         case default
            call get_command_argument(i, trace)
         end select
      else
         bad = .true.
      end if
      i = i + 1
   end do
   if (bad) then
      if (rank == 0) write (0, '(a)') 'usage: balanced-f [--steps N (1..1000000)] ' // &
         '[--work N (1..1e8)] [--noise PCT (0..100)] [--json] [--trace FILE]'
      call MPI_Finalize(ierr)
      call exit(2)
   end if

   allocate (tr(3 * steps))
   do i = 1, vec
      a(i) = 1.0_dp + real(i - 1, dp) / vec
   end do
   out = 0
   in = 0
   call exchange(out, in, rank, nproc)
   call MPI_Barrier(MPI_COMM_WORLD, ierr)
   comp = 0
   wait = 0
   acc = 0
   t0 = MPI_Wtime()
   do s = 0, steps - 1
      ta = MPI_Wtime()
      acc = acc + compute(a, int(real(work, dp) * noise_factor(rank, s, noise) + 0.5_dp, int64))
      out = a(1:halo) + in(1:halo)
      tb = MPI_Wtime()
      call exchange(out, in, rank, nproc)
      tc = MPI_Wtime()
      tr(3 * s + 1) = ta
      tr(3 * s + 2) = tb
      tr(3 * s + 3) = tc
      comp = comp + (tb - ta)
      wait = wait + (tc - tb)
   end do
   mine = [comp, wait, MPI_Wtime() - t0]
   allocate (st(3 * nproc), all(3 * steps * nproc))
   call MPI_Gather(mine, 3, MPI_DOUBLE_PRECISION, st, 3, MPI_DOUBLE_PRECISION, 0, &
                   MPI_COMM_WORLD, ierr)
   call MPI_Gather(tr, 3 * steps, MPI_DOUBLE_PRECISION, all, 3 * steps, &
                   MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
   call MPI_Reduce(acc, accsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
   if (rank == 0) then
      total = maxval(st(3:3 * nproc:3))
      if (json) then
         write (*, '(a,i0,7a)', advance='no') '{"program": "balanced", "steps": ', steps, &
            ', "noise_pct": ', num(noise, 3), ', "checksum": ', num(accsum, 6, .true.), &
            ', "total_time_s": ', num(total, 6), ', "ranks": ['
         do r = 0, nproc - 1
            c = st(3 * r + 1)
            w = st(3 * r + 2)
            sep = ', '
            if (r == 0) sep = ''
            write (*, '(a,a,i0,a,i0,7a)', advance='no') trim(sep), '{"rank": ', r, &
               ', "proc": "P', r + 1, '", "compute_s": ', num(c, 6), ', "wait_s": ', &
               num(w, 6), ', "compute_pct": ', num(pct(c, w), 3), '}'
         end do
         write (*, '(a)') ']}'
      else
         write (*, '(a,i0,a,i0,a,g0.4,a,f0.3,a)') 'balanced: ', nproc, ' ranks, ', steps, &
            ' steps, noise ', noise, ' %: ', total, ' s'
         do r = 0, nproc - 1
            write (*, '(a,i0,a,f6.2)') 'P', r + 1, '    % compute ', &
               pct(st(3 * r + 1), st(3 * r + 2))
         end do
      end if
      if (len_trim(trace) > 0) call write_trace()
   end if
   call MPI_Finalize(ierr)

contains
   ! A JSON number: fixed with d decimals (leading zero kept), or scientific.
   function num(x, d, sci) result(t)
      real(dp), intent(in) :: x
      integer, intent(in) :: d
      logical, intent(in), optional :: sci
      character(len=:), allocatable :: t
      character(len=40) :: buf, f
      if (present(sci)) then
         write (f, '(a,i0,a)') '(es30.', d, ')'
      else
         write (f, '(a,i0,a)') '(f30.', d, ')'
      end if
      write (buf, f) x
      t = trim(adjustl(buf))
   end function num

   pure function pct(c, w) result(p)
      real(dp), intent(in) :: c, w
      real(dp) :: p
      p = 0
      if (c + w > 0) p = 100 * c / (c + w)
   end function pct

   subroutine write_trace()
      integer :: u, k
      open (newunit=u, file=trim(trace), status='replace', action='write', iostat=ios)
      if (ios /= 0) then
         write (0, '(a)') "balanced: cannot write trace '" // trim(trace) // "'"
         return
      end if
      write (u, '(a)') 'rank,proc,iteration,load,start_ns,compute_end_ns,wait_end_ns'
      do r = 0, nproc - 1
         do s = 0, steps - 1
            k = (r * steps + s) * 3
            write (u, '(i0,a,i0,a,i0,a,f0.4,3(a,i0))') r, ',P', r + 1, ',', s, ',', &
               noise_factor(r, s, noise), ',', int(all(k + 1) * 1e9_dp, int64), ',', &
               int(all(k + 2) * 1e9_dp, int64), ',', int(all(k + 3) * 1e9_dp, int64)
         end do
      end do
      close (u)
   end subroutine write_trace
end program balanced
