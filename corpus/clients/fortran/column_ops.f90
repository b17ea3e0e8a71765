! Weights each column of a 2-D field and scales it by its own mean.
!
! Exercises: column sections a(:, j) of a column-major 2-D array on both
! sides of an assignment, passing a column section b(:, j) and an element
! w(j) to another subroutine (the frontend makes a view of the column), and
! a subroutine that reduces and updates its dummy array argument.
PROGRAM main
  implicit none
  integer, parameter :: n = 8, m = 5
  double precision a(n, m), b(n, m), w(m)
  CALL test_function(a, b, w)
END PROGRAM main

SUBROUTINE test_function(a, b, w)
  integer, parameter :: n = 8, m = 5
  double precision, intent(in) :: a(n, m), w(m)
  double precision, intent(out) :: b(n, m)
  integer j
  DO j = 1, m
    b(:, j) = a(:, j) * w(j)
    CALL center_column(b(:, j), w(j))
  END DO
END SUBROUTINE test_function

SUBROUTINE center_column(c, f)
  integer, parameter :: n = 8
  double precision, intent(inout) :: c(n)
  double precision, intent(in) :: f
  double precision mean
  integer i
  mean = 0.0d0
  DO i = 1, n
    mean = mean + c(i)
  END DO
  mean = mean / n
  DO i = 1, n
    c(i) = (c(i) - mean) * f
  END DO
END SUBROUTINE center_column
