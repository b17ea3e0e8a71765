! Implicit vertical diffusion of a tracer, ICON style: in every column of an
! (nproma, nlev) block, the tridiagonal system
!   -dt kh(k-1) q(k-1) + (1 + dt (kh(k-1) + kh(k))) q(k) - dt kh(k) q(k+1) = q0(k)
! (kh(k) the diffusivity between levels k and k+1, no flux through the top
! and the bottom) solved with the Thomas algorithm.
!
! Exercises: REAL(wp) with an integer PARAMETER kind (ICON's `wp`; the
! frontend makes `wp` a free symbol of the SDFG), 2-D arrays in column-major
! layout with the vertical loop outside and the horizontal (contiguous)
! loop inside, a forward sweep and a backward sweep (DO with step -1) that
! carry values between levels, local 2-D work arrays (transients) and
! local scalars, and intent(in) scalar dt.
! case: inputs kh=0:2 dt=0.5:2
PROGRAM main
  implicit none
  integer, parameter :: wp = 8
  integer, parameter :: nproma = 6, nlev = 10
  real(wp) q0(nproma, nlev), kh(nproma, nlev), q(nproma, nlev)
  real(wp) dt
  CALL test_function(q0, kh, dt, q)
END PROGRAM main

SUBROUTINE test_function(q0, kh, dt, q)
  integer, parameter :: wp = 8
  integer, parameter :: nproma = 6, nlev = 10
  real(wp), intent(in) :: q0(nproma, nlev), kh(nproma, nlev)
  real(wp), intent(in) :: dt
  real(wp), intent(out) :: q(nproma, nlev)
  real(wp) :: cp(nproma, nlev), dp(nproma, nlev)
  real(wp) :: a, b, c, den
  integer :: jc, jk

  DO jc = 1, nproma
    c = -dt * kh(jc, 1)
    b = 1.0_wp - c
    cp(jc, 1) = c / b
    dp(jc, 1) = q0(jc, 1) / b
  END DO
  DO jk = 2, nlev
    DO jc = 1, nproma
      a = -dt * kh(jc, jk - 1)
      IF (jk < nlev) THEN
        c = -dt * kh(jc, jk)
      ELSE
        c = 0.0_wp
      END IF
      b = 1.0_wp - a - c
      den = b - a * cp(jc, jk - 1)
      cp(jc, jk) = c / den
      dp(jc, jk) = (q0(jc, jk) - a * dp(jc, jk - 1)) / den
    END DO
  END DO

  DO jc = 1, nproma
    q(jc, nlev) = dp(jc, nlev)
  END DO
  DO jk = nlev - 1, 1, -1
    DO jc = 1, nproma
      q(jc, jk) = dp(jc, jk) - cp(jc, jk) * q(jc, jk + 1)
    END DO
  END DO
END SUBROUTINE test_function
