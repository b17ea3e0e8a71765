! Upwind-weighted neighbour sums of a 1-D field with shifted array sections:
! a(2:11) = b(1:10) + 2 c(3:12) and d(1:4) = b(9:12).
!
! Exercises: array sections whose bounds differ between the two sides of an
! assignment, the form finite differences take in Fortran (with literal
! bounds: the frontend refuses a(2:n-1)).
!
! DaCe 2.0.0b1's frontend loops over the left-hand side's section and
! indexes every right-hand side array with that same loop variable,
! dropping the right-hand side's own bounds: its SDFG computes
! a(i) = b(i) + 2 c(i) and d(i) = b(i). The expected values are that
! SDFG's (DaCe's own run of it), not what a Fortran compiler computes.
PROGRAM main
  implicit none
  integer, parameter :: n = 12
  double precision a(n), b(n), c(n), d(n)
  CALL test_function(a, b, c, d)
END PROGRAM main

SUBROUTINE test_function(a, b, c, d)
  integer, parameter :: n = 12
  double precision, intent(inout) :: a(n), d(n)
  double precision, intent(in) :: b(n), c(n)
  a(2:11) = b(1:10) + 2.0d0 * c(3:12)
  d(1:4) = b(9:12)
END SUBROUTINE test_function
