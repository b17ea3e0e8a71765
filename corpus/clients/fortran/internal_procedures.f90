! Flux limiting with an internal subroutine and an internal function.
!
! Exercises: CONTAINS in a subroutine, with an internal subroutine that
! updates its argument and an internal function used in an expression.
! DaCe 2.0.0b1's frontend has no translation of the internal subprogram
! part (nor of FUNCTION subprograms anywhere) and refuses the program.
! case: refused
PROGRAM main
  implicit none
  double precision q(10), f(10)
  CALL test_function(q, f)
END PROGRAM main

SUBROUTINE test_function(q, f)
  double precision, intent(in) :: q(10)
  double precision, intent(out) :: f(10)
  integer i
  DO i = 2, 10
    f(i) = minmod(q(i) - q(i - 1), q(i - 1))
  END DO
  f(1) = 0.0d0
  CALL clip(f)
CONTAINS
  SUBROUTINE clip(g)
    double precision, intent(inout) :: g(10)
    integer k
    DO k = 1, 10
      g(k) = MIN(g(k), 0.5d0)
    END DO
  END SUBROUTINE clip

  DOUBLE PRECISION FUNCTION minmod(x, y)
    double precision, intent(in) :: x, y
    IF (x * y <= 0.0d0) THEN
      minmod = 0.0d0
    ELSE
      minmod = SIGN(MIN(ABS(x), ABS(y)), x)
    END IF
  END FUNCTION minmod
END SUBROUTINE test_function
