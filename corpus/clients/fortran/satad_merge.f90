! One saturation adjustment step on an (nproma, nlev) block, in the style of
! ICON's microphysics (satad): Magnus-formula saturation vapour pressure over
! liquid water and over ice, the phase chosen by MERGE on the temperature,
! and a linearised condensation (or evaporation, limited by the cloud water
! there is) that heats (or cools) the air.
!
! Exercises: MERGE on whole 2-D arrays with a mask expression (t < tmelt),
! EXP, MIN and MAX in a column loop nest, REAL(wp) with an integer PARAMETER
! kind (free symbol `wp`), `_wp` kind suffixes on literals, local 2-D work
! arrays, and intent(inout) fields. The constants are literals: the
! frontend would make a real PARAMETER a free symbol of the SDFG.
! case: inputs t=250:300 p=40000:100000 qv=0.001:0.02 qc=0:0.002
PROGRAM main
  implicit none
  integer, parameter :: wp = 8
  integer, parameter :: nproma = 8, nlev = 5
  real(wp) t(nproma, nlev), p(nproma, nlev), qv(nproma, nlev), qc(nproma, nlev)
  CALL test_function(t, p, qv, qc)
END PROGRAM main

SUBROUTINE test_function(t, p, qv, qc)
  integer, parameter :: wp = 8
  integer, parameter :: nproma = 8, nlev = 5
  real(wp), intent(inout) :: t(nproma, nlev), qv(nproma, nlev), qc(nproma, nlev)
  real(wp), intent(in) :: p(nproma, nlev)
  real(wp) :: esw(nproma, nlev), esi(nproma, nlev), es(nproma, nlev)
  real(wp) :: qsat, dq, arg
  integer :: jc, jk

  DO jk = 1, nlev
    DO jc = 1, nproma
      arg = 17.27_wp * (t(jc, jk) - 273.15_wp) / (t(jc, jk) - 35.86_wp)
      esw(jc, jk) = 610.78_wp * EXP(arg)
      arg = 21.875_wp * (t(jc, jk) - 273.15_wp) / (t(jc, jk) - 7.66_wp)
      esi(jc, jk) = 610.78_wp * EXP(arg)
    END DO
  END DO
  es = MERGE(esi, esw, t < 273.15_wp)
  DO jk = 1, nlev
    DO jc = 1, nproma
      qsat = 0.622_wp * es(jc, jk) / (p(jc, jk) - 0.378_wp * es(jc, jk))
      dq = (qv(jc, jk) - qsat) / (1.0_wp + 2.5e6_wp * 2.5e6_wp * qsat &
           / (1004.64_wp * 461.51_wp * t(jc, jk) * t(jc, jk)))
      dq = MAX(dq, -qc(jc, jk))
      dq = MIN(dq, qv(jc, jk))
      qv(jc, jk) = qv(jc, jk) - dq
      qc(jc, jk) = qc(jc, jk) + dq
      t(jc, jk) = t(jc, jk) + 2.5e6_wp / 1004.64_wp * dq
    END DO
  END DO
END SUBROUTINE test_function
