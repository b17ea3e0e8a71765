! Whole-array arithmetic written without sections: c = 2 b + 1, a = 0.
!
! Exercises: whole-array assignments of an array expression and of a
! scalar broadcast, written as Fortran allows, without `(:)`. DaCe 2.0.0b1's
! frontend turns only assignments with a section on the left into loops;
! here it writes one tasklet that assigns to the whole array, which DaCe
! cannot compile. (A plain copy `a = b` compiles and copies nothing.)
! case: refused
PROGRAM main
  implicit none
  double precision a(6), b(6), c(6)
  CALL test_function(a, b, c)
END PROGRAM main

SUBROUTINE test_function(a, b, c)
  double precision, intent(out) :: a(6), c(6)
  double precision, intent(in) :: b(6)
  c = 2.0d0 * b + 1.0d0
  a = 0.0d0
END SUBROUTINE test_function
