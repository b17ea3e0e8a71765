//! NumPy's elementwise functions of one or two arrays that the frontend
//! lowers, in one table.
//!
//! The lowering of `np.<name>(...)` looks the name up here and lowers the
//! call as the entry says, so a function is accepted exactly when it has an
//! entry. The table is public because it is also what the test of these
//! functions against NumPy enumerates (`crates/harness/tests/programs.rs`):
//! a function added here is compared with NumPy, value and dtype, over
//! every dtype, without anyone writing a test for it.

use sdfg_ir::code::{BinaryOp, Intrinsic};

/// One of NumPy's elementwise functions (ufuncs and functions built like
/// them) that the frontend accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementwiseFunction {
    /// The name under `np.` (`"degrees"` for `np.degrees`).
    pub name: &'static str,
    /// How many array operands it takes (1 or 2). Further positional or
    /// keyword arguments (`decimals` of `np.round`, the tolerances of
    /// `np.isclose`) are options, not operands.
    pub operands: usize,
    /// How the call is lowered.
    pub(crate) lowering: Lowering,
}

/// How an [`ElementwiseFunction`] is lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lowering {
    /// An intrinsic of the tasklet language, typed as NumPy types the
    /// ufunc (functions of integers compute in a float).
    Intrinsic(Intrinsic),
    /// A binary operator, with NumPy's promotion of its operands.
    Operator(BinaryOp),
    /// A composition of other pieces, defined in `lower/numpy.rs`.
    Composite(Composite),
}

/// The functions composed from other pieces of the lowering; each is
/// defined by NumPy's own formula (see `docs/frontend.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Composite {
    /// `x * x` (booleans as int8, which NumPy's `square` uses).
    Square,
    /// `-x`.
    Negative,
    /// `x`.
    Positive,
    /// `1 / x` of floats and complex numbers.
    Reciprocal,
    /// `|x|` in a float.
    Fabs,
    /// `x * pi / 180` in a float.
    DegreesToRadians,
    /// `x * 180 / pi` in a float.
    RadiansToDegrees,
    /// -1, 0 or 1 (zero and NaN are their own sign).
    Sign,
    /// Rounded toward zero (integers unchanged).
    Trunc,
    /// Rounded to the nearest integer, ties to even.
    Rint,
    /// `np.round(x, decimals)`.
    Round,
    /// The negated truth value.
    LogicalNot,
    /// Whether exactly one truth value holds.
    LogicalXor,
    /// `np.isclose(a, b, rtol, atol, equal_nan)`.
    IsClose,
}

use Composite as C;
use Lowering::{Composite as Comp, Intrinsic as Intr, Operator as Op};

const fn f(name: &'static str, operands: usize, lowering: Lowering) -> ElementwiseFunction {
    ElementwiseFunction {
        name,
        operands,
        lowering,
    }
}

