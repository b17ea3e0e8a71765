! One flux-form advection step of a 1-D tracer with limited upwind fluxes.
!
! Exercises: a chain of subroutine calls (test_function calls
! compute_fluxes, which calls limit_fluxes; then it calls apply_fluxes), each
! a nested SDFG of the frontend's, with whole arrays passed down through two
! levels, and MIN/MAX clipping. The frontend types the temporary holding an
! intrinsic's result from the first argument, a literal such as 0.0d0 as
! REAL (float32): an array element comes first here.
! case: inputs q=0:1 u=0:1
PROGRAM main
  implicit none
  integer, parameter :: n = 14
  double precision q(n), u(n), flx(n), qn(n)
  CALL test_function(q, u, flx, qn)
END PROGRAM main

SUBROUTINE test_function(q, u, flx, qn)
  integer, parameter :: n = 14
  double precision, intent(in) :: q(n), u(n)
  double precision, intent(out) :: flx(n), qn(n)
  CALL compute_fluxes(q, u, flx)
  CALL apply_fluxes(q, flx, qn)
END SUBROUTINE test_function

SUBROUTINE compute_fluxes(q, u, flx)
  integer, parameter :: n = 14
  double precision, intent(in) :: q(n), u(n)
  double precision, intent(out) :: flx(n)
  integer i
  flx(1) = 0.0d0
  DO i = 2, n
    flx(i) = 0.4d0 * u(i) * q(i - 1)
  END DO
  CALL limit_fluxes(q, flx)
END SUBROUTINE compute_fluxes

SUBROUTINE limit_fluxes(q, flx)
  integer, parameter :: n = 14
  double precision, intent(in) :: q(n)
  double precision, intent(inout) :: flx(n)
  integer i
  DO i = 2, n
    flx(i) = MAX(MIN(flx(i), 0.5d0 * q(i - 1)), 0.0d0)
  END DO
END SUBROUTINE limit_fluxes

SUBROUTINE apply_fluxes(q, flx, qn)
  integer, parameter :: n = 14
  double precision, intent(in) :: q(n), flx(n)
  double precision, intent(out) :: qn(n)
  integer i
  DO i = 1, n - 1
    qn(i) = q(i) + flx(i) - flx(i + 1)
  END DO
  qn(n) = q(n) + flx(n)
END SUBROUTINE apply_fluxes
