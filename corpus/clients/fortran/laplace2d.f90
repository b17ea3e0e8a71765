! Five-point Laplacian of a 2-D field, zero on the boundary.
!
! Exercises: a 2-D stencil in column-major layout (the inner DO loop runs
! over the first, contiguous index), nested DO loops, 2-D arrays sized by
! PARAMETERs (free symbols `n` and `m`), and whole-row and whole-column
! sections lap(1, :) and lap(:, m) of a 2-D array.
PROGRAM main
  implicit none
  integer, parameter :: n = 9, m = 7
  double precision u(n, m), lap(n, m)
  double precision h
  CALL test_function(u, lap, h)
END PROGRAM main

SUBROUTINE test_function(u, lap, h)
  integer, parameter :: n = 9, m = 7
  double precision, intent(in) :: u(n, m)
  double precision, intent(out) :: lap(n, m)
  double precision, intent(in) :: h
  integer i, j
  DO j = 2, m - 1
    DO i = 2, n - 1
      lap(i, j) = (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) &
                   - 4.0d0 * u(i, j)) / (h * h)
    END DO
  END DO
  lap(1, :) = 0.0d0
  lap(n, :) = 0.0d0
  lap(:, 1) = 0.0d0
  lap(:, m) = 0.0d0
END SUBROUTINE test_function
