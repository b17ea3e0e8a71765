! Backward differences and a 2-D table on arrays with non-1 lower bounds.
!
! Exercises: custom lower bounds a(0:9) and g(0:5, 2:5) (the frontend takes
! literal bounds only), DO loops over 0- and 2-based index ranges, one with
! a negative step, and a whole-column section g(:, 4) of a 2-D array with
! lower bounds. The driver's normalize_offsets=True is what makes the
! frontend subtract each declared lower bound (not 1) from an index.
PROGRAM main
  implicit none
  double precision a(0:9), b(0:9), g(0:5, 2:5)
  CALL test_function(a, b, g)
END PROGRAM main

SUBROUTINE test_function(a, b, g)
  double precision, intent(inout) :: a(0:9)
  double precision, intent(in) :: b(0:9)
  double precision, intent(out) :: g(0:5, 2:5)
  integer i, j
  DO i = 9, 1, -1
    a(i) = a(i) - a(i - 1) + b(9 - i)
  END DO
  a(0) = b(0) * b(9)
  DO j = 2, 5
    DO i = 0, 5
      g(i, j) = a(i + j - 2) * j + b(i + 4) * i
    END DO
  END DO
  g(:, 4) = g(:, 4) + 100.0d0
END SUBROUTINE test_function
