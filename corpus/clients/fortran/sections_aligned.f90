! Blends two 1-D fields with array sections and whole-array operations.
!
! Exercises: 1-based arrays sized by a PARAMETER (the frontend makes `n` a
! free symbol of the SDFG), whole-array assignments written with `(:)`,
! array sections whose bounds agree on both sides of the assignment
! (a(2:15) = ... b(2:15) ...), and intent(in), intent(out) and
! intent(inout) dummy arguments. Section bounds are literals: the frontend
! refuses a(2:15), subtracting the bounds to size the section.
! case: inputs w=0:1
PROGRAM main
  implicit none
  integer, parameter :: n = 16
  double precision a(n), b(n), c(n), w(n)
  CALL test_function(a, b, c, w)
END PROGRAM main

SUBROUTINE test_function(a, b, c, w)
  integer, parameter :: n = 16
  double precision, intent(out) :: a(n)
  double precision, intent(in) :: b(n), w(n)
  double precision, intent(inout) :: c(n)
  a(:) = 0.0d0
  a(2:15) = w(2:15) * b(2:15) + (1.0d0 - w(2:15)) * c(2:15)
  a(1:3) = a(1:3) + 1.0d0
  c(:) = c(:) - 0.5d0 * a(:)
END SUBROUTINE test_function
