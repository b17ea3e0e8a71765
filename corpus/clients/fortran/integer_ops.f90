! Integer hashing of an integer field over a strided index range.
!
! Exercises: integer arrays and scalars, integer MOD and division (both
! truncate toward zero, as in C), MIN and MAX on integers, DO loops with a
! step of 2 and of -3, loop bounds read from intent(in) integer scalars, and
! an integer reduction into a scalar intent(out) argument.
! case: inputs k=-50:50 lo=1:3 hi=9:12
PROGRAM main
  implicit none
  integer, parameter :: n = 12
  integer k(n), h(n)
  integer lo, hi, total
  CALL test_function(k, h, lo, hi, total)
END PROGRAM main

SUBROUTINE test_function(k, h, lo, hi, total)
  integer, parameter :: n = 12
  integer, intent(in) :: k(n)
  integer, intent(out) :: h(n)
  integer, intent(in) :: lo, hi
  integer, intent(out) :: total
  integer i
  h(:) = 0
  DO i = lo, hi, 2
    h(i) = MOD(k(i), 7) + k(i) / 3
  END DO
  total = 0
  DO i = n, 1, -3
    h(i) = h(i) + MAX(k(i), 0) * 2 - MIN(i, 4)
    total = total + h(i)
  END DO
END SUBROUTINE test_function
