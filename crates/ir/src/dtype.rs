//! Element types and typed literal constants.
//!
//! Every container, connector and tasklet expression has a [`DType`]. The set is
//! exactly what NumPy programs in the corpus use: booleans, signed and unsigned
//! integers of 8 to 64 bits, IEEE floats, and complex numbers made of two floats.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The element type of a container, connector or expression.
///
/// Names follow NumPy (`float64`, `complex128`, ...) because that is how the
/// programs we compile spell them, and serialize in the same spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// One-byte boolean (`numpy.bool_`).
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer; also the type of every symbol unless declared otherwise.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Unsigned 64-bit integer.
    UInt64,
    /// IEEE 754 single precision.
    Float32,
    /// IEEE 754 double precision.
    Float64,
    /// Complex number of two `float32`.
    Complex64,
    /// Complex number of two `float64`.
    Complex128,
}

impl DType {
    /// Every dtype, in declaration order (useful for exhaustive tests).
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// Size of one element in bytes, as laid out in host and device memory.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 1,
            DType::Int16 | DType::UInt16 => 2,
            DType::Int32 | DType::UInt32 | DType::Float32 => 4,
            DType::Int64 | DType::UInt64 | DType::Float64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
        }
    }

    /// True for signed and unsigned integers (not `bool`).
    pub fn is_integer(self) -> bool {
        self.is_signed_integer() || self.is_unsigned_integer()
    }

    /// True for `int8` .. `int64`.
    pub fn is_signed_integer(self) -> bool {
        matches!(
            self,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64
        )
    }

    /// True for `uint8` .. `uint64`.
    pub fn is_unsigned_integer(self) -> bool {
        matches!(
            self,
            DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64
        )
    }

    /// True for `float32` and `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::Float32 | DType::Float64)
    }

    /// True for `complex64` and `complex128`.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::Complex64 | DType::Complex128)
    }

    /// True for every type arithmetic is defined on (all but `bool`).
    pub fn is_numeric(self) -> bool {
        self != DType::Bool
    }

    /// The real type of a complex type (`complex128` -> `float64`); other types map to themselves.
    ///
    /// This is the result type of `abs`, `real` and `imag` on complex values.
    pub fn real_type(self) -> DType {
        match self {
            DType::Complex64 => DType::Float32,
            DType::Complex128 => DType::Float64,
            other => other,
        }
    }

    /// The NumPy name of the type (`"float64"`), which is also its serialized form.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
        }
    }

    /// Parses a NumPy type name; `None` for anything else.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed constant in tasklet code, reduction identities and library-node scalars.
///
/// Floats are kept as `f64` whatever their dtype; a `float32` literal is rounded
/// when the code that uses it is emitted or interpreted. Non-finite values
/// (`inf` is the identity of a max-reduction) serialize as the strings `"inf"`,
/// `"-inf"` and `"nan"` because JSON has no spelling for them.
///
/// Two literals are equal when they are the same constant: a NaN equals a
/// NaN (so an SDFG holding `np.nan` equals its JSON round trip), otherwise
/// floats compare as numbers.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Literal {
    /// `True` / `False`.
    Bool(bool),
    /// A signed integer constant of the given integer dtype.
    Int {
        /// The value.
        value: i64,
        /// Its type; must be a signed integer type.
        dtype: DType,
    },
    /// An unsigned integer constant of the given unsigned dtype.
    UInt {
        /// The value.
        value: u64,
        /// Its type; must be an unsigned integer type.
        dtype: DType,
    },
    /// A floating-point constant.
    Float {
        /// The value.
        #[serde(with = "float_repr")]
        value: f64,
        /// Its type; must be a float type.
        dtype: DType,
    },
    /// A complex constant `re + im*j`.
    Complex {
        /// Real part.
        #[serde(with = "float_repr")]
        re: f64,
        /// Imaginary part.
        #[serde(with = "float_repr")]
        im: f64,
        /// Its type; must be a complex type.
        dtype: DType,
    },
}

impl PartialEq for Literal {
    fn eq(&self, other: &Literal) -> bool {
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        match (self, other) {
            (Literal::Bool(a), Literal::Bool(b)) => a == b,
            (Literal::Int { value: a, dtype: s }, Literal::Int { value: b, dtype: t }) => {
                a == b && s == t
            }
            (Literal::UInt { value: a, dtype: s }, Literal::UInt { value: b, dtype: t }) => {
                a == b && s == t
            }
            (Literal::Float { value: a, dtype: s }, Literal::Float { value: b, dtype: t }) => {
                same(*a, *b) && s == t
            }
            (
                Literal::Complex {
                    re: a,
                    im: b,
                    dtype: s,
                },
                Literal::Complex {
                    re: c,
                    im: d,
                    dtype: t,
                },
            ) => same(*a, *c) && same(*b, *d) && s == t,
            _ => false,
        }
    }
}

