! Elementwise transforms of a field with the elemental math intrinsics.
!
! Exercises: ABS, SQRT, EXP, MIN and MAX (with two and three arguments) and
! the real MOD (the sign of its first argument, like C's fmod) on array
! elements inside a DO loop, with double precision literals (0.5d0). The
! arguments of EXP and MOD are local scalars: the frontend types an
! intrinsic's call from its first argument and refuses an expression there.
PROGRAM main
  implicit none
  integer, parameter :: n = 24
  double precision x(n), w(n), y(n), z(n), r(n)
  CALL test_function(x, w, y, z, r)
END PROGRAM main

SUBROUTINE test_function(x, w, y, z, r)
  integer, parameter :: n = 24
  double precision, intent(in) :: x(n), w(n)
  double precision, intent(out) :: y(n), z(n), r(n)
  double precision g, s
  integer i
  DO i = 1, n
    g = -0.5d0 * x(i) * x(i)
    y(i) = SQRT(ABS(x(i))) * EXP(g)
    z(i) = MAX(MIN(x(i), w(i)), -0.25d0, 0.5d0 * w(i))
    s = x(i) * 10.0d0
    r(i) = MOD(s, 3.0d0)
  END DO
END SUBROUTINE test_function
