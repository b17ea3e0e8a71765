//! Reference semantics of library nodes.
//!
//! A library node ([`LibraryOp`]) stands for a coarse operation (a matrix
//! product, a reduction, a Cholesky factorization, ...) that later passes
//! expand into maps or vendor-library calls. The interpreter does not expand
//! it: it calls [`run`] here, which computes what NumPy (for `@`,
//! `np.transpose`, `np.linalg.*`, reductions) or BLAS (for GEMM and GEMV)
//! would. Every expansion and every generated kernel is checked against these
//! results, so the code favours being obviously right over being fast, while
//! staying linear in the work (plain loops, no allocation in inner loops).
//!
//! # Operands
//!
//! Operands are dense row-major [`Tensor`]s keyed by the operation's fixed
//! connector names ([`LibraryOp::in_connectors`], [`LibraryOp::out_connectors`]).
//! Outputs arrive already shaped by the caller from the output memlet, which
//! may have squeezed away size-1 dimensions or kept them; an output is
//! accepted when its shape equals the result's shape once all size-1
//! dimensions are dropped from both (row-major layout does not change when a
//! size-1 dimension is dropped, so the data is identical either way).
//! Vector operands of GEMV and DOT may likewise carry size-1 dimensions, as
//! may the right-hand side `_b` of Solve (`[n]`, `[n, 1]` and `[n, k]` are
//! told apart by their non-1 dimensions), and a square matrix of order 1 may
//! arrive as any one-element shape. Matrix operands of GEMM and GEMV must be
//! exactly 2-D, and MatMul operands keep NumPy's rank rules, because there
//! the rank decides the meaning. Input connectors that the operation does not have (a `_cin` of a GEMM
//! whose `beta` is zero, say) are ignored.
//!
//! # Types
//!
//! All operands of one operation must have the same dtype; a mismatch is
//! reported as [`LibraryError::Shape`] (the detail names both connectors and
//! their dtypes), because it is a malformed node rather than an operation
//! the type does not support. Arithmetic runs in the widest type of the
//! dtype's family (`f64`, `Complex<f64>`, wrapping `i64` or `u64`), and every
//! stored result is normalized with [`Value::cast`]: an `int8` product wraps
//! as in the generated C++, a `float32` result is rounded once, on store.
//! Consequently `float32` results can differ in the last bit from a BLAS that
//! accumulates in single precision; comparisons against device results must
//! use a tolerance anyway.
//!
//! | operation | bool | integers | floats, complex |
//! |---|---|---|---|
//! | MatMul, Gemm, Gemv, Dot, BatchedMatMul | no | yes (wrapping) | yes |
//! | Reduce | Min/Max only (as 0/1) | yes | yes |
//! | Transpose, TensorTranspose | yes | yes | yes |
//! | Cholesky, Solve | no | no | yes |
//!
//! Unsupported combinations give [`LibraryError::UnsupportedType`].
//!
//! # Failure
//!
//! [`run`] never panics on any input: shapes, element counts, axes and
//! dtypes are validated first and reported as [`LibraryError`]s naming the
//! operation and the connectors; the kernels then work on buffers whose sizes
//! the validation established. On error the outputs are left unchanged.

use crate::value::{C64, Value};
use sdfg_ir::{DType, LibraryOp, Literal, Wcr};
use std::collections::BTreeMap;

/// A dense row-major operand: `data.len() == shape.iter().product()`; shape `[]` is a scalar.
///
/// Library nodes work on whole arrays (or rectangular parts of them), so the
/// interpreter gathers each memlet's subset into a contiguous tensor before
/// [`run`] and scatters the output tensor back afterwards. Values are kept
/// normalized to `dtype` (see [`Value::cast`]); [`Tensor::from_values`]
/// enforces it, and [`run`] re-normalizes what it reads in case a caller
/// filled `data` directly.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Element type of every value in `data`.
    pub dtype: DType,
    /// Extent of each dimension, outermost first.
    pub shape: Vec<usize>,
    /// The elements in row-major order.
    pub data: Vec<Value>,
}

impl Tensor {
    /// A tensor of zeros (`False` for `bool`) of the given shape.
    ///
    /// This is how a caller shapes an output whose previous contents do not
    /// matter. The shape must describe an allocatable number of elements; an
    /// element count that overflows `usize` saturates and then fails to
    /// allocate, like any oversized `vec!`.
    pub fn new(dtype: DType, shape: Vec<usize>) -> Tensor {
        let len = shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d));
        Tensor {
            dtype,
            shape,
            data: vec![Value::zero(dtype); len],
        }
    }

    /// A tensor of the given values, normalized to `dtype`.
    ///
    /// Checks the one invariant the public fields cannot enforce: that the
    /// number of values matches the shape. A mismatch is a
    /// [`LibraryError::Shape`] with the operation name `"tensor"`.
    pub fn from_values(
        dtype: DType,
        shape: Vec<usize>,
        data: Vec<Value>,
    ) -> Result<Tensor, LibraryError> {
        match element_count(&shape) {
            Some(n) if n == data.len() => Ok(Tensor {
                dtype,
                shape,
                data: data.into_iter().map(|v| v.cast(dtype)).collect(),
            }),
            _ => Err(LibraryError::Shape {
                op: "tensor",
                detail: format!("{} values do not fill shape {:?}", data.len(), shape),
            }),
        }
    }

    /// A rank-0 tensor holding `value` normalized to `dtype`, the form a scalar
    /// container or a single-element memlet takes.
    pub fn scalar(dtype: DType, value: Value) -> Tensor {
        Tensor {
            dtype,
            shape: Vec::new(),
            data: vec![value.cast(dtype)],
        }
    }

    /// Number of elements (the length of `data`).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no elements (some dimension is 0).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of dimensions (0 for a scalar).
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The element at a multi-dimensional index, `None` when the index has
    /// the wrong rank or is out of bounds. Meant for tests and diagnostics;
    /// kernels walk `data` directly.
    pub fn get(&self, index: &[usize]) -> Option<Value> {
        if index.len() != self.shape.len() {
            return None;
        }
        let mut flat = 0usize;
        for (&i, &d) in index.iter().zip(&self.shape) {
            if i >= d {
                return None;
            }
            flat = flat.checked_mul(d)?.checked_add(i)?;
        }
        self.data.get(flat).copied()
    }
}

/// Why a library node could not run.
///
/// Every variant names the operation ([`LibraryOp::name`]) so that the
/// interpreter can report it next to the node's label; connector-specific
/// problems also name the connector(s), because the fix is usually in the
/// memlet attached to that connector.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum LibraryError {
    /// A connector the operation requires has no operand bound to it.
    #[error("{op}: no operand bound to connector `{conn}`")]
    MissingOperand {
        /// The operation.
        op: &'static str,
        /// The connector without an operand.
        conn: String,
    },
    /// Operand shapes (or dtypes, or an axis list) do not fit the operation.
    #[error("{op}: {detail}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// What does not fit, naming the connectors and their shapes.
        detail: String,
    },
    /// The operation is not defined on the operands' element type.
    #[error("{op}: element type {dtype} is not supported")]
    UnsupportedType {
        /// The operation.
        op: &'static str,
        /// The operands' element type.
        dtype: DType,
    },
    /// Cholesky: the matrix is not (numerically) positive definite.
    #[error(
        "{op}: `_a` is not positive definite (non-positive pivot in column {column}, counting from 0)"
    )]
    NotPositiveDefinite {
        /// The operation.
        op: &'static str,
        /// The first column (from 0) whose pivot is not positive.
        column: usize,
    },
    /// Solve: the matrix is exactly singular.
    #[error("{op}: `_a` is singular (zero pivot in column {column}, counting from 0)")]
    Singular {
        /// The operation.
        op: &'static str,
        /// The first column (from 0) without a non-zero pivot.
        column: usize,
    },
}

type Result<T, E = LibraryError> = std::result::Result<T, E>;

/// Calls a generic kernel with the wide type of a family. Booleans compute as
/// 0/1 in `i64` (only Min/Max reductions reach a kernel with them).
macro_rules! dispatch_num {
    ($fam:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $fam {
            Family::Bool | Family::Int => $f::<i64>($($arg),*),
            Family::UInt => $f::<u64>($($arg),*),
            Family::Float => $f::<f64>($($arg),*),
            Family::Complex => $f::<C64>($($arg),*),
        }
    };
}

/// Calls a generic kernel that needs division and square roots (floats and
/// complex only); other families are unsupported.
macro_rules! dispatch_field {
    ($fam:expr, $dtype:expr, $name:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $fam {
            Family::Float => $f::<f64>($($arg),*),
            Family::Complex => $f::<C64>($($arg),*),
            _ => Err(LibraryError::UnsupportedType { op: $name, dtype: $dtype }),
        }
    };
}

/// Runs `op`. `inputs` maps input connector names to operands; `outputs` maps
/// output connector names to operands that are already shaped (by the caller,
/// from the output memlet, with size-1 dimensions possibly squeezed away or
/// kept) and hold the current contents of the destination; `run` overwrites
/// them (or combines into them, see Reduce).
///
/// The caller keeps ownership of the buffers because it scatters them back
/// into containers after the call, and because a Reduce without identity must
/// see the destination's current contents. Semantics per operation:
///
/// - `MatMul`, `BatchedMatMul`: `numpy.matmul` by operand ranks (matrix,
///   matrix-vector, vector-matrix, dot, batched with broadcasting).
/// - `Gemm`: `_c = alpha*op(_a)@op(_b) + beta*_cin`; `_cin` is read only when
///   `beta` is not zero and may be any shape NumPy broadcasts to `_c`'s.
/// - `Gemv`: `_y = alpha*op(_a)@_x + beta*_y_in`.
/// - `Dot`: `_result = sum(_x*_y)` (no conjugation, 0 for length 0).
/// - `Reduce`: `_out = reduce(identity, _in)` over `axes`, or
///   `_out = op(_out, reduce(_in))` when there is no identity (DaCe's rule).
/// - `Transpose`: `_out = _in.T` (all axes reversed, NumPy's `.T`).
/// - `TensorTranspose`: `_out = np.transpose(_in, axes)`.
/// - `Cholesky`: lower factor `L` (`A = L L^H`, as `np.linalg.cholesky`) or
///   upper `U = L^H`; reads only the lower triangle of `_a`.
/// - `Solve`: `_x = np.linalg.solve(_a, _b)` for 1-D or 2-D `_b`, by LU with
///   partial pivoting (pivot of largest `|re| + |im|`, as LAPACK).
///
/// On error the outputs are unchanged.
pub fn run(
    op: &LibraryOp,
    inputs: &BTreeMap<String, Tensor>,
    outputs: &mut BTreeMap<String, Tensor>,
) -> Result<(), LibraryError> {
    let name = op.name();
    let dtype = validate_operands(op, inputs, outputs)?;
    check_type(op, dtype)?;
    let fam = family(dtype);
    match op {
        LibraryOp::MatMul | LibraryOp::BatchedMatMul => {
            let a = operand(name, inputs, "_a")?;
            let b = operand(name, inputs, "_b")?;
            let c = result(name, outputs, "_c")?;
            let plan = MatMulPlan::new(name, &a.shape, &b.shape)?;
            check_output(name, "_c", c, &plan.out_shape)?;
            dispatch_num!(fam, matmul_typed(name, &plan, a, b, c))
        }
        LibraryOp::Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
            ..
        } => {
            let connectors = op.in_connectors();
            let scale = |conn: &str| -> Result<Option<&Tensor>> {
                if connectors.contains(&conn) {
                    operand(name, inputs, conn).map(Some)
                } else {
                    Ok(None)
                }
            };
            let args = GemmArgs {
                alpha: *alpha,
                beta: *beta,
                trans_a: *trans_a,
                trans_b: *trans_b,
                read_cin: connectors.contains(&"_cin"),
                alpha_in: scale("_alpha")?,
                beta_in: scale("_beta")?,
            };
            let a = operand(name, inputs, "_a")?;
            let b = operand(name, inputs, "_b")?;
            let cin = if args.read_cin {
                Some(operand(name, inputs, "_cin")?)
            } else {
                None
            };
            let c = result(name, outputs, "_c")?;
            dispatch_num!(fam, gemm_typed(name, &args, a, b, cin, c))
        }
        LibraryOp::Gemv {
            alpha,
            beta,
            trans_a,
        } => {
            let a = operand(name, inputs, "_a")?;
            let x = operand(name, inputs, "_x")?;
            let y_in = if op.in_connectors().contains(&"_y_in") {
                Some(operand(name, inputs, "_y_in")?)
            } else {
                None
            };
            let y = result(name, outputs, "_y")?;
            dispatch_num!(
                fam,
                gemv_typed(name, *alpha, *beta, *trans_a, a, x, y_in, y)
            )
        }
        LibraryOp::Dot => {
            let x = operand(name, inputs, "_x")?;
            let y = operand(name, inputs, "_y")?;
            let r = result(name, outputs, "_result")?;
            dispatch_num!(fam, dot_typed(name, x, y, r))
        }
        LibraryOp::Reduce {
            op: wcr,
            axes,
            identity,
        } => {
            let input = operand(name, inputs, "_in")?;
            let out = result(name, outputs, "_out")?;
            let plan = ReducePlan::new(name, &input.shape, axes.as_deref(), out)?;
            dispatch_num!(
                fam,
                reduce_typed(&plan, *wcr, identity.as_ref(), input, out)
            )
        }
        LibraryOp::Transpose => {
            let input = operand(name, inputs, "_in")?;
            let out = result(name, outputs, "_out")?;
            let axes: Vec<usize> = (0..input.rank()).rev().collect();
            permute(name, &axes, input, out)
        }
        LibraryOp::TensorTranspose { axes } => {
            let input = operand(name, inputs, "_in")?;
            let out = result(name, outputs, "_out")?;
            permute(name, axes, input, out)
        }
        LibraryOp::Cholesky { lower } => {
            let a = operand(name, inputs, "_a")?;
            let b = result(name, outputs, "_b")?;
            let n = square_dim(name, "_a", &a.shape)?;
            check_output(name, "_b", b, &[n, n])?;
            dispatch_field!(fam, dtype, name, cholesky_typed(name, *lower, n, a, b))
        }
        LibraryOp::Solve => {
            let a = operand(name, inputs, "_a")?;
            let b = operand(name, inputs, "_b")?;
            let x = result(name, outputs, "_x")?;
            let n = square_dim(name, "_a", &a.shape)?;
            let cols = rhs_columns(name, n, &a.shape, &b.shape)?;
            check_output(name, "_x", x, &b.shape)?;
            dispatch_field!(fam, dtype, name, solve_typed(name, n, cols, a, b, x))
        }
    }
}

