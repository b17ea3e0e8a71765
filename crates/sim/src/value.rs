//! Runtime scalars and typed element storage.
//!
//! A [`Value`] is one scalar at run time. Its variant is the *family* of its
//! dtype (booleans, signed integers, unsigned integers, floats, complex), and
//! the interpreter keeps every value normalized to its exact dtype: an `int8`
//! lives in [`Value::Int`] but always within `-128..=127`, a `float32` in
//! [`Value::Float`] but always exactly representable as `f32`. Arithmetic is
//! done on the family's widest type and normalized back, which gives the
//! results of the generated C++ (wrapping integers, single-precision floats)
//! without one code path per dtype.
//!
//! [`Elements`] is the storage of one allocation: a vector of the dtype's own
//! element type, so a `float32` array takes 4 bytes per element, as on the device.

use num_complex::Complex;
use sdfg_ir::{DType, Literal};

/// A double-precision complex number.
pub type C64 = Complex<f64>;

/// One scalar at run time, normalized to its dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// Any signed integer type, wrapped to its width.
    Int(i64),
    /// Any unsigned integer type, wrapped to its width.
    UInt(u64),
    /// `float32` (rounded to single precision) or `float64`.
    Float(f64),
    /// `complex64` (both parts single precision) or `complex128`.
    Complex(C64),
}

impl Value {
    /// Zero of the given type (`False` for `bool`).
    pub fn zero(dtype: DType) -> Value {
        match dtype {
            DType::Bool => Value::Bool(false),
            d if d.is_signed_integer() => Value::Int(0),
            d if d.is_unsigned_integer() => Value::UInt(0),
            d if d.is_float() => Value::Float(0.0),
            _ => Value::Complex(C64::new(0.0, 0.0)),
        }
    }

    /// The value of a literal, normalized to the literal's dtype.
    pub fn from_literal(lit: &Literal) -> Value {
        let (v, d) = match *lit {
            Literal::Bool(b) => (Value::Bool(b), DType::Bool),
            Literal::Int { value, dtype } => (Value::Int(value), dtype),
            Literal::UInt { value, dtype } => (Value::UInt(value), dtype),
            Literal::Float { value, dtype } => (Value::Float(value), dtype),
            Literal::Complex { re, im, dtype } => (Value::Complex(C64::new(re, im)), dtype),
        };
        v.cast(d)
    }

    /// Converts to `to` with the conversion rules of C++ (the language the
    /// backends emit): integers wrap to the target width, floats convert to
    /// integers by truncation toward zero (saturating at the target's limits
    /// and mapping NaN to 0, where C++ leaves the behaviour undefined), any
    /// number converts to `bool` as "not zero", and a real converts to a
    /// complex with zero imaginary part. Complex to real is not a cast in the
    /// IR (the type checker rejects it); here it takes the real part.
    pub fn cast(self, to: DType) -> Value {
        // A float (or the real part of a complex value) converts to an
        // integer type with Rust's `as`, which truncates toward zero,
        // saturates at the *target's* limits and maps NaN to 0, as
        // documented above (going through `i64` first would wrap `300.7` to
        // 44 in `int8` instead of saturating to 127). Integers wrap.
        let real = match self {
            Value::Float(f) => Some(f),
            Value::Complex(c) => Some(c.re),
            _ => None,
        };
        macro_rules! to_int {
            ($variant:ident, $t:ty, $wide:ty, $via:ident) => {
                Value::$variant(<$wide>::from(match real {
                    Some(f) => f as $t,
                    None => self.$via() as $t,
                }))
            };
        }
        match to {
            DType::Bool => Value::Bool(self.is_nonzero()),
            DType::Int8 => to_int!(Int, i8, i64, to_i64),
            DType::Int16 => to_int!(Int, i16, i64, to_i64),
            DType::Int32 => to_int!(Int, i32, i64, to_i64),
            DType::Int64 => to_int!(Int, i64, i64, to_i64),
            DType::UInt8 => to_int!(UInt, u8, u64, to_u64),
            DType::UInt16 => to_int!(UInt, u16, u64, to_u64),
            DType::UInt32 => to_int!(UInt, u32, u64, to_u64),
            DType::UInt64 => to_int!(UInt, u64, u64, to_u64),
            DType::Float32 => Value::Float(f64::from(self.to_f32())),
            DType::Float64 => Value::Float(self.to_f64()),
            DType::Complex64 => {
                let c = self.to_c64();
                let re = match self {
                    Value::Complex(_) => c.re as f32,
                    other => other.to_f32(),
                };
                Value::Complex(C64::new(f64::from(re), f64::from(c.im as f32)))
            }
            DType::Complex128 => Value::Complex(self.to_c64()),
        }
    }

    /// The value rounded once to single precision: an integer converts
    /// directly (through `f64` it would be rounded twice, and 2^60 + 2^36 + 1
    /// would become 2^60 instead of 2^60 + 2^37).
    fn to_f32(self) -> f32 {
        match self {
            Value::Int(i) => i as f32,
            Value::UInt(u) => u as f32,
            other => other.to_f64() as f32,
        }
    }