/// Every elementwise function the frontend accepts, by its name under `np.`.
pub static ELEMENTWISE: &[ElementwiseFunction] = &[
    // Intrinsics of one operand.
    f("sqrt", 1, Intr(Intrinsic::Sqrt)),
    f("exp", 1, Intr(Intrinsic::Exp)),
    f("log", 1, Intr(Intrinsic::Log)),
    f("sin", 1, Intr(Intrinsic::Sin)),
    f("cos", 1, Intr(Intrinsic::Cos)),
    f("tan", 1, Intr(Intrinsic::Tan)),
    f("tanh", 1, Intr(Intrinsic::Tanh)),
    f("arctan", 1, Intr(Intrinsic::Atan)),
    f("abs", 1, Intr(Intrinsic::Abs)),
    f("absolute", 1, Intr(Intrinsic::Abs)),
    f("floor", 1, Intr(Intrinsic::Floor)),
    f("ceil", 1, Intr(Intrinsic::Ceil)),
    f("real", 1, Intr(Intrinsic::Real)),
    f("imag", 1, Intr(Intrinsic::Imag)),
    f("conj", 1, Intr(Intrinsic::Conj)),
    f("conjugate", 1, Intr(Intrinsic::Conj)),
    f("isnan", 1, Intr(Intrinsic::IsNan)),
    f("log2", 1, Intr(Intrinsic::Log2)),
    f("log10", 1, Intr(Intrinsic::Log10)),
    f("log1p", 1, Intr(Intrinsic::Log1p)),
    f("expm1", 1, Intr(Intrinsic::Expm1)),
    f("exp2", 1, Intr(Intrinsic::Exp2)),
    f("sinh", 1, Intr(Intrinsic::Sinh)),
    f("cosh", 1, Intr(Intrinsic::Cosh)),
    f("arcsin", 1, Intr(Intrinsic::Asin)),
    f("arccos", 1, Intr(Intrinsic::Acos)),
    f("arcsinh", 1, Intr(Intrinsic::Asinh)),
    f("arccosh", 1, Intr(Intrinsic::Acosh)),
    f("arctanh", 1, Intr(Intrinsic::Atanh)),
    f("cbrt", 1, Intr(Intrinsic::Cbrt)),
    // Compositions of one operand.
    f("square", 1, Comp(C::Square)),
    f("negative", 1, Comp(C::Negative)),
    f("positive", 1, Comp(C::Positive)),
    f("reciprocal", 1, Comp(C::Reciprocal)),
    f("fabs", 1, Comp(C::Fabs)),
    f("deg2rad", 1, Comp(C::DegreesToRadians)),
    f("radians", 1, Comp(C::DegreesToRadians)),
    f("rad2deg", 1, Comp(C::RadiansToDegrees)),
    f("degrees", 1, Comp(C::RadiansToDegrees)),
    f("sign", 1, Comp(C::Sign)),
    f("trunc", 1, Comp(C::Trunc)),
    f("fix", 1, Comp(C::Trunc)),
    f("rint", 1, Comp(C::Rint)),
    f("round", 1, Comp(C::Round)),
    f("around", 1, Comp(C::Round)),
    f("logical_not", 1, Comp(C::LogicalNot)),
    // Intrinsics of two operands.
    f("arctan2", 2, Intr(Intrinsic::Atan2)),
    f("maximum", 2, Intr(Intrinsic::Max)),
    f("minimum", 2, Intr(Intrinsic::Min)),
    // Operators.
    f("add", 2, Op(BinaryOp::Add)),
    f("subtract", 2, Op(BinaryOp::Sub)),
    f("multiply", 2, Op(BinaryOp::Mul)),
    f("divide", 2, Op(BinaryOp::Div)),
    f("true_divide", 2, Op(BinaryOp::Div)),
    f("floor_divide", 2, Op(BinaryOp::FloorDiv)),
    f("mod", 2, Op(BinaryOp::Mod)),
    f("remainder", 2, Op(BinaryOp::Mod)),
    f("power", 2, Op(BinaryOp::Pow)),
    f("bitwise_and", 2, Op(BinaryOp::BitAnd)),
    f("bitwise_or", 2, Op(BinaryOp::BitOr)),
    f("bitwise_xor", 2, Op(BinaryOp::BitXor)),
    f("left_shift", 2, Op(BinaryOp::Shl)),
    f("right_shift", 2, Op(BinaryOp::Shr)),
    f("equal", 2, Op(BinaryOp::Eq)),
    f("not_equal", 2, Op(BinaryOp::Ne)),
    f("less", 2, Op(BinaryOp::Lt)),
    f("less_equal", 2, Op(BinaryOp::Le)),
    f("greater", 2, Op(BinaryOp::Gt)),
    f("greater_equal", 2, Op(BinaryOp::Ge)),
    f("logical_and", 2, Op(BinaryOp::And)),
    f("logical_or", 2, Op(BinaryOp::Or)),
    // Compositions of two operands.
    f("logical_xor", 2, Comp(C::LogicalXor)),
    f("isclose", 2, Comp(C::IsClose)),
];

/// The entry of `np.<name>`, if the frontend accepts it.
pub fn elementwise(name: &str) -> Option<&'static ElementwiseFunction> {
    ELEMENTWISE.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_arities_are_one_or_two() {
        let mut names: Vec<_> = ELEMENTWISE.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a name is listed twice");
        for f in ELEMENTWISE {
            assert!(matches!(f.operands, 1 | 2), "{}", f.name);
            if let Lowering::Intrinsic(i) = f.lowering {
                assert_eq!(i.arity(), f.operands, "{}", f.name);
            }
            if let Lowering::Operator(_) = f.lowering {
                assert_eq!(f.operands, 2, "{}", f.name);
            }
        }
    }
}