// ---------------------------------------------------------------------------
// Arithmetic families
// ---------------------------------------------------------------------------

/// The family of a dtype, which selects the wide type arithmetic runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Bool,
    Int,
    UInt,
    Float,
    Complex,
}

fn family(dtype: DType) -> Family {
    if dtype == DType::Bool {
        Family::Bool
    } else if dtype.is_signed_integer() {
        Family::Int
    } else if dtype.is_unsigned_integer() {
        Family::UInt
    } else if dtype.is_float() {
        Family::Float
    } else {
        Family::Complex
    }
}

/// Arithmetic of a family's wide type. Integers wrap (C++ semantics after
/// normalization); floats follow IEEE; complex numbers use `num-complex`.
trait Num: Copy + PartialEq {
    fn zero() -> Self;
    /// The value as this wide type (the value is already normalized).
    fn load(v: Value) -> Self;
    /// The wide value as a runtime value, to be normalized with `cast`.
    fn store(self) -> Value;
    fn plus(self, o: Self) -> Self;
    fn times(self, o: Self) -> Self;
    /// NumPy's `minimum`: NaN propagates; complex numbers order lexicographically.
    fn minimum(self, o: Self) -> Self;
    /// NumPy's `maximum`: NaN propagates; complex numbers order lexicographically.
    fn maximum(self, o: Self) -> Self;
    /// The bitwise combinations, of integers (booleans are 0 and 1).
    /// Floats and complex numbers have no bits: [`check_type`] refuses a
    /// bitwise reduction of them before one reaches these.
    fn bit_and(self, _o: Self) -> Self {
        self
    }
    fn bit_or(self, _o: Self) -> Self {
        self
    }
    fn bit_xor(self, _o: Self) -> Self {
        self
    }
}

