//! Scalar arithmetic with the semantics of the generated C++ and of NumPy
//! where the IR says so (floor division, modulo, `min`/`max` with NaN).
//!
//! Every function takes the operands' dtype, computes in the family's wide
//! type and normalizes the result with [`Value::cast`], so an `int8` sum
//! wraps and a `float32` product is rounded to single precision.

use crate::value::{C64, Value};
use sdfg_ir::code::{BinaryOp, Intrinsic, UnaryOp};
use sdfg_ir::{DType, Wcr};

/// An arithmetic fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArithError {
    /// Integer division or modulo by zero.
    DivisionByZero,
    /// An operation the operand type does not support (prevented by the
    /// type checker; reported instead of guessed).
    Unsupported,
}

fn family(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        d if d.is_signed_integer() => 1,
        d if d.is_unsigned_integer() => 2,
        d if d.is_float() => 3,
        _ => 4,
    }
}

/// Python's floor division of integers (`None` when dividing by zero or overflowing).
fn floor_div_i(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

/// Python's modulo of integers: the result has the sign of `b`.
fn mod_i(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// Python's (and NumPy's) floor division and modulo of floats, computed
/// together as CPython's `float_divmod` and NumPy's `npy_divmod` do. The
/// quotient is `(a - a % b) / b` snapped to the nearest integer, not
/// `floor(a / b)`: the two differ when `a / b` rounds up to an integer
/// (`1.0 // 0.1` is 9.0 in Python, while `floor(1.0 / 0.1)` is 10.0), and
/// only the former keeps `a == (a // b) * b + a % b`. A zero remainder has
/// the sign of `b`. Division by zero gives NumPy's `a / b` and NaN.
fn divmod_f(a: f64, b: f64) -> (f64, f64) {
    let m = a % b;
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    let m = if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            div -= 1.0;
            m + b
        } else {
            m
        }
    } else {
        0.0f64.copysign(b)
    };
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 { f + 1.0 } else { f }
    } else {
        0.0f64.copysign(a / b)
    };
    (q, m)
}