impl Literal {
    /// A `float64` constant.
    pub fn f64(value: f64) -> Literal {
        Literal::Float {
            value,
            dtype: DType::Float64,
        }
    }

    /// A `float32` constant.
    pub fn f32(value: f32) -> Literal {
        Literal::Float {
            value: f64::from(value),
            dtype: DType::Float32,
        }
    }

    /// An `int64` constant.
    pub fn i64(value: i64) -> Literal {
        Literal::Int {
            value,
            dtype: DType::Int64,
        }
    }

    /// An `int32` constant.
    pub fn i32(value: i32) -> Literal {
        Literal::Int {
            value: i64::from(value),
            dtype: DType::Int32,
        }
    }

    /// The same number as a constant of type `to`, as an annotation such as
    /// `poly: dace.uint16 = 0x8408` declares it; `None` where the value does
    /// not fit `to` (out of range, or a fraction for an integer type), so that
    /// a declaration never silently changes its value.
    pub fn with_dtype(self, to: DType) -> Option<Literal> {
        let (int, float) = match self {
            Literal::Bool(b) => (Some(i128::from(b)), f64::from(u8::from(b))),
            Literal::Int { value, .. } => (Some(i128::from(value)), value as f64),
            Literal::UInt { value, .. } => (Some(i128::from(value)), value as f64),
            Literal::Float { value, .. } => (None, value),
            Literal::Complex { .. } => return (self.dtype() == to).then_some(self),
        };
        let bits = 8 * to.size_bytes() as u32;
        match to {
            DType::Bool => int
                .filter(|v| *v == 0 || *v == 1)
                .map(|v| Literal::Bool(v == 1)),
            t if t.is_signed_integer() => {
                let v =
                    int.filter(|v| (-(1i128 << (bits - 1))..1i128 << (bits - 1)).contains(v))?;
                Some(Literal::Int {
                    value: i64::try_from(v).ok()?,
                    dtype: t,
                })
            }
            t if t.is_unsigned_integer() => {
                let v = int.filter(|v| (0..1i128 << bits).contains(v))?;
                Some(Literal::UInt {
                    value: u64::try_from(v).ok()?,
                    dtype: t,
                })
            }
            t if t.is_float() => Some(Literal::Float {
                value: float,
                dtype: t,
            }),
            t if t.is_complex() => Some(Literal::Complex {
                re: float,
                im: 0.0,
                dtype: t,
            }),
            _ => None,
        }
    }

    /// `-self` of the same type, as Python's unary minus on a number
    /// literal (`-9999`, `-1.5`); `None` for booleans, unsigned and complex
    /// constants and the one integer whose negation overflows.
    pub fn negated(self) -> Option<Literal> {
        match self {
            Literal::Int { value, dtype } => Some(Literal::Int {
                value: value.checked_neg()?,
                dtype,
            }),
            Literal::Float { value, dtype } => Some(Literal::Float {
                value: -value,
                dtype,
            }),
            _ => None,
        }
    }

    /// The type of the constant.
    pub fn dtype(&self) -> DType {
        match *self {
            Literal::Bool(_) => DType::Bool,
            Literal::Int { dtype, .. }
            | Literal::UInt { dtype, .. }
            | Literal::Float { dtype, .. }
            | Literal::Complex { dtype, .. } => dtype,
        }
    }

    /// Whether the variant agrees with its declared dtype (an `Int` must carry a
    /// signed integer type, and so on). The validator reports literals that do not.
    pub fn is_well_typed(&self) -> bool {
        match *self {
            Literal::Bool(_) => true,
            Literal::Int { dtype, .. } => dtype.is_signed_integer(),
            Literal::UInt { dtype, .. } => dtype.is_unsigned_integer(),
            Literal::Float { dtype, .. } => dtype.is_float(),
            Literal::Complex { dtype, .. } => dtype.is_complex(),
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Literal::Bool(b) => f.write_str(if b { "True" } else { "False" }),
            Literal::Int { value, .. } => write!(f, "{value}"),
            Literal::UInt { value, .. } => write!(f, "{value}"),
            Literal::Float { value, .. } => write!(f, "{value:?}"),
            Literal::Complex { re, im, .. } => write!(f, "({re:?}{im:+?}j)"),
        }
    }
}

/// Serde helpers for `f64` that survive JSON: non-finite values become strings.
mod float_repr {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Num(f64),
        Text(String),
    }

    pub(super) fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            s.serialize_f64(*value)
        } else if value.is_nan() {
            s.serialize_str("nan")
        } else if *value > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Num(v) => Ok(v),
            Repr::Text(text) => match text.as_str() {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "expected a number, \"inf\", \"-inf\" or \"nan\", found {}",
                    crate::quote(other)
                ))),
            },
        }
    }
}
