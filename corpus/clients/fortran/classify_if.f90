! Classifies the values of a field into bands and folds them.
!
! Exercises: IF / ELSE IF / ELSE chains inside a DO loop, conditions on
! array elements combined with .AND., .OR. and .NOT., a one-line logical IF,
! and an integer output array written next to a real one.
PROGRAM main
  implicit none
  integer, parameter :: n = 16
  double precision x(n), y(n)
  integer c(n)
  CALL test_function(x, y, c)
END PROGRAM main

SUBROUTINE test_function(x, y, c)
  integer, parameter :: n = 16
  double precision, intent(in) :: x(n)
  double precision, intent(out) :: y(n)
  integer, intent(out) :: c(n)
  integer i
  DO i = 1, n
    IF (x(i) > 0.5d0) THEN
      c(i) = 2
      y(i) = x(i) - 0.5d0
    ELSE IF (x(i) < -0.5d0 .AND. i > 2) THEN
      c(i) = -2
      y(i) = x(i) + 0.5d0
    ELSE IF (x(i) < -0.5d0) THEN
      c(i) = -1
      y(i) = 0.0d0
    ELSE
      c(i) = 0
      y(i) = 2.0d0 * x(i)
    END IF
    IF (.NOT. (x(i) > 0.0d0) .OR. i == n) y(i) = -y(i)
  END DO
END SUBROUTINE test_function