/// NumPy's `minimum`/`maximum`: NaN propagates.
pub(crate) fn min_f(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

pub(crate) fn max_f(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Applies a unary operator to a value of type `dtype`.
pub(crate) fn unary(op: UnaryOp, dtype: DType, a: Value) -> Result<Value, ArithError> {
    let v = match (op, a) {
        (UnaryOp::Neg, Value::Int(x)) => Value::Int(x.wrapping_neg()),
        (UnaryOp::Neg, Value::UInt(x)) => Value::UInt(x.wrapping_neg()),
        (UnaryOp::Neg, Value::Float(x)) => Value::Float(-x),
        (UnaryOp::Neg, Value::Complex(x)) => Value::Complex(-x),
        (UnaryOp::Not, Value::Bool(x)) => Value::Bool(!x),
        (UnaryOp::BitNot, Value::Bool(x)) => Value::Bool(!x),
        (UnaryOp::BitNot, Value::Int(x)) => Value::Int(!x),
        (UnaryOp::BitNot, Value::UInt(x)) => Value::UInt(!x),
        _ => return Err(ArithError::Unsupported),
    };
    Ok(v.cast(dtype))
}

/// Applies a binary operator to two values of type `dtype` (comparisons give `bool`).
pub(crate) fn binary(op: BinaryOp, dtype: DType, a: Value, b: Value) -> Result<Value, ArithError> {
    use BinaryOp as B;
    let v = match (a, b) {
        (Value::Float(x), Value::Float(y)) => match op {
            B::Add => Value::Float(x + y),
            B::Sub => Value::Float(x - y),
            B::Mul => Value::Float(x * y),
            B::Div => Value::Float(x / y),
            B::FloorDiv => Value::Float(divmod_f(x, y).0),
            B::Mod => Value::Float(divmod_f(x, y).1),
            B::Pow => Value::Float(x.powf(y)),
            B::Eq => Value::Bool(x == y),
            B::Ne => Value::Bool(x != y),
            B::Lt => Value::Bool(x < y),
            B::Le => Value::Bool(x <= y),
            B::Gt => Value::Bool(x > y),
            B::Ge => Value::Bool(x >= y),
            _ => return Err(ArithError::Unsupported),
        },
        (Value::Int(x), Value::Int(y)) => match op {
            B::Add => Value::Int(x.wrapping_add(y)),
            B::Sub => Value::Int(x.wrapping_sub(y)),
            B::Mul => Value::Int(x.wrapping_mul(y)),
            // C++ semantics for `/` (truncation), Python's for `//` and `%`.
            B::Div => Value::Int(x.checked_div(y).ok_or(ArithError::DivisionByZero)?),
            B::FloorDiv => Value::Int(floor_div_i(x, y).ok_or(ArithError::DivisionByZero)?),
            B::Mod => Value::Int(mod_i(x, y).ok_or(ArithError::DivisionByZero)?),
            B::Pow => match u32::try_from(y) {
                Ok(e) => Value::Int(x.wrapping_pow(e)),
                // A negative integer power is not an integer; C++ code would
                // call `pow` on doubles, which truncates back to 0 (or ±1).
                Err(_) => Value::Int((x as f64).powf(y as f64) as i64),
            },
            B::Eq => Value::Bool(x == y),
            B::Ne => Value::Bool(x != y),
            B::Lt => Value::Bool(x < y),
            B::Le => Value::Bool(x <= y),
            B::Gt => Value::Bool(x > y),
            B::Ge => Value::Bool(x >= y),
            B::BitAnd => Value::Int(x & y),
            B::BitOr => Value::Int(x | y),
            B::BitXor => Value::Int(x ^ y),
            B::Shl => Value::Int(x.wrapping_shl(y as u32)),
            B::Shr => Value::Int(x.wrapping_shr(y as u32)),
            B::And | B::Or => return Err(ArithError::Unsupported),
        },
        (Value::UInt(x), Value::UInt(y)) => match op {
            B::Add => Value::UInt(x.wrapping_add(y)),
            B::Sub => Value::UInt(x.wrapping_sub(y)),
            B::Mul => Value::UInt(x.wrapping_mul(y)),
            B::Div | B::FloorDiv => {
                Value::UInt(x.checked_div(y).ok_or(ArithError::DivisionByZero)?)
            }
            B::Mod => Value::UInt(x.checked_rem(y).ok_or(ArithError::DivisionByZero)?),
            B::Pow => Value::UInt(x.wrapping_pow(u32::try_from(y).unwrap_or(u32::MAX))),
            B::Eq => Value::Bool(x == y),
            B::Ne => Value::Bool(x != y),
            B::Lt => Value::Bool(x < y),
            B::Le => Value::Bool(x <= y),
            B::Gt => Value::Bool(x > y),
            B::Ge => Value::Bool(x >= y),
            B::BitAnd => Value::UInt(x & y),
            B::BitOr => Value::UInt(x | y),
            B::BitXor => Value::UInt(x ^ y),
            B::Shl => Value::UInt(x.wrapping_shl(y as u32)),
            B::Shr => Value::UInt(x.wrapping_shr(y as u32)),
            B::And | B::Or => return Err(ArithError::Unsupported),
        },
        (Value::Bool(x), Value::Bool(y)) => match op {
            B::And | B::BitAnd => Value::Bool(x && y),
            B::Or | B::BitOr => Value::Bool(x || y),
            B::BitXor | B::Ne => Value::Bool(x != y),
            B::Eq => Value::Bool(x == y),
            _ => return Err(ArithError::Unsupported),
        },
        (Value::Complex(x), Value::Complex(y)) => match op {
            B::Add => Value::Complex(x + y),
            B::Sub => Value::Complex(x - y),
            B::Mul => Value::Complex(x * y),
            B::Div => Value::Complex(x / y),
            B::Pow => Value::Complex(x.powc(y)),
            B::Eq => Value::Bool(x == y),
            B::Ne => Value::Bool(x != y),
            _ => return Err(ArithError::Unsupported),
        },
        _ => return Err(ArithError::Unsupported),
    };
    Ok(if op.is_comparison() || matches!(v, Value::Bool(_)) {
        v
    } else {
        v.cast(dtype)
    })
}

/// C's `frexp`: `x = m * 2**e` with `0.5 <= |m| < 1`; `(x, 0)` for zero,
/// infinities and NaN. Exact for every double, subnormals included (a
/// float32's mantissa and exponent are those of its double).
fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, biased - 1022)
}

