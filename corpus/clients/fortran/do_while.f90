! Square roots by Newton's iteration, iterated while the update is large.
!
! Exercises: DO WHILE with a condition on a scalar updated in the loop, and
! an iteration count written to an integer array. DaCe 2.0.0b1's frontend
! reads every DO as a counted loop (variable, start, end) and refuses DO
! WHILE.
! case: refused
! case: inputs x=0.5:4
PROGRAM main
  implicit none
  double precision x(8), r(8)
  integer it(8)
  CALL test_function(x, r, it)
END PROGRAM main

SUBROUTINE test_function(x, r, it)
  double precision, intent(in) :: x(8)
  double precision, intent(out) :: r(8)
  integer, intent(out) :: it(8)
  double precision g, step
  integer i
  DO i = 1, 8
    g = x(i)
    step = 1.0d0
    it(i) = 0
    DO WHILE (ABS(step) > 1.0d-12)
      step = 0.5d0 * (g - x(i) / g)
      g = g - step
      it(i) = it(i) + 1
    END DO
    r(i) = g
  END DO
END SUBROUTINE test_function