/// Integers: wrapping arithmetic and plain order.
macro_rules! integer_num {
    ($t:ty, $to:ident, $variant:ident) => {
        impl Num for $t {
            fn zero() -> Self {
                0
            }
            fn load(v: Value) -> Self {
                v.$to()
            }
            fn store(self) -> Value {
                Value::$variant(self)
            }
            fn plus(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn bit_and(self, o: Self) -> Self {
                self & o
            }
            fn bit_or(self, o: Self) -> Self {
                self | o
            }
            fn bit_xor(self, o: Self) -> Self {
                self ^ o
            }
            fn times(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn minimum(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            fn maximum(self, o: Self) -> Self {
                Ord::max(self, o)
            }
        }
    };
}

integer_num!(i64, to_i64, Int);
integer_num!(u64, to_u64, UInt);

impl Num for f64 {
    fn zero() -> Self {
        0.0
    }
    fn load(v: Value) -> Self {
        v.to_f64()
    }
    fn store(self) -> Value {
        Value::Float(self)
    }
    fn plus(self, o: Self) -> Self {
        self + o
    }
    fn times(self, o: Self) -> Self {
        self * o
    }
    fn minimum(self, o: Self) -> Self {
        crate::arith::min_f(self, o)
    }
    fn maximum(self, o: Self) -> Self {
        crate::arith::max_f(self, o)
    }
}

fn complex_is_nan(c: C64) -> bool {
    c.re.is_nan() || c.im.is_nan()
}

/// Lexicographic `a < b` on (re, im), NumPy's order for complex numbers.
fn complex_less(a: C64, b: C64) -> bool {
    a.re < b.re || (a.re == b.re && a.im < b.im)
}

impl Num for C64 {
    fn zero() -> Self {
        C64::new(0.0, 0.0)
    }
    fn load(v: Value) -> Self {
        v.to_c64()
    }
    fn store(self) -> Value {
        Value::Complex(self)
    }
    fn plus(self, o: Self) -> Self {
        self + o
    }
    fn times(self, o: Self) -> Self {
        self * o
    }
    fn minimum(self, o: Self) -> Self {
        if complex_is_nan(self) {
            self
        } else if complex_is_nan(o) || complex_less(o, self) {
            o
        } else {
            self
        }
    }
    fn maximum(self, o: Self) -> Self {
        if complex_is_nan(self) {
            self
        } else if complex_is_nan(o) || complex_less(self, o) {
            o
        } else {
            self
        }
    }
}

/// The extra arithmetic of factorizations: floats and complex numbers.
trait Field: Num {
    fn minus(self, o: Self) -> Self;
    fn over(self, o: Self) -> Self;
    fn conj(self) -> Self;
    fn real(self) -> f64;
    fn from_real(x: f64) -> Self;
    /// Pivot magnitude: `|x|` for reals, `|re| + |im|` for complex (LAPACK's `i?amax`).
    fn magnitude(self) -> f64;
}

impl Field for f64 {
    fn minus(self, o: Self) -> Self {
        self - o
    }
    fn over(self, o: Self) -> Self {
        self / o
    }
    fn conj(self) -> Self {
        self
    }
    fn real(self) -> f64 {
        self
    }
    fn from_real(x: f64) -> Self {
        x
    }
    fn magnitude(self) -> f64 {
        self.abs()
    }
}

impl Field for C64 {
    fn minus(self, o: Self) -> Self {
        self - o
    }
    fn over(self, o: Self) -> Self {
        self / o
    }
    fn conj(self) -> Self {
        C64::conj(&self)
    }
    fn real(self) -> f64 {
        self.re
    }
    fn from_real(x: f64) -> Self {
        C64::new(x, 0.0)
    }
    fn magnitude(self) -> f64 {
        self.re.abs() + self.im.abs()
    }
}

fn combiner<W: Num>(wcr: Wcr) -> fn(W, W) -> W {
    match wcr {
        Wcr::Sum => W::plus,
        Wcr::Product => W::times,
        Wcr::Min => W::minimum,
        Wcr::Max => W::maximum,
        Wcr::BitAnd => W::bit_and,
        Wcr::BitOr => W::bit_or,
        Wcr::BitXor => W::bit_xor,
    }
}

/// Converts a tensor's values to the wide type, normalizing each first in
/// case the caller filled `data` with values of another family.
fn load<W: Num>(t: &Tensor) -> Vec<W> {
    t.data.iter().map(|v| W::load(v.cast(t.dtype))).collect()
}

/// A literal (alpha, beta, identity) as the wide type, after casting it to the
/// operands' dtype as the generated code would.
fn load_literal<W: Num>(lit: &Literal, dtype: DType) -> W {
    W::load(Value::from_literal(lit).cast(dtype))
}

/// Writes wide results into `out`, normalized to its dtype. The caller has
/// checked that the counts agree.
fn store<W: Num>(out: &mut Tensor, vals: &[W]) {
    let dtype = out.dtype;
    for (slot, w) in out.data.iter_mut().zip(vals) {
        *slot = w.store().cast(dtype);
    }
}

// ---------------------------------------------------------------------------
// Validation helpers
// ---------------------------------------------------------------------------

/// Product of the dimensions, `None` on overflow. Any 0 makes it 0, however
/// large the other dimensions (an empty slice of a huge array is fine).
fn element_count(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Row-major strides of a shape (saturating; only used on non-empty tensors,
/// whose strides cannot overflow).
fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    let mut acc = 1usize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d);
    }
    strides
}

/// Whether two shapes agree once all size-1 dimensions are dropped.
fn squeeze_equal(a: &[usize], b: &[usize]) -> bool {
    a.iter()
        .filter(|&&d| d != 1)
        .eq(b.iter().filter(|&&d| d != 1))
}

fn shape_err(op: &'static str, detail: String) -> LibraryError {
    LibraryError::Shape { op, detail }
}

/// An offset computed from validated shapes fell outside a buffer. Cannot
/// happen after validation; reported instead of panicking.
fn internal(op: &'static str) -> LibraryError {
    shape_err(op, "internal error: operand offset out of range".to_owned())
}

/// Checks that every connector of `op` has an operand, that every operand's
/// data fills its shape, and that all operands share one dtype, which it returns.
fn validate_operands(
    op: &LibraryOp,
    inputs: &BTreeMap<String, Tensor>,
    outputs: &BTreeMap<String, Tensor>,
) -> Result<DType> {
    let name = op.name();
    let mut first: Option<(&str, DType)> = None;
    let ins = op.in_connectors().into_iter().map(|c| (c, inputs.get(c)));
    let outs = op.out_connectors().into_iter().map(|c| (c, outputs.get(c)));
    for (conn, t) in ins.chain(outs) {
        let t = t.ok_or_else(|| LibraryError::MissingOperand {
            op: name,
            conn: conn.to_owned(),
        })?;
        if element_count(&t.shape) != Some(t.data.len()) {
            return Err(shape_err(
                name,
                format!(
                    "`{conn}` has {} elements, which do not fill its shape {:?}",
                    t.data.len(),
                    t.shape
                ),
            ));
        }
        match first {
            None => first = Some((conn, t.dtype)),
            Some((c0, d0)) if d0 != t.dtype => {
                return Err(shape_err(
                    name,
                    format!(
                        "operands have different dtypes: `{c0}` is {d0} but `{conn}` is {}",
                        t.dtype
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    // Every operation has at least one connector, so `first` is set.
    first
        .map(|(_, d)| d)
        .ok_or_else(|| shape_err(name, "operation without operands".to_owned()))
}

/// Rejects dtypes the operation is not defined on (see the module table).
fn check_type(op: &LibraryOp, dtype: DType) -> Result<()> {
    let ok = match op {
        LibraryOp::MatMul
        | LibraryOp::BatchedMatMul
        | LibraryOp::Gemm { .. }
        | LibraryOp::Gemv { .. }
        | LibraryOp::Dot => dtype.is_numeric(),
        LibraryOp::Reduce { op: wcr, .. } => match wcr {
            Wcr::BitAnd | Wcr::BitOr | Wcr::BitXor => dtype.is_integer() || dtype == DType::Bool,
            Wcr::Min | Wcr::Max => true,
            Wcr::Sum | Wcr::Product => dtype.is_numeric(),
        },
        LibraryOp::Transpose | LibraryOp::TensorTranspose { .. } => true,
        LibraryOp::Cholesky { .. } | LibraryOp::Solve => dtype.is_float() || dtype.is_complex(),
    };
    if ok {
        Ok(())
    } else {
        Err(LibraryError::UnsupportedType {
            op: op.name(),
            dtype,
        })
    }
}

fn operand<'a>(
    op: &'static str,
    inputs: &'a BTreeMap<String, Tensor>,
    conn: &str,
) -> Result<&'a Tensor> {
    inputs
        .get(conn)
        .ok_or_else(|| LibraryError::MissingOperand {
            op,
            conn: conn.to_owned(),
        })
}

fn result<'a>(
    op: &'static str,
    outputs: &'a mut BTreeMap<String, Tensor>,
    conn: &str,
) -> Result<&'a mut Tensor> {
    outputs
        .get_mut(conn)
        .ok_or_else(|| LibraryError::MissingOperand {
            op,
            conn: conn.to_owned(),
        })
}

/// Checks that an output holds exactly the result's elements (up to size-1 dimensions).
fn check_output(op: &'static str, conn: &str, out: &Tensor, expected: &[usize]) -> Result<()> {
    if squeeze_equal(&out.shape, expected) {
        Ok(())
    } else {
        Err(shape_err(
            op,
            format!(
                "`{conn}` has shape {:?} but the result has shape {:?}",
                out.shape, expected
            ),
        ))
    }
}

/// Length of a vector operand: any shape with at most one dimension larger than 1.
fn vector_len(op: &'static str, conn: &str, t: &Tensor) -> Result<usize> {
    if t.shape.iter().filter(|&&d| d != 1).count() <= 1 {
        Ok(t.len())
    } else {
        Err(shape_err(
            op,
            format!("`{conn}` must be a vector but has shape {:?}", t.shape),
        ))
    }
}

/// Rows and columns of a matrix operand, which must be 2-D.
fn matrix_dims(op: &'static str, conn: &str, shape: &[usize]) -> Result<(usize, usize)> {
    match *shape {
        [r, c] => Ok((r, c)),
        _ => Err(shape_err(
            op,
            format!("`{conn}` must be a matrix (2-D) but has shape {shape:?}"),
        )),
    }
}

/// Order of a square matrix operand: `[n, n]`, or any shape of one element (1x1).
fn square_dim(op: &'static str, conn: &str, shape: &[usize]) -> Result<usize> {
    match *shape {
        [r, c] if r == c => Ok(r),
        _ if shape.iter().all(|&d| d == 1) => Ok(1),
        _ => Err(shape_err(
            op,
            format!("`{conn}` must be a square matrix but has shape {shape:?}"),
        )),
    }
}

/// NumPy broadcasting of an operand of shape `src` to `target`: strides into
/// the operand, 0 along broadcast dimensions. An operand equal to the target
/// up to size-1 dimensions is accepted as is (a squeezed memlet).
fn broadcast_strides(
    op: &'static str,
    conn: &str,
    src: &[usize],
    target: &[usize],
) -> Result<Vec<usize>> {
    if squeeze_equal(src, target) {
        return Ok(row_major_strides(target));
    }
    let err = || {
        shape_err(
            op,
            format!(
                "`{conn}` of shape {src:?} does not broadcast to the result's shape {target:?}"
            ),
        )
    };
    if src.len() > target.len() {
        return Err(err());
    }
    let src_strides = row_major_strides(src);
    let lead = target.len() - src.len();
    let mut strides = vec![0usize; target.len()];
    for ((s, &t), (&d, &st)) in strides
        .iter_mut()
        .skip(lead)
        .zip(target.iter().skip(lead))
        .zip(src.iter().zip(&src_strides))
    {
        if d == t {
            *s = st;
        } else if d != 1 {
            return Err(err());
        }
    }
    Ok(strides)
}

/// Walks a shape in row-major order while keeping `N` linear offsets, each
/// advancing by its own per-dimension stride (0 for broadcast or reduced
/// dimensions). Wrapping arithmetic: offsets are only used through checked
/// slice accesses, so an impossible overflow cannot panic.
struct Odometer<const N: usize> {
    shape: Vec<usize>,
    strides: Vec<[usize; N]>,
    index: Vec<usize>,
    offset: [usize; N],
}

impl<const N: usize> Odometer<N> {
    fn new(shape: &[usize], strides: Vec<[usize; N]>) -> Self {
        Odometer {
            shape: shape.to_vec(),
            strides,
            index: vec![0; shape.len()],
            offset: [0; N],
        }
    }

    fn advance(&mut self) {
        for ((i, &extent), stride) in self
            .index
            .iter_mut()
            .zip(&self.shape)
            .zip(&self.strides)
            .rev()
        {
            *i += 1;
            for (o, &s) in self.offset.iter_mut().zip(stride) {
                *o = o.wrapping_add(s);
            }
            if *i < extent {
                return;
            }
            for (o, &s) in self.offset.iter_mut().zip(stride) {
                *o = o.wrapping_sub(s.wrapping_mul(extent));
            }
            *i = 0;
        }
    }
}

// ---------------------------------------------------------------------------
// Matrix products
// ---------------------------------------------------------------------------

/// `c += a @ b` for row-major `a` (m x k), `b` (k x n) and `c` (m x n), with
/// `m` implied by the slice lengths. Each `c[i][j]` accumulates over `p` in
/// ascending order, as a textbook dot product.
fn mat_mul_acc<W: Num>(a: &[W], b: &[W], c: &mut [W], k: usize, n: usize) {
    if k == 0 || n == 0 {
        return;
    }
    for (a_row, c_row) in a.chunks_exact(k).zip(c.chunks_exact_mut(n)) {
        for (&x, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (cj, &y) in c_row.iter_mut().zip(b_row) {
                *cj = cj.plus(x.times(y));
            }
        }
    }
}

/// The transpose of a row-major `rows x cols` matrix.
fn transposed<W: Num>(x: &[W], rows: usize, cols: usize) -> Vec<W> {
    let mut t = vec![W::zero(); x.len()];
    if rows == 0 || cols == 0 {
        return t;
    }
    for (i, row) in x.chunks_exact(cols).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if let Some(slot) = t.get_mut(j * rows + i) {
                *slot = v;
            }
        }
    }
    t
}

/// Shapes of a `numpy.matmul`: 1-D operands are promoted (`[k]` to `[1, k]`
/// on the left, `[k, 1]` on the right) and the promoted dimension is dropped
/// from the result; dimensions before the last two broadcast.
struct MatMulPlan {
    batch: Vec<usize>,
    /// Per batch dimension: offsets (in elements) into `_a` and `_b`.
    batch_strides: Vec<[usize; 2]>,
    m: usize,
    k: usize,
    n: usize,
    out_shape: Vec<usize>,
    out_len: usize,
}

impl MatMulPlan {
    fn new(op: &'static str, a: &[usize], b: &[usize]) -> Result<MatMulPlan> {
        let scalar_err = || {
            shape_err(
                op,
                format!(
                    "operands must have at least one dimension, `_a` has shape {a:?} and `_b` {b:?}"
                ),
            )
        };
        let (a_batch, m, ka): (&[usize], usize, usize) = match a {
            [] => return Err(scalar_err()),
            [k] => (&[], 1, *k),
            [batch @ .., m, k] => (batch, *m, *k),
        };
        let (b_batch, kb, n): (&[usize], usize, usize) = match b {
            [] => return Err(scalar_err()),
            [k] => (&[], *k, 1),
            [batch @ .., k, n] => (batch, *k, *n),
        };
        if ka != kb {
            return Err(shape_err(
                op,
                format!(
                    "`_a` of shape {a:?} and `_b` of shape {b:?} disagree on the contracted dimension ({ka} vs {kb})"
                ),
            ));
        }
        let rank = a_batch.len().max(b_batch.len());
        let a_strides = row_major_strides(a_batch);
        let b_strides = row_major_strides(b_batch);
        let mk = m.saturating_mul(ka);
        let kn = kb.saturating_mul(n);
        let mut batch = Vec::with_capacity(rank);
        let mut batch_strides = Vec::with_capacity(rank);
        for d in 0..rank {
            // Dimension `d` of the broadcast batch, aligned at the right.
            let pick = |dims: &[usize], strides: &[usize]| -> (usize, usize) {
                let lead = rank - dims.len();
                match d.checked_sub(lead) {
                    Some(i) => (
                        dims.get(i).copied().unwrap_or(1),
                        strides.get(i).copied().unwrap_or(0),
                    ),
                    None => (1, 0),
                }
            };
            let (da, sa) = pick(a_batch, &a_strides);
            let (db, sb) = pick(b_batch, &b_strides);
            let extent = if da == db || db == 1 {
                da
            } else if da == 1 {
                db
            } else {
                return Err(shape_err(
                    op,
                    format!(
                        "batch dimensions of `_a` (shape {a:?}) and `_b` (shape {b:?}) do not broadcast"
                    ),
                ));
            };
            let sa = if da == 1 { 0 } else { sa.saturating_mul(mk) };
            let sb = if db == 1 { 0 } else { sb.saturating_mul(kn) };
            batch.push(extent);
            batch_strides.push([sa, sb]);
        }
        let mut out_shape = batch.clone();
        if a.len() >= 2 {
            out_shape.push(m);
        }
        if b.len() >= 2 {
            out_shape.push(n);
        }
        let out_len = element_count(&out_shape).ok_or_else(|| {
            shape_err(
                op,
                format!("the result of shape {out_shape:?} has too many elements"),
            )
        })?;
        Ok(MatMulPlan {
            batch,
            batch_strides,
            m,
            k: ka,
            n,
            out_shape,
            out_len,
        })
    }

    fn compute<W: Num>(&self, op: &'static str, a: &[W], b: &[W]) -> Result<Vec<W>> {
        let mut c = vec![W::zero(); self.out_len];
        let (m, k, n) = (self.m, self.k, self.n);
        let mn = m.saturating_mul(n);
        if self.out_len == 0 || k == 0 || mn == 0 {
            return Ok(c);
        }
        // Non-empty result and k > 0: both operands are non-empty, so these
        // products are bounded by their lengths.
        let mk = m.saturating_mul(k);
        let kn = k.saturating_mul(n);
        let mut odo = Odometer::new(&self.batch, self.batch_strides.clone());
        for c_mat in c.chunks_exact_mut(mn) {
            let [ao, bo] = odo.offset;
            let a_mat = a
                .get(ao..ao.saturating_add(mk))
                .ok_or_else(|| internal(op))?;
            let b_mat = b
                .get(bo..bo.saturating_add(kn))
                .ok_or_else(|| internal(op))?;
            mat_mul_acc(a_mat, b_mat, c_mat, k, n);
            odo.advance();
        }
        Ok(c)
    }
}

fn matmul_typed<W: Num>(
    op: &'static str,
    plan: &MatMulPlan,
    a: &Tensor,
    b: &Tensor,
    c: &mut Tensor,
) -> Result<()> {
    let vals = plan.compute(op, &load::<W>(a), &load::<W>(b))?;
    store(c, &vals);
    Ok(())
}

/// The scalars and flags of a GEMM.
struct GemmArgs<'a> {
    alpha: Literal,
    beta: Literal,
    trans_a: bool,
    trans_b: bool,
    /// Whether `_cin` exists (beta is not zero).
    read_cin: bool,
    /// The scalar `alpha` is multiplied by (`_alpha`), if any.
    alpha_in: Option<&'a Tensor>,
    /// The scalar `beta` is multiplied by (`_beta`), if any.
    beta_in: Option<&'a Tensor>,
}

/// A GEMM's scale: its literal, times the scalar of its connector if it
/// has one (a one-element operand).
fn gemm_scale<W: Num>(
    op: &'static str,
    conn: &str,
    literal: &Literal,
    input: Option<&Tensor>,
    dtype: DType,
) -> Result<W> {
    let l: W = load_literal(literal, dtype);
    let Some(t) = input else { return Ok(l) };
    match load::<W>(t).as_slice() {
        [v] => Ok(l.times(*v)),
        _ => Err(shape_err(
            op,
            format!(
                "the scale `{conn}` has shape {:?}, not one element",
                t.shape
            ),
        )),
    }
}

fn gemm_typed<W: Num>(
    op: &'static str,
    args: &GemmArgs<'_>,
    a: &Tensor,
    b: &Tensor,
    cin: Option<&Tensor>,
    c: &mut Tensor,
) -> Result<()> {
    let (ar, ac) = matrix_dims(op, "_a", &a.shape)?;
    let (br, bc) = matrix_dims(op, "_b", &b.shape)?;
    let (m, ka) = if args.trans_a { (ac, ar) } else { (ar, ac) };
    let (kb, n) = if args.trans_b { (bc, br) } else { (br, bc) };
    if ka != kb {
        return Err(shape_err(
            op,
            format!(
                "op(`_a`) of shape [{m}, {ka}] (from {:?}) and op(`_b`) of shape [{kb}, {n}] (from {:?}) disagree on the contracted dimension",
                a.shape, b.shape
            ),
        ));
    }
    let out_shape = [m, n];
    check_output(op, "_c", c, &out_shape)?;
    let cin_strides = match (args.read_cin, cin) {
        (true, Some(t)) => Some((broadcast_strides(op, "_cin", &t.shape, &out_shape)?, t)),
        _ => None,
    };

    let dtype = c.dtype;
    let mut av = load::<W>(a);
    if args.trans_a {
        av = transposed(&av, ar, ac);
    }
    let mut bv = load::<W>(b);
    if args.trans_b {
        bv = transposed(&bv, br, bc);
    }
    let mut prod = vec![W::zero(); c.len()];
    let alpha: W = gemm_scale(op, "_alpha", &args.alpha, args.alpha_in, dtype)?;
    let beta: W = gemm_scale(op, "_beta", &args.beta, args.beta_in, dtype)?;
    // A scale of the run that is zero does not read what it scales, as
    // BLAS defines it (see `LibraryOp::Gemm`).
    if args.alpha_in.is_none() || alpha != W::zero() {
        mat_mul_acc(&av, &bv, &mut prod, ka, n);
    }
    let cin_strides = cin_strides.filter(|_| args.beta_in.is_none() || beta != W::zero());
    match cin_strides {
        Some((strides, t)) => {
            let cv = load::<W>(t);
            let mut odo = Odometer::new(&out_shape, strides.into_iter().map(|s| [s]).collect());
            for p in &mut prod {
                let ci = *cv.get(odo.offset[0]).ok_or_else(|| internal(op))?;
                *p = alpha.times(*p).plus(beta.times(ci));
                odo.advance();
            }
        }
        None => {
            for p in &mut prod {
                *p = alpha.times(*p);
            }
        }
    }
    store(c, &prod);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn gemv_typed<W: Num>(
    op: &'static str,
    alpha: Literal,
    beta: Literal,
    trans_a: bool,
    a: &Tensor,
    x: &Tensor,
    y_in: Option<&Tensor>,
    y: &mut Tensor,
) -> Result<()> {
    let (r, c) = matrix_dims(op, "_a", &a.shape)?;
    let (rows, cols) = if trans_a { (c, r) } else { (r, c) };
    let xn = vector_len(op, "_x", x)?;
    if xn != cols {
        return Err(shape_err(
            op,
            format!(
                "op(`_a`) has {cols} columns (shape {:?}, trans_a = {trans_a}) but `_x` has {xn} elements (shape {:?})",
                a.shape, x.shape
            ),
        ));
    }
    if vector_len(op, "_y", y)? != rows {
        return Err(shape_err(
            op,
            format!(
                "`_y` has shape {:?} but op(`_a`) has {rows} rows (shape {:?}, trans_a = {trans_a})",
                y.shape, a.shape
            ),
        ));
    }
    if let Some(t) = y_in
        && vector_len(op, "_y_in", t)? != rows
    {
        return Err(shape_err(
            op,
            format!(
                "`_y_in` has shape {:?} but op(`_a`) has {rows} rows (shape {:?}, trans_a = {trans_a})",
                t.shape, a.shape
            ),
        ));
    }
    let dtype = y.dtype;
    let av = load::<W>(a);
    let xv = load::<W>(x);
    let mut prod = vec![W::zero(); rows];
    if trans_a {
        // y[j] = sum_i x[i] * a[i][j]: the row vector x (1 x r) times a (r x c).
        mat_mul_acc(&xv, &av, &mut prod, r, c);
    } else {
        // y[i] = sum_j a[i][j] * x[j]: a (r x c) times the column x (c x 1).
        mat_mul_acc(&av, &xv, &mut prod, c, 1);
    }
    let alpha: W = load_literal(&alpha, dtype);
    match y_in {
        Some(t) => {
            let beta: W = load_literal(&beta, dtype);
            for (p, yi) in prod.iter_mut().zip(load::<W>(t)) {
                *p = alpha.times(*p).plus(beta.times(yi));
            }
        }
        None => {
            for p in &mut prod {
                *p = alpha.times(*p);
            }
        }
    }
    store(y, &prod);
    Ok(())
}

fn dot_typed<W: Num>(op: &'static str, x: &Tensor, y: &Tensor, r: &mut Tensor) -> Result<()> {
    let xn = vector_len(op, "_x", x)?;
    let yn = vector_len(op, "_y", y)?;
    if xn != yn {
        return Err(shape_err(
            op,
            format!(
                "`_x` of shape {:?} and `_y` of shape {:?} differ in length",
                x.shape, y.shape
            ),
        ));
    }
    check_output(op, "_result", r, &[])?;
    let sum = x
        .data
        .iter()
        .zip(&y.data)
        .fold(W::zero(), |acc, (&xi, &yi)| {
            acc.plus(W::load(xi.cast(x.dtype)).times(W::load(yi.cast(y.dtype))))
        });
    store(r, &[sum]);
    Ok(())
}

// ---------------------------------------------------------------------------
// Reduction
// ---------------------------------------------------------------------------

/// Where each input element of a reduction goes.
struct ReducePlan {
    in_shape: Vec<usize>,
    /// Per input dimension: stride in the output (0 for reduced dimensions).
    out_strides: Vec<usize>,
    out_len: usize,
}

impl ReducePlan {
    fn new(
        op: &'static str,
        in_shape: &[usize],
        axes: Option<&[usize]>,
        out: &Tensor,
    ) -> Result<ReducePlan> {
        let rank = in_shape.len();
        let mut reduced = vec![axes.is_none(); rank];
        for &ax in axes.unwrap_or(&[]) {
            match reduced.get_mut(ax) {
                Some(r) if !*r => *r = true,
                Some(_) => {
                    return Err(shape_err(
                        op,
                        format!("axis {ax} is listed twice in axes {axes:?}"),
                    ));
                }
                None => {
                    return Err(shape_err(
                        op,
                        format!("axis {ax} is out of range for `_in` of shape {in_shape:?}"),
                    ));
                }
            }
        }
        let kept: Vec<usize> = in_shape
            .iter()
            .zip(&reduced)
            .filter(|&(_, &r)| !r)
            .map(|(&d, _)| d)
            .collect();
        let out_len = element_count(&kept);
        if out_len != Some(out.len()) {
            return Err(shape_err(
                op,
                format!(
                    "`_out` has {} elements (shape {:?}) but reducing `_in` of shape {in_shape:?} over axes {} leaves shape {kept:?}",
                    out.len(),
                    out.shape,
                    match axes {
                        Some(a) => format!("{a:?}"),
                        None => "all".to_owned(),
                    }
                ),
            ));
        }
        let kept_strides = row_major_strides(&kept);
        let mut kept_iter = kept_strides.into_iter();
        let out_strides = reduced
            .iter()
            .map(|&r| if r { 0 } else { kept_iter.next().unwrap_or(0) })
            .collect();
        Ok(ReducePlan {
            in_shape: in_shape.to_vec(),
            out_strides,
            out_len: out.len(),
        })
    }
}

fn reduce_typed<W: Num>(
    plan: &ReducePlan,
    wcr: Wcr,
    identity: Option<&Literal>,
    input: &Tensor,
    out: &mut Tensor,
) -> Result<()> {
    let f = combiner::<W>(wcr);
    let init: Option<W> = identity.map(|lit| load_literal(lit, out.dtype));
    let mut acc: Vec<Option<W>> = vec![init; plan.out_len];
    if !input.is_empty() {
        let mut odo = Odometer::new(
            &plan.in_shape,
            plan.out_strides.iter().map(|&s| [s]).collect(),
        );
        for v in &input.data {
            let x = W::load(v.cast(input.dtype));
            if let Some(slot) = acc.get_mut(odo.offset[0]) {
                *slot = Some(match *slot {
                    Some(a) => f(a, x),
                    None => x,
                });
            }
            odo.advance();
        }
    }
    let dtype = out.dtype;
    for (slot, r) in out.data.iter_mut().zip(acc) {
        match (init, r) {
            // With an identity the accumulator already started from it.
            (Some(_), Some(r)) => *slot = r.store().cast(dtype),
            // Without one, DaCe combines the reduction into the destination.
            (None, Some(r)) => *slot = f(W::load(slot.cast(dtype)), r).store().cast(dtype),
            // Empty reduction without identity: the destination is unchanged.
            (_, None) => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Transposition
// ---------------------------------------------------------------------------

/// `_out = np.transpose(_in, axes)`: output dimension `k` is input dimension `axes[k]`.
fn permute(op: &'static str, axes: &[usize], input: &Tensor, out: &mut Tensor) -> Result<()> {
    let rank = input.rank();
    let mut seen = vec![false; rank];
    let valid = axes.len() == rank
        && axes.iter().all(|&ax| match seen.get_mut(ax) {
            Some(s) if !*s => {
                *s = true;
                true
            }
            _ => false,
        });
    if !valid {
        return Err(shape_err(
            op,
            format!(
                "axes {axes:?} are not a permutation of the {rank} dimensions of `_in` (shape {:?})",
                input.shape
            ),
        ));
    }
    let in_strides = row_major_strides(&input.shape);
    let mut out_shape = Vec::with_capacity(rank);
    let mut strides = Vec::with_capacity(rank);
    for &ax in axes {
        out_shape.push(input.shape.get(ax).copied().unwrap_or(1));
        strides.push([in_strides.get(ax).copied().unwrap_or(0)]);
    }
    check_output(op, "_out", out, &out_shape)?;
    let dtype = out.dtype;
    let mut odo = Odometer::new(&out_shape, strides);
    for slot in &mut out.data {
        let v = *input.data.get(odo.offset[0]).ok_or_else(|| internal(op))?;
        *slot = v.cast(dtype);
        odo.advance();
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Factorizations
// ---------------------------------------------------------------------------

/// Cholesky–Crout, column by column, reading only the lower triangle of `_a`
/// (as LAPACK's `potrf` with `uplo = 'L'`, which NumPy calls). The diagonal's
/// imaginary part is ignored, as LAPACK assumes a Hermitian input.
fn cholesky_typed<W: Field>(
    op: &'static str,
    lower: bool,
    n: usize,
    a: &Tensor,
    b: &mut Tensor,
) -> Result<()> {
    let av = load::<W>(a);
    // `av` has n*n elements (validated), so every `i * n + k` below with
    // i, k < n is in bounds.
    let mut l = vec![W::zero(); av.len()];
    for j in 0..n {
        let mut d = av[j * n + j];
        for k in 0..j {
            let x = l[j * n + k];
            d = d.minus(x.times(x.conj()));
        }
        let d = d.real();
        if d.is_nan() || d <= 0.0 {
            return Err(LibraryError::NotPositiveDefinite { op, column: j });
        }
        let djj = W::from_real(d.sqrt());
        l[j * n + j] = djj;
        for i in j + 1..n {
            let mut s = av[i * n + j];
            for k in 0..j {
                s = s.minus(l[i * n + k].times(l[j * n + k].conj()));
            }
            l[i * n + j] = s.over(djj);
        }
    }
    if !lower {
        // U = L^H.
        l = transposed(&l, n, n).into_iter().map(W::conj).collect();
    }
    store(b, &l);
    Ok(())
}

/// Number of right-hand sides of a solve: `_b` is `[n]` (one) or `[n, k]`
/// (k), possibly with size-1 dimensions squeezed away or added.
fn rhs_columns(op: &'static str, n: usize, a: &[usize], b: &[usize]) -> Result<usize> {
    let squeezed: Vec<usize> = b.iter().copied().filter(|&d| d != 1).collect();
    let cols = if n == 1 {
        // `[1]`, `[1, k]` and their squeezed forms: every element is a column.
        (squeezed.len() <= 1).then(|| element_count(b).unwrap_or(0))
    } else {
        match *squeezed.as_slice() {
            [r] if r == n => Some(1),
            [r, k] if r == n => Some(k),
            _ => None,
        }
    };
    cols.ok_or_else(|| {
        shape_err(
            op,
            format!(
                "`_b` of shape {b:?} does not fit `_a` of shape {a:?} (expected [{n}] or [{n}, k])"
            ),
        )
    })
}

/// Gaussian elimination with partial pivoting (LU as LAPACK's `getrf`,
/// applied to the right-hand sides as it goes), then back substitution.
fn solve_typed<W: Field>(
    op: &'static str,
    n: usize,
    cols: usize,
    a: &Tensor,
    b: &Tensor,
    x: &mut Tensor,
) -> Result<()> {
    let mut av = load::<W>(a);
    let mut bv = load::<W>(b);
    // Validation established av.len() == n*n and bv.len() == n*cols, so every
    // index below (row < n, column < n or < cols) is in bounds.
    if n.checked_mul(n) != Some(av.len()) || n.checked_mul(cols) != Some(bv.len()) {
        return Err(internal(op));
    }
    for j in 0..n {
        let mut p = j;
        let mut best = av[j * n + j].magnitude();
        for i in j + 1..n {
            let m = av[i * n + j].magnitude();
            if m > best {
                best = m;
                p = i;
            }
        }
        if av[p * n + j] == W::zero() {
            return Err(LibraryError::Singular { op, column: j });
        }
        if p != j {
            for k in 0..n {
                av.swap(j * n + k, p * n + k);
            }
            for k in 0..cols {
                bv.swap(j * cols + k, p * cols + k);
            }
        }
        let pivot = av[j * n + j];
        for i in j + 1..n {
            let f = av[i * n + j].over(pivot);
            av[i * n + j] = W::zero();
            for k in j + 1..n {
                av[i * n + k] = av[i * n + k].minus(f.times(av[j * n + k]));
            }
            for k in 0..cols {
                bv[i * cols + k] = bv[i * cols + k].minus(f.times(bv[j * cols + k]));
            }
        }
    }
    for j in (0..n).rev() {
        let d = av[j * n + j];
        for k in 0..cols {
            let mut s = bv[j * cols + k];
            for i in j + 1..n {
                s = s.minus(av[j * n + i].times(bv[i * cols + k]));
            }
            bv[j * cols + k] = s.over(d);
        }
    }
    store(x, &bv);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // ----- helpers -----------------------------------------------------------

    fn tf(dtype: DType, shape: &[usize], vals: &[f64]) -> Tensor {
        Tensor::from_values(
            dtype,
            shape.to_vec(),
            vals.iter().map(|&v| Value::Float(v)).collect(),
        )
        .unwrap()
    }

    fn t64(shape: &[usize], vals: &[f64]) -> Tensor {
        tf(DType::Float64, shape, vals)
    }

    fn ti(dtype: DType, shape: &[usize], vals: &[i64]) -> Tensor {
        Tensor::from_values(
            dtype,
            shape.to_vec(),
            vals.iter().map(|&v| Value::Int(v)).collect(),
        )
        .unwrap()
    }

    fn tc(shape: &[usize], vals: &[(f64, f64)]) -> Tensor {
        Tensor::from_values(
            DType::Complex128,
            shape.to_vec(),
            vals.iter()
                .map(|&(re, im)| Value::Complex(C64::new(re, im)))
                .collect(),
        )
        .unwrap()
    }

    fn tb(shape: &[usize], vals: &[bool]) -> Tensor {
        Tensor::from_values(
            DType::Bool,
            shape.to_vec(),
            vals.iter().map(|&v| Value::Bool(v)).collect(),
        )
        .unwrap()
    }

    /// Runs `op` with the given inputs and one output, returning the output.
    fn run1(
        op: &LibraryOp,
        ins: Vec<(&str, Tensor)>,
        out_conn: &str,
        out: Tensor,
    ) -> Result<Tensor, LibraryError> {
        let inputs: BTreeMap<String, Tensor> =
            ins.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let mut outputs = BTreeMap::from([(out_conn.to_owned(), out)]);
        run(op, &inputs, &mut outputs)?;
        Ok(outputs.remove(out_conn).unwrap())
    }

    fn floats(t: &Tensor) -> Vec<f64> {
        t.data
            .iter()
            .map(|v| match *v {
                Value::Float(f) => f,
                other => panic!("expected a float, got {other:?}"),
            })
            .collect()
    }

    fn ints(t: &Tensor) -> Vec<i64> {
        t.data
            .iter()
            .map(|v| match *v {
                Value::Int(i) => i,
                other => panic!("expected a signed integer, got {other:?}"),
            })
            .collect()
    }

    fn complexes(t: &Tensor) -> Vec<C64> {
        t.data
            .iter()
            .map(|v| match *v {
                Value::Complex(c) => c,
                other => panic!("expected a complex, got {other:?}"),
            })
            .collect()
    }

    fn assert_close(actual: &[f64], expected: &[f64], tol: f64) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() <= tol, "{actual:?} vs {expected:?}");
        }
    }

    fn assert_close_c(actual: &[C64], expected: &[(f64, f64)], tol: f64) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, &(re, im)) in actual.iter().zip(expected) {
            assert!(
                (a.re - re).abs() <= tol && (a.im - im).abs() <= tol,
                "{actual:?} vs {expected:?}"
            );
        }
    }

    fn gemm(alpha: f64, beta: f64, trans_a: bool, trans_b: bool) -> LibraryOp {
        LibraryOp::Gemm {
            alpha: Literal::f64(alpha),
            beta: Literal::f64(beta),
            trans_a,
            trans_b,
            alpha_input: false,
            beta_input: false,
        }
    }

    fn reduce(op: Wcr, axes: Option<Vec<usize>>, identity: Option<Literal>) -> LibraryOp {
        LibraryOp::Reduce { op, axes, identity }
    }

    /// Naive numpy.matmul of row-major f64 arrays for the batched tests:
    /// `a` is `[ba.., m, k]`, `b` is `[bb.., k, n]`, batch shapes broadcast.
    fn naive_batched(
        a: &[f64],
        a_batch: &[usize],
        b: &[f64],
        b_batch: &[usize],
        (m, k, n): (usize, usize, usize),
        out_batch: &[usize],
    ) -> Vec<f64> {
        let count: usize = out_batch.iter().product();
        let mut out = Vec::new();
        for flat in 0..count {
            // Unravel the output batch index, then map it into each operand.
            let mut idx = vec![0; out_batch.len()];
            let mut rest = flat;
            for d in (0..out_batch.len()).rev() {
                idx[d] = rest % out_batch[d];
                rest /= out_batch[d];
            }
            let ravel = |shape: &[usize]| {
                let lead = out_batch.len() - shape.len();
                let mut f = 0;
                for (d, &s) in shape.iter().enumerate() {
                    let i = if s == 1 { 0 } else { idx[lead + d] };
                    f = f * s + i;
                }
                f
            };
            let (ao, bo) = (ravel(a_batch) * m * k, ravel(b_batch) * k * n);
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0;
                    for p in 0..k {
                        s += a[ao + i * k + p] * b[bo + p * n + j];
                    }
                    out.push(s);
                }
            }
        }
        out
    }

    // ----- Tensor ------------------------------------------------------------

    #[test]
    fn tensor_constructors() {
        let z = Tensor::new(DType::Int8, vec![2, 3]);
        assert_eq!(z.len(), 6);
        assert_eq!(z.rank(), 2);
        assert!(z.data.iter().all(|v| *v == Value::Int(0)));
        assert!(Tensor::new(DType::Float64, vec![0, 4]).is_empty());
        let s = Tensor::scalar(DType::Int8, Value::Int(300));
        assert_eq!(s.shape, Vec::<usize>::new());
        assert_eq!(s.data, vec![Value::Int(44)]);
        // from_values normalizes.
        let t = tf(DType::Float32, &[2], &[0.1, 1.0]);
        assert_eq!(t.data[0], Value::Float(f64::from(0.1f32)));
        assert_eq!(t.get(&[1]), Some(Value::Float(1.0)));
        assert_eq!(t.get(&[2]), None);
        assert_eq!(t.get(&[0, 0]), None);
        let m = t64(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(m.get(&[1, 2]), Some(Value::Float(6.0)));
        let err = Tensor::from_values(DType::Float64, vec![2, 2], vec![Value::Float(1.0)]);
        assert!(matches!(err, Err(LibraryError::Shape { op: "tensor", .. })));
    }

    // ----- MatMul ------------------------------------------------------------

    #[test]
    fn matmul_matrix_matrix() {
        let a = t64(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = t64(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", a), ("_b", b)],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![58.0, 64.0, 139.0, 154.0]);
    }

    #[test]
    fn matmul_matrix_vector_and_vector_matrix() {
        let a = t64(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let v = t64(&[2], &[5.0, 6.0]);
        // Output shaped [2] or, keeping the size-1 dim, [2, 1].
        for out_shape in [vec![2], vec![2, 1]] {
            let c = run1(
                &LibraryOp::MatMul,
                vec![("_a", a.clone()), ("_b", v.clone())],
                "_c",
                Tensor::new(DType::Float64, out_shape),
            )
            .unwrap();
            assert_eq!(floats(&c), vec![17.0, 39.0]);
        }
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", v), ("_b", a)],
            "_c",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![23.0, 34.0]);
    }

    #[test]
    fn matmul_vector_vector_is_a_dot() {
        for out_shape in [vec![], vec![1]] {
            let c = run1(
                &LibraryOp::MatMul,
                vec![
                    ("_a", t64(&[3], &[1.0, 2.0, 3.0])),
                    ("_b", t64(&[3], &[4.0, 5.0, 6.0])),
                ],
                "_c",
                Tensor::new(DType::Float64, out_shape),
            )
            .unwrap();
            assert_eq!(floats(&c), vec![32.0]);
        }
    }

    #[test]
    fn matmul_batched_with_broadcasting() {
        // [2, 2, 2] @ [2, 2]: batch 0 is the identity, batch 1 [[1,2],[3,4]].
        let a = t64(&[2, 2, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 4.0]);
        let b = t64(&[2, 2], &[5.0, 6.0, 7.0, 8.0]);
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", a.clone()), ("_b", b)],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![5.0, 6.0, 7.0, 8.0, 19.0, 22.0, 43.0, 50.0]);
        // [2, 2, 2] @ [2] -> [2, 2].
        let c = run1(
            &LibraryOp::BatchedMatMul,
            vec![("_a", a), ("_b", t64(&[2], &[1.0, 1.0]))],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![1.0, 1.0, 3.0, 7.0]);

        // Both sides broadcast: [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2].
        let av: Vec<f64> = (0..12).map(|i| f64::from(i) - 5.0).collect();
        let bv: Vec<f64> = (0..18).map(|i| f64::from(i * i % 7) - 3.0).collect();
        let expected = naive_batched(&av, &[2, 1], &bv, &[3], (2, 3, 2), &[2, 3]);
        for op in [LibraryOp::MatMul, LibraryOp::BatchedMatMul] {
            let c = run1(
                &op,
                vec![
                    ("_a", t64(&[2, 1, 2, 3], &av)),
                    ("_b", t64(&[3, 3, 2], &bv)),
                ],
                "_c",
                Tensor::new(DType::Float64, vec![2, 3, 2, 2]),
            )
            .unwrap();
            assert_eq!(floats(&c), expected);
        }
    }

    #[test]
    fn matmul_integers_wrap() {
        let c = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", ti(DType::Int8, &[1, 2], &[100, 1])),
                ("_b", ti(DType::Int8, &[2, 1], &[2, 3])),
            ],
            "_c",
            Tensor::new(DType::Int8, vec![1, 1]),
        )
        .unwrap();
        // 200 + 3 = 203 wraps to 203 - 256.
        assert_eq!(ints(&c), vec![-53]);

        let u = |v: &[u64]| {
            Tensor::from_values(
                DType::UInt8,
                vec![v.len()],
                v.iter().map(|&x| Value::UInt(x)).collect(),
            )
            .unwrap()
        };
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", u(&[200, 1])), ("_b", u(&[2, 255]))],
            "_c",
            Tensor::new(DType::UInt8, vec![]),
        )
        .unwrap();
        assert_eq!(c.data, vec![Value::UInt((400 + 255) % 256)]);

        let c = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", ti(DType::Int32, &[2, 2], &[1, -2, 3, 4])),
                ("_b", ti(DType::Int32, &[2, 2], &[5, 6, 7, -8])),
            ],
            "_c",
            Tensor::new(DType::Int32, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(ints(&c), vec![-9, 22, 43, -14]);
    }

    #[test]
    fn matmul_float32_rounds_on_store() {
        let (a0, a1, b0, b1) = (0.1f32, 0.2f32, 0.3f32, 0.7f32);
        let exact = f64::from(a0) * f64::from(b0) + f64::from(a1) * f64::from(b1);
        let c = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", tf(DType::Float32, &[2], &[0.1, 0.2])),
                ("_b", tf(DType::Float32, &[2], &[0.3, 0.7])),
            ],
            "_c",
            Tensor::new(DType::Float32, vec![]),
        )
        .unwrap();
        let got = floats(&c)[0];
        assert_eq!(got, f64::from(exact as f32));
        assert_ne!(got, exact, "the f64 result is not representable in f32");
    }

    #[test]
    fn matmul_complex() {
        let a = tc(&[2, 2], &[(1.0, 1.0), (2.0, 0.0), (0.0, 0.0), (0.0, 1.0)]);
        let b = tc(&[2, 2], &[(1.0, 0.0), (0.0, -1.0), (2.0, 0.0), (1.0, 0.0)]);
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", a), ("_b", b)],
            "_c",
            Tensor::new(DType::Complex128, vec![2, 2]),
        )
        .unwrap();
        assert_close_c(
            &complexes(&c),
            &[(5.0, 1.0), (3.0, -1.0), (0.0, 2.0), (0.0, 1.0)],
            0.0,
        );
    }

    #[test]
    fn matmul_shape_errors() {
        let cases = [
            (vec![2, 3], vec![2, 3], vec![2, 3]),
            (vec![], vec![3], vec![3]),
            (vec![2, 2, 2], vec![3, 2, 2], vec![3, 2, 2]),
            (vec![2, 3], vec![3, 2], vec![3, 3]),
        ];
        for (sa, sb, sc) in cases {
            let na: usize = sa.iter().product();
            let nb: usize = sb.iter().product();
            let err = run1(
                &LibraryOp::MatMul,
                vec![
                    ("_a", t64(&sa, &vec![1.0; na])),
                    ("_b", t64(&sb, &vec![1.0; nb])),
                ],
                "_c",
                Tensor::new(DType::Float64, sc),
            )
            .unwrap_err();
            assert!(
                matches!(err, LibraryError::Shape { op: "matmul", .. }),
                "{err:?}"
            );
        }
        let err = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", t64(&[2, 3], &[0.0; 6])),
                ("_b", t64(&[2, 3], &[0.0; 6])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 3]),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("`_a`") && msg.contains("`_b`") && msg.contains("[2, 3]"),
            "{msg}"
        );
    }

    #[test]
    fn matmul_empty_contraction_gives_zeros() {
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", t64(&[2, 0], &[])), ("_b", t64(&[0, 2], &[]))],
            "_c",
            t64(&[2, 2], &[9.0; 4]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![0.0; 4]);
    }

    // ----- Gemm / Gemv / Dot -------------------------------------------------

    #[test]
    fn gemm_with_transposes_and_accumulation() {
        // op(A) = [[1,2],[3,4]] stored transposed; op(B) = [[5,6],[7,8]] stored transposed.
        let a = t64(&[2, 2], &[1.0, 3.0, 2.0, 4.0]);
        let b = t64(&[2, 2], &[5.0, 7.0, 6.0, 8.0]);
        // op(A) @ op(B) = [[19, 22], [43, 50]].
        let c = run1(
            &gemm(2.0, 3.0, true, true),
            vec![
                ("_a", a.clone()),
                ("_b", b.clone()),
                ("_cin", t64(&[2, 2], &[1.0; 4])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![41.0, 47.0, 89.0, 103.0]);
        // `_cin` broadcast as a row [1, 2].
        let c = run1(
            &gemm(2.0, 3.0, true, true),
            vec![
                ("_a", a.clone()),
                ("_b", b.clone()),
                ("_cin", t64(&[2], &[1.0, 2.0])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![41.0, 50.0, 89.0, 106.0]);
        // beta = 0: no `_cin`, and the output's old contents do not matter.
        let c = run1(
            &gemm(1.0, 0.0, false, false),
            vec![("_a", a), ("_b", b)],
            "_c",
            t64(&[2, 2], &[f64::NAN; 4]),
        )
        .unwrap();
        // [[1,3],[2,4]] @ [[5,7],[6,8]]
        assert_eq!(floats(&c), vec![23.0, 31.0, 34.0, 46.0]);
    }

    #[test]
    fn gemm_scales_read_through_connectors_multiply_the_literals() {
        let op = LibraryOp::Gemm {
            alpha: Literal::f64(2.0),
            beta: Literal::f64(1.0),
            trans_a: false,
            trans_b: false,
            alpha_input: true,
            beta_input: true,
        };
        let a = t64(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let b = t64(&[2, 2], &[5.0, 6.0, 7.0, 8.0]);
        // 2 * 1.5 * [[19, 22], [43, 50]] + 10 * [[1, 1], [1, 1]].
        let c = run1(
            &op,
            vec![
                ("_a", a.clone()),
                ("_b", b.clone()),
                ("_cin", t64(&[2, 2], &[1.0; 4])),
                ("_alpha", t64(&[], &[1.5])),
                ("_beta", t64(&[], &[10.0])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![67.0, 76.0, 139.0, 160.0]);
        // A zero scale of the run reads nothing it scales (BLAS): NaNs in
        // `_cin` stay out of the result.
        let c = run1(
            &op,
            vec![
                ("_a", a.clone()),
                ("_b", b.clone()),
                ("_cin", t64(&[2, 2], &[f64::NAN; 4])),
                ("_alpha", t64(&[], &[1.0])),
                ("_beta", t64(&[], &[0.0])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap();
        assert_eq!(floats(&c), vec![38.0, 44.0, 86.0, 100.0]);
        // A scale of more than one element is an error naming it.
        let e = run1(
            &op,
            vec![
                ("_a", a),
                ("_b", b),
                ("_cin", t64(&[2, 2], &[1.0; 4])),
                ("_alpha", t64(&[2], &[1.0, 2.0])),
                ("_beta", t64(&[], &[10.0])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`_alpha`"), "{e}");
    }
    #[test]
    fn gemm_rectangular_and_integer() {
        // A^T with A [3, 2]: op(A) is 2x3; B [3, 1].
        let a = ti(DType::Int64, &[3, 2], &[1, 4, 2, 5, 3, 6]);
        let b = ti(DType::Int64, &[3, 1], &[1, 0, -1]);
        let op = LibraryOp::Gemm {
            alpha: Literal::i64(-2),
            beta: Literal::i64(0),
            trans_a: true,
            trans_b: false,
            alpha_input: false,
            beta_input: false,
        };
        let c = run1(
            &op,
            vec![("_a", a), ("_b", b)],
            "_c",
            Tensor::new(DType::Int64, vec![2]),
        )
        .unwrap();
        // [[1,2,3],[4,5,6]] @ [1,0,-1] = [-2, -2]; times -2.
        assert_eq!(ints(&c), vec![4, 4]);
    }

    #[test]
    fn gemm_errors() {
        let err = run1(
            &gemm(1.0, 1.0, false, false),
            vec![
                ("_a", t64(&[2, 2], &[0.0; 4])),
                ("_b", t64(&[2, 2], &[0.0; 4])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::MissingOperand {
                op: "gemm",
                conn: "_cin".to_owned()
            }
        );
        let err = run1(
            &gemm(1.0, 0.0, true, false),
            vec![
                ("_a", t64(&[2, 3], &[0.0; 6])),
                ("_b", t64(&[2, 2], &[0.0; 4])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![3, 3]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "gemm", .. }),
            "{err:?}"
        );
        let err = run1(
            &gemm(1.0, 1.0, false, false),
            vec![
                ("_a", t64(&[2, 2], &[0.0; 4])),
                ("_b", t64(&[2, 2], &[0.0; 4])),
                ("_cin", t64(&[3], &[0.0; 3])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("`_cin`"), "{err}");
        let err = run1(
            &gemm(1.0, 0.0, false, false),
            vec![
                ("_a", t64(&[4], &[0.0; 4])),
                ("_b", t64(&[2, 2], &[0.0; 4])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("matrix"), "{err}");
    }

    #[test]
    fn gemv_plain_transposed_and_accumulating() {
        let a = t64(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let x = t64(&[2], &[1.0, 1.0]);
        let gemv = |alpha: f64, beta: f64, trans_a: bool| LibraryOp::Gemv {
            alpha: Literal::f64(alpha),
            beta: Literal::f64(beta),
            trans_a,
        };
        let y = run1(
            &gemv(1.0, 0.0, false),
            vec![("_a", a.clone()), ("_x", x.clone())],
            "_y",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&y), vec![3.0, 7.0]);
        let y = run1(
            &gemv(1.0, 0.0, true),
            vec![("_a", a.clone()), ("_x", t64(&[2, 1], &[1.0, 1.0]))],
            "_y",
            Tensor::new(DType::Float64, vec![1, 2]),
        )
        .unwrap();
        assert_eq!(floats(&y), vec![4.0, 6.0]);
        let y = run1(
            &gemv(3.0, 2.0, false),
            vec![
                ("_a", a.clone()),
                ("_x", x.clone()),
                ("_y_in", t64(&[2], &[1.0, -1.0])),
            ],
            "_y",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&y), vec![11.0, 19.0]);
        // Non-square with transposition: A [3, 2], op(A) = A^T is 2x3.
        let y = run1(
            &gemv(1.0, 0.0, true),
            vec![
                ("_a", t64(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
                ("_x", t64(&[3], &[1.0, 0.0, -1.0])),
            ],
            "_y",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&y), vec![-4.0, -4.0]);
        let err = run1(
            &gemv(1.0, 0.0, false),
            vec![("_a", a), ("_x", t64(&[3], &[0.0; 3]))],
            "_y",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "gemv", .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("`_x`"), "{err}");
    }

    #[test]
    fn dot_products() {
        let r = run1(
            &LibraryOp::Dot,
            vec![
                ("_x", t64(&[3], &[1.0, 2.0, 3.0])),
                ("_y", t64(&[3], &[4.0, 5.0, 6.0])),
            ],
            "_result",
            Tensor::new(DType::Float64, vec![1]),
        )
        .unwrap();
        assert_eq!(floats(&r), vec![32.0]);
        let r = run1(
            &LibraryOp::Dot,
            vec![("_x", t64(&[0], &[])), ("_y", t64(&[0], &[]))],
            "_result",
            t64(&[], &[7.0]),
        )
        .unwrap();
        assert_eq!(floats(&r), vec![0.0]);
        // Complex: no conjugation (numpy.dot, not vdot).
        let r = run1(
            &LibraryOp::Dot,
            vec![
                ("_x", tc(&[2], &[(0.0, 1.0), (1.0, 0.0)])),
                ("_y", tc(&[2], &[(0.0, 1.0), (2.0, 3.0)])),
            ],
            "_result",
            Tensor::new(DType::Complex128, vec![]),
        )
        .unwrap();
        assert_close_c(&complexes(&r), &[(1.0, 3.0)], 0.0);
        let r = run1(
            &LibraryOp::Dot,
            vec![
                ("_x", ti(DType::Int16, &[2], &[200, 100])),
                ("_y", ti(DType::Int16, &[2], &[200, 1])),
            ],
            "_result",
            Tensor::new(DType::Int16, vec![]),
        )
        .unwrap();
        assert_eq!(ints(&r), vec![i64::from((40_100i32) as i16)]);
        let err = run1(
            &LibraryOp::Dot,
            vec![("_x", t64(&[2], &[0.0; 2])), ("_y", t64(&[3], &[0.0; 3]))],
            "_result",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "dot", .. }),
            "{err:?}"
        );
    }

    // ----- Reduce ------------------------------------------------------------

    fn m23() -> Tensor {
        t64(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    }

    #[test]
    fn reduce_sum_over_axes_with_identity() {
        let zero = Some(Literal::f64(0.0));
        let cases = [
            (Some(vec![1]), vec![2], vec![6.0, 15.0]),
            (Some(vec![1]), vec![2, 1], vec![6.0, 15.0]),
            (Some(vec![0]), vec![3], vec![5.0, 7.0, 9.0]),
            (Some(vec![0]), vec![1, 3], vec![5.0, 7.0, 9.0]),
            (None, vec![], vec![21.0]),
            (None, vec![1], vec![21.0]),
            (Some(vec![0, 1]), vec![1, 1], vec![21.0]),
            (Some(vec![]), vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        ];
        for (axes, out_shape, expected) in cases {
            let out = run1(
                &reduce(Wcr::Sum, axes.clone(), zero),
                vec![("_in", m23())],
                "_out",
                t64(&out_shape, &vec![100.0; expected.len()]),
            )
            .unwrap();
            assert_eq!(floats(&out), expected, "axes {axes:?}");
        }
        // A non-zero identity is the starting value.
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), Some(Literal::f64(10.0))),
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![16.0, 25.0]);
    }

    #[test]
    fn reduce_without_identity_combines_into_output() {
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), None),
            vec![("_in", m23())],
            "_out",
            t64(&[2], &[10.0, 20.0]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![16.0, 35.0]);
        let out = run1(
            &reduce(Wcr::Max, None, None),
            vec![("_in", m23())],
            "_out",
            t64(&[], &[4.5]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![6.0]);
        let out = run1(
            &reduce(Wcr::Max, None, None),
            vec![("_in", m23())],
            "_out",
            t64(&[], &[8.0]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![8.0]);
    }

    #[test]
    fn reduce_inner_axis_of_3d() {
        // in[i][j][k] = 100 i + 10 j + k, shape [2, 3, 2], reduce axis 1.
        let shape = [2usize, 3, 2];
        let mut vals = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..2 {
                    vals.push(f64::from(100 * i + 10 * j + k));
                }
            }
        }
        let mut expected = Vec::new();
        for i in 0..2 {
            for k in 0..2 {
                expected.push((0..3).map(|j| f64::from(100 * i + 10 * j + k)).sum::<f64>());
            }
        }
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), Some(Literal::f64(0.0))),
            vec![("_in", t64(&shape, &vals))],
            "_out",
            Tensor::new(DType::Float64, vec![2, 1, 2]),
        )
        .unwrap();
        assert_eq!(floats(&out), expected);
        // Outer and inner axes together: [3].
        let out = run1(
            &reduce(Wcr::Max, Some(vec![0, 2]), None),
            vec![("_in", t64(&shape, &vals))],
            "_out",
            t64(&[3], &[f64::NEG_INFINITY; 3]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![101.0, 111.0, 121.0]);
    }

    #[test]
    fn reduce_product_min_max() {
        let out = run1(
            &reduce(Wcr::Product, Some(vec![1]), Some(Literal::f64(1.0))),
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![6.0, 120.0]);
        let out = run1(
            &reduce(Wcr::Min, None, Some(Literal::f64(f64::INFINITY))),
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![1.0]);
        let out = run1(
            &reduce(
                Wcr::Max,
                Some(vec![0]),
                Some(Literal::f64(f64::NEG_INFINITY)),
            ),
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![3]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![4.0, 5.0, 6.0]);
        // NaN propagates, as in NumPy.
        let out = run1(
            &reduce(Wcr::Min, None, None),
            vec![("_in", t64(&[3], &[1.0, f64::NAN, 0.0]))],
            "_out",
            t64(&[], &[5.0]),
        )
        .unwrap();
        assert!(floats(&out)[0].is_nan());
        // Complex max is lexicographic.
        let out = run1(
            &reduce(Wcr::Max, None, None),
            vec![("_in", tc(&[3], &[(1.0, 5.0), (2.0, -1.0), (2.0, 0.5)]))],
            "_out",
            tc(&[], &[(-9.0, 0.0)]),
        )
        .unwrap();
        assert_close_c(&complexes(&out), &[(2.0, 0.5)], 0.0);
    }

    #[test]
    fn reduce_integers_and_bools() {
        let out = run1(
            &reduce(Wcr::Sum, None, Some(Literal::i32(0))),
            vec![("_in", ti(DType::Int8, &[3], &[100, 100, 100]))],
            "_out",
            Tensor::new(DType::Int8, vec![]),
        )
        .unwrap();
        assert_eq!(ints(&out), vec![i64::from(300i32 as i8)]);
        let out = run1(
            &reduce(Wcr::Min, Some(vec![1]), None),
            vec![("_in", ti(DType::Int32, &[2, 2], &[3, -7, 2, 9]))],
            "_out",
            ti(DType::Int32, &[2], &[0, 0]),
        )
        .unwrap();
        assert_eq!(ints(&out), vec![-7, 0]);
        let bools = tb(&[2, 2], &[false, true, false, false]);
        let out = run1(
            &reduce(Wcr::Max, Some(vec![1]), Some(Literal::Bool(false))),
            vec![("_in", bools.clone())],
            "_out",
            Tensor::new(DType::Bool, vec![2]),
        )
        .unwrap();
        assert_eq!(out.data, vec![Value::Bool(true), Value::Bool(false)]);
        let out = run1(
            &reduce(Wcr::Min, Some(vec![0]), Some(Literal::Bool(true))),
            vec![("_in", bools.clone())],
            "_out",
            Tensor::new(DType::Bool, vec![2]),
        )
        .unwrap();
        assert_eq!(out.data, vec![Value::Bool(false), Value::Bool(false)]);
        let err = run1(
            &reduce(Wcr::Sum, None, None),
            vec![("_in", bools)],
            "_out",
            Tensor::new(DType::Bool, vec![]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::UnsupportedType {
                op: "reduce",
                dtype: DType::Bool
            }
        );
    }

    #[test]
    fn reduce_empty() {
        let empty = t64(&[2, 0], &[]);
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), Some(Literal::f64(0.0))),
            vec![("_in", empty.clone())],
            "_out",
            t64(&[2], &[3.0, 4.0]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![0.0, 0.0]);
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), None),
            vec![("_in", empty.clone())],
            "_out",
            t64(&[2], &[3.0, 4.0]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![3.0, 4.0]);
        // Reducing over the non-empty axis leaves an empty output.
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![0]), None),
            vec![("_in", empty)],
            "_out",
            t64(&[0], &[]),
        )
        .unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn reduce_errors() {
        let err = run1(
            &reduce(Wcr::Sum, Some(vec![1]), None),
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![3]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "reduce", .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("`_out`"), "{err}");
        for axes in [vec![2], vec![1, 1]] {
            let err = run1(
                &reduce(Wcr::Sum, Some(axes), None),
                vec![("_in", m23())],
                "_out",
                Tensor::new(DType::Float64, vec![2]),
            )
            .unwrap_err();
            assert!(
                matches!(err, LibraryError::Shape { op: "reduce", .. }),
                "{err:?}"
            );
        }
    }

    // ----- Transpose ---------------------------------------------------------

    #[test]
    fn transpose_2d() {
        let out = run1(
            &LibraryOp::Transpose,
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![3, 2]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let out = run1(
            &LibraryOp::Transpose,
            vec![("_in", tb(&[1, 2], &[true, false]))],
            "_out",
            Tensor::new(DType::Bool, vec![2]),
        )
        .unwrap();
        assert_eq!(out.data, vec![Value::Bool(true), Value::Bool(false)]);
        let err = run1(
            &LibraryOp::Transpose,
            vec![("_in", m23())],
            "_out",
            Tensor::new(DType::Float64, vec![2, 3]),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                LibraryError::Shape {
                    op: "transpose",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn tensor_transpose_permutes_axes() {
        let shape = [2usize, 3, 4];
        let vals: Vec<i64> = (0..24).collect();
        let axes = vec![2, 0, 1];
        // out[k][i][j] = in[i][j][k].
        let mut expected = Vec::new();
        for k in 0..4 {
            for i in 0..2 {
                for j in 0..3 {
                    expected.push((i * 3 + j) * 4 + k);
                }
            }
        }
        let out = run1(
            &LibraryOp::TensorTranspose { axes },
            vec![("_in", ti(DType::Int16, &shape, &vals))],
            "_out",
            Tensor::new(DType::Int16, vec![4, 2, 3]),
        )
        .unwrap();
        assert_eq!(ints(&out), expected);
        for bad in [vec![0, 1], vec![0, 1, 1], vec![0, 1, 3]] {
            let err = run1(
                &LibraryOp::TensorTranspose { axes: bad },
                vec![("_in", ti(DType::Int16, &shape, &vals))],
                "_out",
                Tensor::new(DType::Int16, vec![4, 2, 3]),
            )
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    LibraryError::Shape {
                        op: "tensor_transpose",
                        ..
                    }
                ),
                "{err:?}"
            );
        }
    }

    // ----- Cholesky ----------------------------------------------------------

    #[test]
    fn cholesky_real_lower_and_upper() {
        // A = L L^T with L = [[2,0,0],[6,1,0],[-8,5,3]].
        let l = [2.0, 0.0, 0.0, 6.0, 1.0, 0.0, -8.0, 5.0, 3.0];
        let a = t64(
            &[3, 3],
            &[4.0, 12.0, -16.0, 12.0, 37.0, -43.0, -16.0, -43.0, 98.0],
        );
        let out = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", a.clone())],
            "_b",
            t64(&[3, 3], &[7.0; 9]),
        )
        .unwrap();
        assert_close(&floats(&out), &l, 1e-12);
        let out = run1(
            &LibraryOp::Cholesky { lower: false },
            vec![("_a", a)],
            "_b",
            t64(&[3, 3], &[7.0; 9]),
        )
        .unwrap();
        let u = [2.0, 6.0, -8.0, 0.0, 1.0, 5.0, 0.0, 0.0, 3.0];
        assert_close(&floats(&out), &u, 1e-12);
    }

    #[test]
    fn cholesky_complex_hermitian() {
        // L = [[2, 0], [1+i, 1]]; A = L L^H = [[4, 2-2i], [2+2i, 3]].
        let a = tc(&[2, 2], &[(4.0, 0.0), (2.0, -2.0), (2.0, 2.0), (3.0, 0.0)]);
        let out = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", a.clone())],
            "_b",
            Tensor::new(DType::Complex128, vec![2, 2]),
        )
        .unwrap();
        assert_close_c(
            &complexes(&out),
            &[(2.0, 0.0), (0.0, 0.0), (1.0, 1.0), (1.0, 0.0)],
            1e-12,
        );
        let out = run1(
            &LibraryOp::Cholesky { lower: false },
            vec![("_a", a)],
            "_b",
            Tensor::new(DType::Complex128, vec![2, 2]),
        )
        .unwrap();
        assert_close_c(
            &complexes(&out),
            &[(2.0, 0.0), (1.0, -1.0), (0.0, 0.0), (1.0, 0.0)],
            1e-12,
        );
    }

    #[test]
    fn cholesky_float32_rounds() {
        // [[2]] -> sqrt(2) rounded to f32.
        let out = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", tf(DType::Float32, &[1, 1], &[2.0]))],
            "_b",
            Tensor::new(DType::Float32, vec![]),
        )
        .unwrap();
        assert_eq!(floats(&out), vec![f64::from(2f32.sqrt())]);
    }

    #[test]
    fn cholesky_errors() {
        let err = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", t64(&[2, 2], &[1.0, 2.0, 2.0, 1.0]))],
            "_b",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::NotPositiveDefinite {
                op: "cholesky",
                column: 1
            }
        );
        let err = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", t64(&[2, 2], &[-1.0, 0.0, 0.0, 1.0]))],
            "_b",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::NotPositiveDefinite {
                op: "cholesky",
                column: 0
            }
        );
        let err = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", t64(&[2, 3], &[0.0; 6]))],
            "_b",
            Tensor::new(DType::Float64, vec![2, 2]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "cholesky", .. }),
            "{err:?}"
        );
        let err = run1(
            &LibraryOp::Cholesky { lower: true },
            vec![("_a", ti(DType::Int32, &[1, 1], &[4]))],
            "_b",
            Tensor::new(DType::Int32, vec![1, 1]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::UnsupportedType {
                op: "cholesky",
                dtype: DType::Int32
            }
        );
    }

    // ----- Solve -------------------------------------------------------------

    #[test]
    fn solve_with_pivoting() {
        // a[0][0] = 0 forces a row exchange. x = [1, 2, 3] gives b = [5, 4, 3].
        let a = t64(&[3, 3], &[0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]);
        let x = run1(
            &LibraryOp::Solve,
            vec![("_a", a.clone()), ("_b", t64(&[3], &[5.0, 4.0, 3.0]))],
            "_x",
            Tensor::new(DType::Float64, vec![3]),
        )
        .unwrap();
        assert_close(&floats(&x), &[1.0, 2.0, 3.0], 1e-12);
        // Two right-hand sides: columns x1 = [1, 2, 3], x2 = [-1, 0, 1].
        let x = run1(
            &LibraryOp::Solve,
            vec![
                ("_a", a),
                ("_b", t64(&[3, 2], &[5.0, 1.0, 4.0, 0.0, 3.0, -1.0])),
            ],
            "_x",
            Tensor::new(DType::Float64, vec![3, 2]),
        )
        .unwrap();
        assert_close(&floats(&x), &[1.0, -1.0, 2.0, 0.0, 3.0, 1.0], 1e-12);
        // A general system: [[2,1,1],[1,3,2],[1,0,0]] x = [7, 13, 1] for x = [1, 2, 3].
        let x = run1(
            &LibraryOp::Solve,
            vec![
                (
                    "_a",
                    t64(&[3, 3], &[2.0, 1.0, 1.0, 1.0, 3.0, 2.0, 1.0, 0.0, 0.0]),
                ),
                ("_b", t64(&[3, 1], &[7.0, 13.0, 1.0])),
            ],
            "_x",
            Tensor::new(DType::Float64, vec![3]),
        )
        .unwrap();
        assert_close(&floats(&x), &[1.0, 2.0, 3.0], 1e-12);
    }

    #[test]
    fn solve_complex() {
        // [[2, 1], [i, 1]] x = [2+i, 2i] for x = [1, i].
        let x = run1(
            &LibraryOp::Solve,
            vec![
                (
                    "_a",
                    tc(&[2, 2], &[(2.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 0.0)]),
                ),
                ("_b", tc(&[2], &[(2.0, 1.0), (0.0, 2.0)])),
            ],
            "_x",
            Tensor::new(DType::Complex128, vec![2]),
        )
        .unwrap();
        assert_close_c(&complexes(&x), &[(1.0, 0.0), (0.0, 1.0)], 1e-12);
    }

    #[test]
    fn solve_errors() {
        let err = run1(
            &LibraryOp::Solve,
            vec![
                ("_a", t64(&[2, 2], &[1.0, 2.0, 2.0, 4.0])),
                ("_b", t64(&[2], &[1.0, 1.0])),
            ],
            "_x",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::Singular {
                op: "solve",
                column: 1
            }
        );
        let err = run1(
            &LibraryOp::Solve,
            vec![
                ("_a", t64(&[2, 2], &[0.0, 1.0, 0.0, 2.0])),
                ("_b", t64(&[2], &[1.0, 1.0])),
            ],
            "_x",
            Tensor::new(DType::Float64, vec![2]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::Singular {
                op: "solve",
                column: 0
            }
        );
        let err = run1(
            &LibraryOp::Solve,
            vec![
                ("_a", t64(&[2, 2], &[1.0, 0.0, 0.0, 1.0])),
                ("_b", t64(&[3], &[1.0, 1.0, 1.0])),
            ],
            "_x",
            Tensor::new(DType::Float64, vec![3]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "solve", .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("`_b`"), "{err}");
    }

    // ----- Generic validation ------------------------------------------------

    #[test]
    fn missing_operands() {
        let err = run1(
            &LibraryOp::MatMul,
            vec![("_a", t64(&[2], &[1.0, 2.0]))],
            "_c",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::MissingOperand {
                op: "matmul",
                conn: "_b".to_owned()
            }
        );
        let err = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", t64(&[2], &[1.0, 2.0])),
                ("_b", t64(&[2], &[1.0, 2.0])),
            ],
            "_wrong",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::MissingOperand {
                op: "matmul",
                conn: "_c".to_owned()
            }
        );
    }

    #[test]
    fn mismatched_dtypes_and_inconsistent_tensors() {
        let err = run1(
            &LibraryOp::MatMul,
            vec![
                ("_a", t64(&[2], &[1.0, 2.0])),
                ("_b", tf(DType::Float32, &[2], &[1.0, 2.0])),
            ],
            "_c",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, LibraryError::Shape { op: "matmul", .. }),
            "{err:?}"
        );
        assert!(msg.contains("float32") && msg.contains("`_b`"), "{msg}");
        // A tensor whose data does not fill its shape (fields are public).
        let bad = Tensor {
            dtype: DType::Float64,
            shape: vec![3],
            data: vec![Value::Float(1.0)],
        };
        let err = run1(
            &LibraryOp::Dot,
            vec![("_x", bad), ("_y", t64(&[3], &[1.0; 3]))],
            "_result",
            Tensor::new(DType::Float64, vec![]),
        )
        .unwrap_err();
        assert!(
            matches!(err, LibraryError::Shape { op: "dot", .. }),
            "{err:?}"
        );
        // Values of another family are normalized on read.
        let loose = Tensor {
            dtype: DType::Int8,
            shape: vec![2],
            data: vec![Value::Float(3.7), Value::UInt(300)],
        };
        let r = run1(
            &LibraryOp::Dot,
            vec![("_x", loose), ("_y", ti(DType::Int8, &[2], &[1, 1]))],
            "_result",
            Tensor::new(DType::Int8, vec![]),
        )
        .unwrap();
        assert_eq!(ints(&r), vec![3 + 44]);
    }

    #[test]
    fn unsupported_types() {
        let err = run1(
            &LibraryOp::MatMul,
            vec![("_a", tb(&[1], &[true])), ("_b", tb(&[1], &[true]))],
            "_c",
            Tensor::new(DType::Bool, vec![]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::UnsupportedType {
                op: "matmul",
                dtype: DType::Bool
            }
        );
        let err = run1(
            &LibraryOp::Solve,
            vec![
                ("_a", ti(DType::Int64, &[1, 1], &[1])),
                ("_b", ti(DType::Int64, &[1], &[1])),
            ],
            "_x",
            Tensor::new(DType::Int64, vec![1]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            LibraryError::UnsupportedType {
                op: "solve",
                dtype: DType::Int64
            }
        );
    }

    #[test]
    fn errors_leave_outputs_unchanged() {
        let inputs = BTreeMap::from([
            ("_a".to_owned(), t64(&[2, 2], &[1.0, 2.0, 2.0, 4.0])),
            ("_b".to_owned(), t64(&[2], &[1.0, 1.0])),
        ]);
        let mut outputs = BTreeMap::from([("_x".to_owned(), t64(&[2], &[5.0, 6.0]))]);
        assert!(run(&LibraryOp::Solve, &inputs, &mut outputs).is_err());
        assert_eq!(floats(&outputs["_x"]), vec![5.0, 6.0]);
    }

    /// Every operation on random shapes (rank 0 to 3, dims 0 to 3), dtypes and
    /// values returns a result or an error, never panics.
    #[test]
    fn never_panics_on_arbitrary_operands() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let lits = [Literal::f64(0.0), Literal::f64(2.0), Literal::i64(-1)];
        let mut ops = vec![
            LibraryOp::MatMul,
            LibraryOp::BatchedMatMul,
            LibraryOp::Dot,
            LibraryOp::Transpose,
            LibraryOp::Cholesky { lower: true },
            LibraryOp::Cholesky { lower: false },
            LibraryOp::Solve,
            LibraryOp::TensorTranspose { axes: vec![] },
            LibraryOp::TensorTranspose { axes: vec![1, 0] },
            LibraryOp::TensorTranspose {
                axes: vec![2, 0, 1],
            },
            LibraryOp::TensorTranspose { axes: vec![5, 0] },
        ];
        for &beta in &lits {
            for (trans_a, trans_b) in [(false, false), (true, false), (false, true), (true, true)] {
                ops.push(LibraryOp::Gemm {
                    alpha: lits[1],
                    beta,
                    trans_a,
                    trans_b,
                    alpha_input: false,
                    beta_input: false,
                });
            }
            for trans_a in [false, true] {
                ops.push(LibraryOp::Gemv {
                    alpha: lits[1],
                    beta,
                    trans_a,
                });
            }
        }
        for wcr in [Wcr::Sum, Wcr::Product, Wcr::Min, Wcr::Max] {
            for axes in [
                None,
                Some(vec![]),
                Some(vec![0]),
                Some(vec![1]),
                Some(vec![0, 2]),
                Some(vec![1, 1]),
                Some(vec![7]),
            ] {
                for identity in [None, Some(lits[1])] {
                    ops.push(reduce(wcr, axes.clone(), identity));
                }
            }
        }
        let mut ok = 0;
        for _ in 0..40_000 {
            let op = &ops[usize::try_from(next(ops.len() as u64)).unwrap()];
            let dtype = DType::ALL[usize::try_from(next(13)).unwrap()];
            let tensor = |next: &mut dyn FnMut(u64) -> u64| {
                let rank = next(4);
                let shape: Vec<usize> = (0..rank)
                    .map(|_| usize::try_from(next(4)).unwrap())
                    .collect();
                let n: usize = shape.iter().product();
                let data = (0..n)
                    .map(|_| {
                        let x = (next(9) as f64) - 4.0;
                        let x = if next(50) == 0 { f64::NAN } else { x };
                        Value::Complex(C64::new(x, x / 2.0)).cast(dtype)
                    })
                    .collect();
                Tensor { dtype, shape, data }
            };
            let inputs: BTreeMap<String, Tensor> = ["_a", "_b", "_cin", "_x", "_y", "_y_in", "_in"]
                .into_iter()
                .map(|c| (c.to_owned(), tensor(&mut next)))
                .collect();
            let mut outputs: BTreeMap<String, Tensor> = op
                .out_connectors()
                .into_iter()
                .map(|c| (c.to_owned(), tensor(&mut next)))
                .collect();
            if run(op, &inputs, &mut outputs).is_ok() {
                ok += 1;
            }
        }
        // The sweep must also reach the kernels, not only the validation.
        assert!(ok > 1000, "only {ok} successful runs");
    }

    /// Empty tensors may have huge dimensions; products and strides of them
    /// must neither overflow nor be allocated.
    #[test]
    fn huge_empty_shapes_do_not_overflow() {
        let big = usize::MAX / 2;
        let empty = |shape: &[usize]| Tensor {
            dtype: DType::Float64,
            shape: shape.to_vec(),
            data: Vec::new(),
        };
        let err = run1(
            &LibraryOp::MatMul,
            vec![("_a", empty(&[big, 0])), ("_b", empty(&[0, big]))],
            "_c",
            empty(&[0]),
        )
        .unwrap_err();
        assert!(matches!(err, LibraryError::Shape { .. }), "{err:?}");
        let c = run1(
            &LibraryOp::MatMul,
            vec![("_a", empty(&[big, 0, 3, 2])), ("_b", empty(&[2, 0]))],
            "_c",
            empty(&[big, 0, 3, 0]),
        )
        .unwrap();
        assert!(c.is_empty());
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![1]), Some(Literal::f64(0.0))),
            vec![("_in", empty(&[big, 0, big]))],
            "_out",
            empty(&[0]),
        )
        .unwrap_err();
        assert!(matches!(out, LibraryError::Shape { .. }), "{out:?}");
        let out = run1(
            &reduce(Wcr::Sum, Some(vec![0, 2]), Some(Literal::f64(0.0))),
            vec![("_in", empty(&[big, 2, big, 0]))],
            "_out",
            empty(&[2, 0]),
        )
        .unwrap();
        assert!(out.is_empty());
        let out = run1(
            &LibraryOp::TensorTranspose {
                axes: vec![2, 1, 0],
            },
            vec![("_in", empty(&[big, 0, big]))],
            "_out",
            empty(&[big, 0, big]),
        )
        .unwrap();
        assert!(out.is_empty());
        let x = run1(
            &LibraryOp::Solve,
            vec![("_a", empty(&[0, 0])), ("_b", empty(&[0, big]))],
            "_x",
            empty(&[0, big]),
        )
        .unwrap();
        assert!(x.is_empty());
    }
}