    /// Whether the value is not zero (`true` for `True`).
    pub fn is_nonzero(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::UInt(u) => u != 0,
            Value::Float(f) => f != 0.0,
            Value::Complex(c) => c.re != 0.0 || c.im != 0.0,
        }
    }

    /// The value as a signed 64-bit integer (floats truncate, unsigned wraps).
    pub fn to_i64(self) -> i64 {
        match self {
            Value::Bool(b) => i64::from(b),
            Value::Int(i) => i,
            Value::UInt(u) => u as i64,
            Value::Float(f) => f as i64,
            Value::Complex(c) => c.re as i64,
        }
    }

    /// The value as an unsigned 64-bit integer (negative integers wrap,
    /// floats truncate toward zero through a signed conversion, as C++ does
    /// for in-range values).
    pub fn to_u64(self) -> u64 {
        match self {
            Value::Bool(b) => u64::from(b),
            Value::Int(i) => i as u64,
            Value::UInt(u) => u,
            Value::Float(f) if f < 0.0 => (f as i64) as u64,
            Value::Float(f) => f as u64,
            Value::Complex(c) => Value::Float(c.re).to_u64(),
        }
    }

    /// The value as a double (complex values give their real part).
    pub fn to_f64(self) -> f64 {
        match self {
            Value::Bool(b) => f64::from(u8::from(b)),
            Value::Int(i) => i as f64,
            Value::UInt(u) => u as f64,
            Value::Float(f) => f,
            Value::Complex(c) => c.re,
        }
    }

    /// The value as a double-precision complex number.
    pub fn to_c64(self) -> C64 {
        match self {
            Value::Complex(c) => c,
            other => C64::new(other.to_f64(), 0.0),
        }
    }
}

/// The elements of one allocation, stored in the dtype's own representation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elements {
    /// `bool`
    Bool(Vec<bool>),
    /// `int8`
    I8(Vec<i8>),
    /// `int16`
    I16(Vec<i16>),
    /// `int32`
    I32(Vec<i32>),
    /// `int64`
    I64(Vec<i64>),
    /// `uint8`
    U8(Vec<u8>),
    /// `uint16`
    U16(Vec<u16>),
    /// `uint32`
    U32(Vec<u32>),
    /// `uint64`
    U64(Vec<u64>),
    /// `float32`
    F32(Vec<f32>),
    /// `float64`
    F64(Vec<f64>),
    /// `complex64`
    C64(Vec<Complex<f32>>),
    /// `complex128`
    C128(Vec<C64>),
}

macro_rules! for_each_variant {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            Elements::Bool($v) => $body,
            Elements::I8($v) => $body,
            Elements::I16($v) => $body,
            Elements::I32($v) => $body,
            Elements::I64($v) => $body,
            Elements::U8($v) => $body,
            Elements::U16($v) => $body,
            Elements::U32($v) => $body,
            Elements::U64($v) => $body,
            Elements::F32($v) => $body,
            Elements::F64($v) => $body,
            Elements::C64($v) => $body,
            Elements::C128($v) => $body,
        }
    };
}

impl Elements {
    /// `len` zeros of `dtype`, where the allocator gives the memory: an
    /// error where `len` elements overflow an allocation or the machine
    /// refuses them. Every length a program computes goes through this (a
    /// failed allocation would abort the process).
    pub fn try_zeros(
        dtype: DType,
        len: usize,
    ) -> Result<Elements, std::collections::TryReserveError> {
        fn filled<T: Clone>(
            zero: T,
            len: usize,
        ) -> Result<Vec<T>, std::collections::TryReserveError> {
            let mut v = Vec::new();
            v.try_reserve_exact(len)?;
            v.resize(len, zero);
            Ok(v)
        }
        Ok(match dtype {
            DType::Bool => Elements::Bool(filled(false, len)?),
            DType::Int8 => Elements::I8(filled(0, len)?),
            DType::Int16 => Elements::I16(filled(0, len)?),
            DType::Int32 => Elements::I32(filled(0, len)?),
            DType::Int64 => Elements::I64(filled(0, len)?),
            DType::UInt8 => Elements::U8(filled(0, len)?),
            DType::UInt16 => Elements::U16(filled(0, len)?),
            DType::UInt32 => Elements::U32(filled(0, len)?),
            DType::UInt64 => Elements::U64(filled(0, len)?),
            DType::Float32 => Elements::F32(filled(0.0, len)?),
            DType::Float64 => Elements::F64(filled(0.0, len)?),
            DType::Complex64 => Elements::C64(filled(Complex::new(0.0, 0.0), len)?),
            DType::Complex128 => Elements::C128(filled(C64::new(0.0, 0.0), len)?),
        })
    }