/// Applies an intrinsic to arguments of type `dtype`.
pub(crate) fn intrinsic(
    func: Intrinsic,
    dtype: DType,
    args: &[Value],
) -> Result<Value, ArithError> {
    use Intrinsic as I;
    if func == I::WallClockNs {
        // The host's clock, as the emitted code reads it.
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        return Ok(Value::Int(ns));
    }
    let a = *args.first().ok_or(ArithError::Unsupported)?;
    let second = || args.get(1).copied().ok_or(ArithError::Unsupported);
    let real = |f: fn(f64) -> f64| Value::Float(f(a.to_f64()));
    let v = match (func, family(dtype)) {
        (I::Sqrt, 3) => real(f64::sqrt),
        (I::Exp, 3) => real(f64::exp),
        (I::Log, 3) => real(f64::ln),
        (I::Sin, 3) => real(f64::sin),
        (I::Cos, 3) => real(f64::cos),
        (I::Tan, 3) => real(f64::tan),
        (I::Tanh, 3) => real(f64::tanh),
        (I::Atan, 3) => real(f64::atan),
        (I::Floor, 3) => real(f64::floor),
        (I::Ceil, 3) => real(f64::ceil),
        (I::Abs, 3) => real(f64::abs),
        (I::Log2, 3) => real(f64::log2),
        (I::Log10, 3) => real(f64::log10),
        (I::Log1p, 3) => real(f64::ln_1p),
        (I::Expm1, 3) => real(f64::exp_m1),
        (I::Exp2, 3) => real(f64::exp2),
        (I::Sinh, 3) => real(f64::sinh),
        (I::Cosh, 3) => real(f64::cosh),
        (I::Asin, 3) => real(f64::asin),
        (I::Acos, 3) => real(f64::acos),
        (I::Asinh, 3) => real(f64::asinh),
        (I::Acosh, 3) => real(f64::acosh),
        (I::Atanh, 3) => real(f64::atanh),
        (I::Cbrt, 3) => real(f64::cbrt),
        (I::Erf, 3) => real(libm::erf),
        (I::Trunc, 3) => real(f64::trunc),
        (I::Rint, 3) => real(f64::round_ties_even),
        (I::FrexpMantissa, 3) => real(|x| frexp(x).0),
        (I::FrexpExponent, 3) => {
            return Ok(Value::Int(i64::from(frexp(a.to_f64()).1)).cast(DType::Int32));
        }
        (I::IsNan, 3) => return Ok(Value::Bool(a.to_f64().is_nan())),
        (I::Atan2, 3) => Value::Float(a.to_f64().atan2(second()?.to_f64())),
        // Rust's `%` of floats is C's `fmod`: exact, the sign of `a`.
        (I::Fmod, 3) => Value::Float(a.to_f64() % second()?.to_f64()),
        (I::Pow, 3) => Value::Float(a.to_f64().powf(second()?.to_f64())),
        (I::Min, 3) => Value::Float(min_f(a.to_f64(), second()?.to_f64())),
        (I::Max, 3) => Value::Float(max_f(a.to_f64(), second()?.to_f64())),
        (I::Sqrt, 4) => Value::Complex(a.to_c64().sqrt()),
        (I::Exp, 4) => Value::Complex(a.to_c64().exp()),
        (I::Log, 4) => Value::Complex(a.to_c64().ln()),
        (I::Sin, 4) => Value::Complex(a.to_c64().sin()),
        (I::Cos, 4) => Value::Complex(a.to_c64().cos()),
        (I::Tan, 4) => Value::Complex(a.to_c64().tan()),
        (I::Tanh, 4) => Value::Complex(a.to_c64().tanh()),
        (I::Atan, 4) => Value::Complex(a.to_c64().atan()),
        (I::Pow, 4) => Value::Complex(a.to_c64().powc(second()?.to_c64())),
        (I::Conj, 4) => Value::Complex(a.to_c64().conj()),
        (I::Abs, 4) => return Ok(Value::Float(a.to_c64().norm()).cast(dtype.real_type())),
        (I::Real, 4) => return Ok(Value::Float(a.to_c64().re).cast(dtype.real_type())),
        (I::Imag, 4) => return Ok(Value::Float(a.to_c64().im).cast(dtype.real_type())),
        (I::Complex, 3) => {
            let to = if dtype == DType::Float32 {
                DType::Complex64
            } else {
                DType::Complex128
            };
            return Ok(Value::Complex(C64::new(a.to_f64(), second()?.to_f64())).cast(to));
        }
        (I::Abs, 1) => Value::Int(a.to_i64().wrapping_abs()),
        (I::Abs, 2) => a,
        (I::Min, 1) => Value::Int(a.to_i64().min(second()?.to_i64())),
        (I::Max, 1) => Value::Int(a.to_i64().max(second()?.to_i64())),
        (I::Min, 2) => Value::UInt(a.to_u64().min(second()?.to_u64())),
        (I::Max, 2) => Value::UInt(a.to_u64().max(second()?.to_u64())),
        _ => return Err(ArithError::Unsupported),
    };
    Ok(v.cast(dtype))
}

/// Combines an existing value with a written one under write-conflict resolution.
pub(crate) fn combine(wcr: Wcr, dtype: DType, old: Value, new: Value) -> Result<Value, ArithError> {
    // The accumulation of reductions and matrix products, without the table.
    match (wcr, dtype, old, new) {
        (Wcr::Sum, DType::Float64, Value::Float(a), Value::Float(b)) => {
            return Ok(Value::Float(a + b));
        }
        (Wcr::Sum, DType::Int64, Value::Int(a), Value::Int(b)) => {
            return Ok(Value::Int(a.wrapping_add(b)));
        }
        _ => {}
    }
    match wcr {
        Wcr::Sum => binary(BinaryOp::Add, dtype, old, new),
        Wcr::Product => binary(BinaryOp::Mul, dtype, old, new),
        Wcr::BitAnd => binary(BinaryOp::BitAnd, dtype, old, new),
        Wcr::BitOr => binary(BinaryOp::BitOr, dtype, old, new),
        Wcr::BitXor => binary(BinaryOp::BitXor, dtype, old, new),
        Wcr::Min | Wcr::Max => {
            let f = if wcr == Wcr::Min {
                Intrinsic::Min
            } else {
                Intrinsic::Max
            };
            match (old, new) {
                (Value::Bool(a), Value::Bool(b)) => {
                    Ok(Value::Bool(if wcr == Wcr::Min { a && b } else { a || b }))
                }
                _ => intrinsic(f, dtype, &[old, new]),
            }
        }
    }
}
