! Dot product and Euclidean norm of two vectors, accumulated by a DO loop.
!
! Exercises: a reduction into scalar intent(out) arguments inside a DO loop
! (the accumulator is the argument itself) and SQRT on a scalar.
PROGRAM main
  implicit none
  integer, parameter :: n = 20
  double precision x(n), y(n)
  double precision dot, norm
  CALL test_function(x, y, dot, norm)
END PROGRAM main

SUBROUTINE test_function(x, y, dot, norm)
  integer, parameter :: n = 20
  double precision, intent(in) :: x(n), y(n)
  double precision, intent(out) :: dot, norm
  integer i
  dot = 0.0d0
  norm = 0.0d0
  DO i = 1, n
    dot = dot + x(i) * y(i)
    norm = norm + x(i) * x(i)
  END DO
  norm = SQRT(norm)
END SUBROUTINE test_function