    /// `len` zeros of `dtype`, for a length the caller already holds in
    /// memory (a copy of existing elements); like `vec!`, it aborts where
    /// the allocation fails, so a length computed from a program's symbols
    /// takes [`Elements::try_zeros`].
    pub fn zeros(dtype: DType, len: usize) -> Elements {
        match dtype {
            DType::Bool => Elements::Bool(vec![false; len]),
            DType::Int8 => Elements::I8(vec![0; len]),
            DType::Int16 => Elements::I16(vec![0; len]),
            DType::Int32 => Elements::I32(vec![0; len]),
            DType::Int64 => Elements::I64(vec![0; len]),
            DType::UInt8 => Elements::U8(vec![0; len]),
            DType::UInt16 => Elements::U16(vec![0; len]),
            DType::UInt32 => Elements::U32(vec![0; len]),
            DType::UInt64 => Elements::U64(vec![0; len]),
            DType::Float32 => Elements::F32(vec![0.0; len]),
            DType::Float64 => Elements::F64(vec![0.0; len]),
            DType::Complex64 => Elements::C64(vec![Complex::new(0.0, 0.0); len]),
            DType::Complex128 => Elements::C128(vec![C64::new(0.0, 0.0); len]),
        }
    }

    /// The elements' dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Elements::Bool(_) => DType::Bool,
            Elements::I8(_) => DType::Int8,
            Elements::I16(_) => DType::Int16,
            Elements::I32(_) => DType::Int32,
            Elements::I64(_) => DType::Int64,
            Elements::U8(_) => DType::UInt8,
            Elements::U16(_) => DType::UInt16,
            Elements::U32(_) => DType::UInt32,
            Elements::U64(_) => DType::UInt64,
            Elements::F32(_) => DType::Float32,
            Elements::F64(_) => DType::Float64,
            Elements::C64(_) => DType::Complex64,
            Elements::C128(_) => DType::Complex128,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        for_each_variant!(self, v => v.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a value, `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Value> {
        Some(match self {
            Elements::Bool(v) => Value::Bool(*v.get(i)?),
            Elements::I8(v) => Value::Int(i64::from(*v.get(i)?)),
            Elements::I16(v) => Value::Int(i64::from(*v.get(i)?)),
            Elements::I32(v) => Value::Int(i64::from(*v.get(i)?)),
            Elements::I64(v) => Value::Int(*v.get(i)?),
            Elements::U8(v) => Value::UInt(u64::from(*v.get(i)?)),
            Elements::U16(v) => Value::UInt(u64::from(*v.get(i)?)),
            Elements::U32(v) => Value::UInt(u64::from(*v.get(i)?)),
            Elements::U64(v) => Value::UInt(*v.get(i)?),
            Elements::F32(v) => Value::Float(f64::from(*v.get(i)?)),
            Elements::F64(v) => Value::Float(*v.get(i)?),
            Elements::C64(v) => {
                let c = v.get(i)?;
                Value::Complex(C64::new(f64::from(c.re), f64::from(c.im)))
            }
            Elements::C128(v) => Value::Complex(*v.get(i)?),
        })
    }

    /// Stores `value` (converted to the elements' dtype) at `i`; `false` past the end.
    #[inline]
    pub fn set(&mut self, i: usize, value: Value) -> bool {
        // Fast paths for values already of the elements' family and width.
        match (&mut *self, value) {
            (Elements::F64(v), Value::Float(x)) => return v.get_mut(i).map(|s| *s = x).is_some(),
            (Elements::I64(v), Value::Int(x)) => return v.get_mut(i).map(|s| *s = x).is_some(),
            (Elements::C128(v), Value::Complex(x)) => {
                return v.get_mut(i).map(|s| *s = x).is_some();
            }
            _ => {}
        }
        let dtype = self.dtype();
        let value = value.cast(dtype);
        macro_rules! put {
            ($v:expr, $x:expr) => {
                match $v.get_mut(i) {
                    Some(slot) => {
                        *slot = $x;
                        true
                    }
                    None => false,
                }
            };
        }
        match self {
            Elements::Bool(v) => put!(v, value.is_nonzero()),
            Elements::I8(v) => put!(v, value.to_i64() as i8),
            Elements::I16(v) => put!(v, value.to_i64() as i16),
            Elements::I32(v) => put!(v, value.to_i64() as i32),
            Elements::I64(v) => put!(v, value.to_i64()),
            Elements::U8(v) => put!(v, value.to_u64() as u8),
            Elements::U16(v) => put!(v, value.to_u64() as u16),
            Elements::U32(v) => put!(v, value.to_u64() as u32),
            Elements::U64(v) => put!(v, value.to_u64()),
            Elements::F32(v) => put!(v, value.to_f64() as f32),
            Elements::F64(v) => put!(v, value.to_f64()),
            Elements::C64(v) => {
                let c = value.to_c64();
                put!(v, Complex::new(c.re as f32, c.im as f32))
            }
            Elements::C128(v) => put!(v, value.to_c64()),
        }
    }
}
