! Centred differences on 1-D and 2-D fields that carry ghost cells below
! index 1: a(-2:5) and g(-1:4, 0:3).
!
! Exercises: negative lower bounds. DaCe 2.0.0b1's frontend takes a lower
! bound only as an integer literal constant, and -2 is a unary minus
! applied to one, so it refuses the declaration.
! case: refused
PROGRAM main
  implicit none
  double precision a(-2:5), d(-2:5), g(-1:4, 0:3)
  CALL test_function(a, d, g)
END PROGRAM main

SUBROUTINE test_function(a, d, g)
  double precision, intent(in) :: a(-2:5)
  double precision, intent(out) :: d(-2:5)
  double precision, intent(inout) :: g(-1:4, 0:3)
  integer i, j
  d(-2) = 0.0d0
  d(5) = 0.0d0
  DO i = -1, 4
    d(i) = 0.5d0 * (a(i + 1) - a(i - 1))
  END DO
  DO j = 1, 3
    DO i = 0, 4
      g(i, j) = g(i, j) - g(i - 1, j - 1)
    END DO
  END DO
END SUBROUTINE test_function
