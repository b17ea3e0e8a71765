//! Symbolic integer expressions ([`SymExpr`]) and conditions ([`SymCond`]) in canonical form.
//!
//! # Why a canonical form
//!
//! Shapes, strides, memlet subsets, map ranges and interstate-edge conditions of an SDFG are
//! symbolic. Transformations compare and hash them all the time ("do these two maps have the
//! same range?", "is this subset the whole array?"), so structural equality has to coincide with
//! semantic equality for everything that arithmetic on array programs routinely produces:
//! `i + (M - i - 1)` must *be* `M - 1`, and `2*(a + b) - a` must *be* `a + 2*b`. Every
//! constructor and operator therefore returns a canonical value, and the derived
//! `PartialEq`/`Eq`/`Hash`/`Ord` compare canonical forms. The form is not a decision procedure
//! (`min(a, b) + max(a, b)` is not recognised as `a + b`), but it is idempotent and stable under
//! re-canonicalization (`e.subs(&empty) == e`, `SymExpr::parse(&e.to_string()) == Ok(e)`).
//!
//! # Canonical form of expressions
//!
//! A [`SymExpr`] is a polynomial: a constant plus a sum of terms `coeff * monomial` with nonzero
//! `i64` coefficients, sorted by monomial without duplicates. A monomial is a product of
//! [`Atom`]s with positive powers, sorted without duplicates. Atoms are
//!
//! * symbols (a symbol *is* its name),
//! * container reads `name[i, j]` with canonical index expressions (interstate code reading
//!   integer data, e.g. `A_row[i]`),
//! * opaque nodes for everything that is not a polynomial: floor division, modulo, `min`, `max`
//!   and powers whose exponent is not a small non-negative constant.
//!
//! Opaque nodes are simplified when built: constants fold; `x // 1 == x`, `x % 1 == 0`,
//! `0 // x == 0 % x == 0` (this drops a potential division by zero when `x` evaluates to 0);
//! for a constant divisor `d`, terms whose coefficient is a multiple of `d` leave the division
//! (`(4*a + 9) // 4 == a + 2`, `(i + 5) % 4 == (i + 1) % 4`); the signs and common content of
//! numerator and divisor are normalized (`(2*a) // (-4) == (-a) // 2`); `x**0 == 1`,
//! `x**1 == x`, powers of monomials fold into the monomial and powers of other polynomials
//! expand up to exponent [`MAX_EXPANDED_EXPONENT`]; `min`/`max` flatten, fold constants,
//! drop arguments dominated by a constant offset (`min(N, N + 1) == N`) and sort their
//! arguments.
//!
//! # Semantics
//!
//! Floor division and modulo follow Python: the quotient rounds toward negative infinity and
//! the remainder has the sign of the divisor (`-7 // 2 == -4`, `-7 % 2 == 1`, `7 % -2 == -1`).
//! Constant arithmetic *during simplification* wraps on 64 bits and never panics, so building
//! an expression never fails; an expression whose constants wrapped is still "some" canonical
//! value, consistent with arithmetic modulo 2^64. [`SymExpr::eval`] is checked instead: any
//! overflow, division by zero or negative exponent is reported as an [`EvalError`]. Evaluation
//! is of the canonical form, so it can report an overflow in an intermediate product of an
//! expanded polynomial even where a differently ordered computation would not overflow.
//!
//! # Conditions
//!
//! A [`SymCond`] is in negation normal form: constants, comparisons `expr OP 0` with `OP` one of
//! `==`, `!=`, `<`, `<=` (the difference of both sides, divided by the content of its
//! coefficients when exact; for `==`/`!=` the leading coefficient is positive, so `a == b` and
//! `b == a` coincide), and flattened, sorted, deduplicated `and`/`or` lists. `not` is pushed
//! into comparisons (`not (a < b)` is `b <= a`) and through `and`/`or` by De Morgan, so it never
//! appears in the canonical form. A conjunction containing a comparison and its negation folds
//! to `False` (dually for `or`). Integer tightening is not applied: `a < b` and `a + 1 <= b`
//! are equivalent but remain distinct forms, so that conditions print as they were written.
//!
//! # Text form
//!
//! Both types print as Python (`M - 1`, `2*a + b`, `a // 2`, `R**K`, `min(M, N)`,
//! `A_row[i + 1]`, `i < N and 0 <= j`) and parse the same syntax back; serde uses that string.
//! Symbol and container names are not validated: round-tripping through text requires them to
//! be identifiers other than `and`, `or`, `not`, `True`, `False`, `true`, `false`.

mod cond;
mod display;
mod eval;
mod expr;
mod parse;
#[cfg(test)]
mod tests;

pub use cond::{CmpOp, CondView, SymCond};
pub use eval::{EvalError, SymEnv};
pub use expr::{Atom, MAX_EXPANDED_EXPONENT, MAX_READ_SIZE, Reindex, SymExpr, Term};
pub use parse::ParseError;

/// Implements `Serialize`/`Deserialize` through `Display`/`FromStr`.
macro_rules! serde_as_string {
    ($ty:ty, $what:literal) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}

serde_as_string!(SymExpr, "a symbolic integer expression string");
serde_as_string!(SymCond, "a symbolic condition string");
