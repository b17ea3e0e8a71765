! A 0-based field of a PARAMETER size, a(0:n-1), filled from its neighbour.
!
! Exercises: a custom lower bound with an upper bound that is an expression
! of a PARAMETER. DaCe 2.0.0b1's frontend takes both bounds of a dimension
! with a lower bound only as integer literal constants and refuses n-1.
! case: refused
PROGRAM main
  implicit none
  integer, parameter :: n = 10
  double precision a(0:n-1), b(0:n-1)
  CALL test_function(a, b)
END PROGRAM main

SUBROUTINE test_function(a, b)
  integer, parameter :: n = 10
  double precision, intent(out) :: a(0:n-1)
  double precision, intent(in) :: b(0:n-1)
  integer i
  a(0) = b(0)
  DO i = 1, n - 1
    a(i) = b(i) + b(i - 1)
  END DO
END SUBROUTINE test_function
