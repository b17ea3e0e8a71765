! Sums and extremes of a 1-D and a 2-D field, reduced into scalar arguments.
!
! Exercises: the SUM, MAXVAL and MINVAL intrinsics over a whole 1-D array, a
! whole 2-D array, a column section y(:, 3) and a range section x(3:8), each
! reduced into a scalar intent(out) argument, and 2-D arrays sized by
! PARAMETERs (free symbols `n` and `m` of the SDFG).
PROGRAM main
  implicit none
  integer, parameter :: n = 10, m = 6
  double precision x(n), y(n, m)
  double precision total, peak, low, part
  CALL test_function(x, y, total, peak, low, part)
END PROGRAM main

SUBROUTINE test_function(x, y, total, peak, low, part)
  integer, parameter :: n = 10, m = 6
  double precision, intent(in) :: x(n), y(n, m)
  double precision, intent(out) :: total, peak, low, part
  total = SUM(x)
  peak = MAXVAL(y)
  low = MINVAL(y(:, 3))
  part = SUM(x(3:8))
END SUBROUTINE test_function
