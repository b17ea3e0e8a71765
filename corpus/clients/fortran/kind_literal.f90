! Scales a field, declared with a literal kind: real(8).
!
! Exercises: a REAL with a literal kind number. DaCe 2.0.0b1's frontend
! looks the kind up among the PARAMETERs it has read (REAL(wp) with
! `integer, parameter :: wp = 8` works) and refuses the literal 8.
! case: refused
PROGRAM main
  implicit none
  real(8) a(6), b(6)
  CALL test_function(a, b)
END PROGRAM main

SUBROUTINE test_function(a, b)
  real(8), intent(out) :: a(6)
  real(8), intent(in) :: b(6)
  a(:) = 3.0d0 * b(:)
END SUBROUTINE test_function
