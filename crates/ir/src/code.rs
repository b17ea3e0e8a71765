//! Tasklet code: a small typed expression and statement language.
//!
//! Tasklet bodies are trees of this module, never strings, so that the
//! interpreter, the CUDA and HIP emitters and every analysis read one
//! definition of what the code means. The language is deliberately C-like and
//! explicit: binary operators take operands of *one* type (frontends insert
//! [`Expr::Cast`]s, as NumPy's promotion rules decide), so a backend never has
//! to guess an implicit conversion.
//!
//! Names in expressions resolve, in order, to a local variable declared by
//! [`Stmt::Let`], a connector of the tasklet, or a symbol of the SDFG (map
//! parameters included), which is always an `int64` value.

use crate::dtype::{DType, Literal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// An expression.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// A constant.
    Lit(Literal),
    /// The value of a local, a scalar input connector, or a symbol.
    Var(String),
    /// Indexing of a pointer connector: `conn[i, j]` (indirect access).
    /// Indices are integers; the connector's memlet subset is the region indexed.
    Load {
        /// The pointer connector.
        conn: String,
        /// One index per dimension of the connector's subset.
        index: Vec<Expr>,
    },
    /// A unary operation.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        arg: Box<Expr>,
    },
    /// A binary operation on two operands of one type.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// A call of a math intrinsic.
    Call {
        /// The intrinsic.
        func: Intrinsic,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `cond ? then : otherwise`, both arms of one type.
    Select {
        /// A `bool` condition.
        cond: Box<Expr>,
        /// Value when true.
        then: Box<Expr>,
        /// Value when false.
        otherwise: Box<Expr>,
    },
    /// Conversion to `dtype` (C semantics: float to integer truncates toward zero).
    Cast {
        /// Target type.
        dtype: DType,
        /// The value converted.
        arg: Box<Expr>,
    },
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnaryOp {
    /// Arithmetic negation.
    Neg,
    /// Logical not of a `bool`.
    Not,
    /// Bitwise complement of an integer.
    BitNot,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`: true division for floats and complex, truncating for integers (as in C).
    Div,
    /// `//`: floor division (Python semantics) for integers and floats.
    FloorDiv,
    /// `%`: Python modulo (the result has the sign of the divisor).
    Mod,
    /// `**`.
    Pow,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// Logical and of two `bool`s.
    And,
    /// Logical or of two `bool`s.
    Or,
    /// Bitwise and (integers and `bool`).
    BitAnd,
    /// Bitwise or (integers and `bool`).
    BitOr,
    /// Bitwise exclusive or (integers and `bool`).
    BitXor,
    /// Left shift of an integer.
    Shl,
    /// Right shift of an integer (arithmetic for signed types).
    Shr,
}

impl UnaryOp {
    /// Whether the operator applies to operands of type `t`: the one rule
    /// the tasklet type checker and the frontend's type errors share, so a
    /// program the frontend accepts never makes an ill-typed tasklet.
    pub fn is_defined_on(self, t: DType) -> bool {
        match self {
            UnaryOp::Neg => t.is_numeric(),
            UnaryOp::Not => t == DType::Bool,
            UnaryOp::BitNot => t.is_integer() || t == DType::Bool,
        }
    }

    /// The operator's Python spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "not",
            UnaryOp::BitNot => "~",
        }
    }
}

impl BinaryOp {
    /// Whether the operator applies to two operands of type `t` (both
    /// operands of a tasklet's binary operation have one type): the rule
    /// the tasklet type checker and the frontend's type errors share.
    pub fn is_defined_on(self, t: DType) -> bool {
        match self {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow => {
                t.is_numeric()
            }
            BinaryOp::FloorDiv | BinaryOp::Mod => t.is_integer() || t.is_float(),
            BinaryOp::Eq | BinaryOp::Ne => true,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                t.is_integer() || t.is_float()
            }
            BinaryOp::And | BinaryOp::Or => t == DType::Bool,
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => {
                t.is_integer() || t == DType::Bool
            }
            BinaryOp::Shl | BinaryOp::Shr => t.is_integer(),
        }
    }

    /// True for the six comparisons, whose result is `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    /// The operator's Python spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::FloorDiv => "//",
            BinaryOp::Mod => "%",
            BinaryOp::Pow => "**",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
        }
    }
}

/// Math intrinsics available to tasklets on every backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intrinsic {
    /// Square root (float, complex).
    Sqrt,
    /// Natural exponential (float, complex).
    Exp,
    /// Natural logarithm (float, complex).
    Log,
    /// Sine (float, complex).
    Sin,
    /// Cosine (float, complex).
    Cos,
    /// Tangent (float).
    Tan,
    /// Hyperbolic tangent (float).
    Tanh,
    /// Arc tangent (float).
    Atan,
    /// Two-argument arc tangent `atan2(y, x)` (float).
    Atan2,
    /// Power `pow(x, y)` (float, complex).
    Pow,
    /// Absolute value; of a complex value, its modulus (a float).
    Abs,
    /// Minimum of two values (integer, float).
    Min,
    /// Maximum of two values (integer, float).
    Max,
    /// Round toward negative infinity (float).
    Floor,
    /// Round toward positive infinity (float).
    Ceil,
    /// Real part of a complex value.
    Real,
    /// Imaginary part of a complex value.
    Imag,
    /// Complex conjugate.
    Conj,
    /// Builds a complex value from real and imaginary parts of one float type.
    Complex,
    /// Whether a float is NaN.
    IsNan,
    /// Base-2 logarithm (float).
    Log2,
    /// Base-10 logarithm (float).
    Log10,
    /// `log(1 + x)`, accurate near zero (float).
    Log1p,
    /// `exp(x) - 1`, accurate near zero (float).
    Expm1,
    /// `2**x` (float).
    Exp2,
    /// Hyperbolic sine (float).
    Sinh,
    /// Hyperbolic cosine (float).
    Cosh,
    /// Arc sine (float).
    Asin,
    /// Arc cosine (float).
    Acos,
    /// Inverse hyperbolic sine (float).
    Asinh,
    /// Inverse hyperbolic cosine (float).
    Acosh,
    /// Inverse hyperbolic tangent (float).
    Atanh,
    /// Cube root (float).
    Cbrt,
    /// Round toward zero (float).
    Trunc,
    /// Round to the nearest integer, ties to even (float; NumPy's `rint`).
    Rint,
    /// The mantissa of C's `frexp`: `x = m * 2**e` with `0.5 <= |m| < 1`
    /// (`x` itself for zero, infinities and NaN).
    FrexpMantissa,
    /// The exponent of C's `frexp`, an `int32` (0 for zero, infinities
    /// and NaN).
    FrexpExponent,
    /// C's `fmod(a, b)` (float): the remainder of `a / b` truncated toward
    /// zero, with the sign of `a`, exact. Fortran's `MOD` of reals and
    /// GT4Py's tasklets call it; Python's `%` (the sign of `b`) is
    /// [`BinaryOp::Mod`].
    Fmod,
    /// The host's high-resolution clock (C++'s
    /// `std::chrono::high_resolution_clock`) in nanoseconds since its
    /// epoch, an `int64`, of no arguments, read once the work issued to
    /// the device before it has finished (so that it times that work):
    /// GT4Py's timing instrumentation reads it around a program. Host code
    /// only ([`Intrinsic::host_only`]): a kernel's threads have no such
    /// clock.
    WallClockNs,
    /// The error function (float): C's `erf`, GT4Py's native `erf`.
    Erf,
}

impl Intrinsic {
    /// Number of arguments the intrinsic takes.
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Atan2
            | Intrinsic::Fmod
            | Intrinsic::Pow
            | Intrinsic::Min
            | Intrinsic::Max
            | Intrinsic::Complex => 2,
            Intrinsic::WallClockNs => 0,
            _ => 1,
        }
    }

    /// Whether only host code can call it: a tasklet calling it stays on
    /// the host ([`Tasklet::host_only`](crate::node::Tasklet::host_only)).
    pub fn host_only(self) -> bool {
        self == Intrinsic::WallClockNs
    }

    /// The C++ standard library function with this meaning (`<cmath>`,
    /// `<complex>`: `atan` for NumPy's `arctan`), which every C++ writer
    /// (the emitter's prelude, DaCe's tasklet code) calls by this name.
    /// `None` where there is none with the IR's meaning: NumPy's NaN-
    /// propagating `minimum`/`maximum` (C++'s `fmin` drops a NaN), the
    /// complex constructor and the two halves of `frexp`.
    pub fn cpp_name(self) -> Option<&'static str> {
        Some(match self {
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tan => "tan",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Atan => "atan",
            Intrinsic::Atan2 => "atan2",
            Intrinsic::Fmod => "fmod",
            Intrinsic::Erf => "erf",
            Intrinsic::Pow => "pow",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Real => "real",
            Intrinsic::Imag => "imag",
            Intrinsic::Conj => "conj",
            Intrinsic::IsNan => "isnan",
            Intrinsic::Log2 => "log2",
            Intrinsic::Log10 => "log10",
            Intrinsic::Log1p => "log1p",
            Intrinsic::Expm1 => "expm1",
            Intrinsic::Exp2 => "exp2",
            Intrinsic::Sinh => "sinh",
            Intrinsic::Cosh => "cosh",
            Intrinsic::Asin => "asin",
            Intrinsic::Acos => "acos",
            Intrinsic::Asinh => "asinh",
            Intrinsic::Acosh => "acosh",
            Intrinsic::Atanh => "atanh",
            Intrinsic::Cbrt => "cbrt",
            Intrinsic::Trunc => "trunc",
            Intrinsic::Rint => "rint",
            Intrinsic::Min
            | Intrinsic::Max
            | Intrinsic::Complex
            | Intrinsic::FrexpMantissa
            | Intrinsic::FrexpExponent
            | Intrinsic::WallClockNs => return None,
        })
    }

    /// The NumPy-style name (`"sqrt"`).
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tan => "tan",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Atan => "arctan",
            Intrinsic::Atan2 => "arctan2",
            Intrinsic::Pow => "pow",
            Intrinsic::Abs => "abs",
            Intrinsic::Min => "min",
            Intrinsic::Max => "max",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Real => "real",
            Intrinsic::Imag => "imag",
            Intrinsic::Conj => "conj",
            Intrinsic::Complex => "complex",
            Intrinsic::IsNan => "isnan",
            Intrinsic::Log2 => "log2",
            Intrinsic::Log10 => "log10",
            Intrinsic::Log1p => "log1p",
            Intrinsic::Expm1 => "expm1",
            Intrinsic::Exp2 => "exp2",
            Intrinsic::Sinh => "sinh",
            Intrinsic::Cosh => "cosh",
            Intrinsic::Asin => "arcsin",
            Intrinsic::Acos => "arccos",
            Intrinsic::Asinh => "arcsinh",
            Intrinsic::Acosh => "arccosh",
            Intrinsic::Atanh => "arctanh",
            Intrinsic::Cbrt => "cbrt",
            Intrinsic::Trunc => "trunc",
            Intrinsic::Rint => "rint",
            Intrinsic::FrexpMantissa => "frexp_mantissa",
            Intrinsic::FrexpExponent => "frexp_exponent",
            Intrinsic::Fmod => "fmod",
            Intrinsic::WallClockNs => "wall_clock_ns",
            Intrinsic::Erf => "erf",
        }
    }
}

/// A statement of a tasklet body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stmt {
    /// Declares a local variable of the given type, initialised with `value`.
    Let {
        /// Name of the local; must not shadow a connector or another local.
        name: String,
        /// Its type (the value must have this type).
        dtype: DType,
        /// Initial value.
        value: Expr,
    },
    /// Assigns to a local or to a scalar output connector.
    Assign {
        /// The local or output connector.
        target: String,
        /// The value (of the target's type).
        value: Expr,
    },
    /// Stores through a pointer output connector: `conn[i, j] = value` (indirect write).
    Store {
        /// The pointer output connector.
        conn: String,
        /// One integer index per dimension of the connector's subset.
        index: Vec<Expr>,
        /// The value (of the connector's type).
        value: Expr,
    },
    /// Conditional execution.
    If {
        /// A `bool` condition.
        cond: Expr,
        /// Statements run when it holds.
        then: Vec<Stmt>,
        /// Statements run otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        otherwise: Vec<Stmt>,
    },
}

// ---------------------------------------------------------------------------
// Convenience constructors, so tests and frontends read like the code they build.

impl Expr {
    /// A reference to a local, connector or symbol.
    pub fn var(name: impl Into<String>) -> Expr {
        Expr::Var(name.into())
    }

    /// A `float64` constant.
    pub fn f64(value: f64) -> Expr {
        Expr::Lit(Literal::f64(value))
    }

    /// An `int64` constant.
    pub fn i64(value: i64) -> Expr {
        Expr::Lit(Literal::i64(value))
    }

    /// A binary operation.
    pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        }
    }

    /// A unary operation.
    pub fn unary(op: UnaryOp, arg: Expr) -> Expr {
        Expr::Unary {
            op,
            arg: Box::new(arg),
        }
    }

    /// An intrinsic call.
    pub fn call(func: Intrinsic, args: Vec<Expr>) -> Expr {
        Expr::Call { func, args }
    }

    /// A conversion.
    pub fn cast(dtype: DType, arg: Expr) -> Expr {
        Expr::Cast {
            dtype,
            arg: Box::new(arg),
        }
    }

    /// A selection `cond ? then : otherwise`.
    pub fn select(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        Expr::Select {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        }
    }

    /// An indexed read of a pointer connector.
    pub fn load(conn: impl Into<String>, index: Vec<Expr>) -> Expr {
        Expr::Load {
            conn: conn.into(),
            index,
        }
    }
}

macro_rules! binary_operator_impls {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl std::ops::$trait for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::binary(BinaryOp::$op, self, rhs)
            }
        }
    )*};
}

binary_operator_impls! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
    Div div Div;
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::unary(UnaryOp::Neg, self)
    }
}

impl Stmt {
    /// `target = value`.
    pub fn assign(target: impl Into<String>, value: Expr) -> Stmt {
        Stmt::Assign {
            target: target.into(),
            value,
        }
    }
}

// ---------------------------------------------------------------------------
// Text form (Python-like), used in DOT labels and messages.

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(l) => write!(f, "{l}"),
            Expr::Var(v) => f.write_str(v),
            Expr::Load { conn, index } => {
                write!(f, "{conn}[")?;
                write_list(f, index)?;
                f.write_str("]")
            }
            Expr::Unary { op, arg } => match op {
                UnaryOp::Neg => write!(f, "(-{arg})"),
                UnaryOp::Not => write!(f, "(not {arg})"),
                UnaryOp::BitNot => write!(f, "(~{arg})"),
            },
            Expr::Binary { op, lhs, rhs } => write!(f, "({lhs} {} {rhs})", op.symbol()),
            Expr::Call { func, args } => {
                write!(f, "{}(", func.name())?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => write!(f, "({then} if {cond} else {otherwise})"),
            Expr::Cast { dtype, arg } => write!(f, "{dtype}({arg})"),
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// Writes a statement list as indented Python-like text.
pub fn write_body(out: &mut impl fmt::Write, body: &[Stmt], indent: usize) -> fmt::Result {
    let pad = "    ".repeat(indent);
    for s in body {
        match s {
            Stmt::Let { name, dtype, value } => writeln!(out, "{pad}{name}: {dtype} = {value}")?,
            Stmt::Assign { target, value } => writeln!(out, "{pad}{target} = {value}")?,
            Stmt::Store { conn, index, value } => {
                let idx: Vec<String> = index.iter().map(ToString::to_string).collect();
                writeln!(out, "{pad}{conn}[{}] = {value}", idx.join(", "))?
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(out, "{pad}if {cond}:")?;
                write_body(out, then, indent + 1)?;
                if !otherwise.is_empty() {
                    writeln!(out, "{pad}else:")?;
                    write_body(out, otherwise, indent + 1)?;
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Type checking.

/// What a name in tasklet code may refer to, with its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A scalar value (input connector, local, or symbol).
    Value(DType),
    /// A pointer input connector of `rank` index dimensions.
    PointerIn {
        /// Element type.
        dtype: DType,
        /// Number of indices a load takes.
        rank: usize,
    },
    /// A scalar output connector (assign only).
    Output(DType),
    /// A pointer output connector of `rank` index dimensions (store only).
    PointerOut {
        /// Element type.
        dtype: DType,
        /// Number of indices a store takes.
        rank: usize,
    },
}

/// A type error in tasklet code.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TypeError {
    /// A name that is neither a local, a connector nor a symbol.
    #[error("{} is not a local, connector or symbol", crate::quote(.name))]
    UnknownName {
        /// The name.
        name: String,
    },
    /// A name used in a way its binding does not allow (reading an output, indexing a scalar, ...).
    #[error("{} cannot be used as {usage}", crate::quote(.name))]
    Misuse {
        /// The name.
        name: String,
        /// What the code tried to do with it.
        usage: &'static str,
    },
    /// A load or store with the wrong number of indices.
    #[error("{} takes {expected} indices, got {found}", crate::quote(.name))]
    IndexCount {
        /// The connector.
        name: String,
        /// Indices it takes.
        expected: usize,
        /// Indices given.
        found: usize,
    },
    /// Operands or arms whose types do not fit the operation.
    #[error("{what}: expected {expected}, found {found}")]
    Mismatch {
        /// The operation or position.
        what: String,
        /// What was expected.
        expected: String,
        /// What was found.
        found: DType,
    },
    /// An intrinsic called with the wrong number of arguments.
    #[error("{} takes {expected} arguments, got {found}", crate::quote(.func))]
    Arity {
        /// The intrinsic.
        func: &'static str,
        /// Arguments it takes.
        expected: usize,
        /// Arguments given.
        found: usize,
    },
    /// A literal whose value variant does not match its dtype.
    #[error("literal {} is not a valid {dtype}", crate::quote(.literal))]
    BadLiteral {
        /// The literal's text.
        literal: String,
        /// Its declared type.
        dtype: DType,
    },
    /// A local declared twice or shadowing a connector.
    #[error("{} is already declared", crate::quote(.name))]
    Redeclared {
        /// The name.
        name: String,
    },
}

/// Type-checks tasklet code against the names visible to it.
///
/// `bindings` holds connectors; symbols are looked up with `is_symbol` and are
/// `int64`. Locals declared by `Let` are added while checking, and are visible
/// to the statements after them in the same block and the blocks it nests.
pub struct TypeChecker<'a> {
    bindings: BTreeMap<String, Binding>,
    is_symbol: &'a dyn Fn(&str) -> bool,
}

impl<'a> TypeChecker<'a> {
    /// A checker for code that sees `bindings` (connectors) and the symbols accepted by `is_symbol`.
    pub fn new(bindings: BTreeMap<String, Binding>, is_symbol: &'a dyn Fn(&str) -> bool) -> Self {
        TypeChecker {
            bindings,
            is_symbol,
        }
    }

    /// Checks a statement list; returns the first error.
    pub fn check_body(&mut self, body: &[Stmt]) -> Result<(), TypeError> {
        let saved = self.bindings.clone();
        let result = body.iter().try_for_each(|s| self.check_stmt(s));
        self.bindings = saved;
        result
    }

    fn check_stmt(&mut self, stmt: &Stmt) -> Result<(), TypeError> {
        match stmt {
            Stmt::Let { name, dtype, value } => {
                if self.bindings.contains_key(name) {
                    return Err(TypeError::Redeclared { name: name.clone() });
                }
                self.expect(
                    value,
                    *dtype,
                    &format!("initial value of {}", crate::quote(name)),
                )?;
                self.bindings.insert(name.clone(), Binding::Value(*dtype));
                Ok(())
            }
            Stmt::Assign { target, value } => match self.bindings.get(target).copied() {
                Some(Binding::Value(t) | Binding::Output(t)) => self.expect(
                    value,
                    t,
                    &format!("value assigned to {}", crate::quote(target)),
                ),
                Some(_) => Err(TypeError::Misuse {
                    name: target.clone(),
                    usage: "an assignment target (index it instead)",
                }),
                None => Err(TypeError::UnknownName {
                    name: target.clone(),
                }),
            },
            Stmt::Store { conn, index, value } => match self.bindings.get(conn).copied() {
                Some(Binding::PointerOut { dtype, rank }) => {
                    self.check_indices(conn, rank, index)?;
                    self.expect(
                        value,
                        dtype,
                        &format!("value stored to {}", crate::quote(conn)),
                    )
                }
                Some(_) => Err(TypeError::Misuse {
                    name: conn.clone(),
                    usage: "an indexed store target",
                }),
                None => Err(TypeError::UnknownName { name: conn.clone() }),
            },
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.expect(cond, DType::Bool, "if condition")?;
                self.check_body(then)?;
                self.check_body(otherwise)
            }
        }
    }

    fn check_indices(&self, name: &str, rank: usize, index: &[Expr]) -> Result<(), TypeError> {
        if index.len() != rank {
            return Err(TypeError::IndexCount {
                name: name.to_owned(),
                expected: rank,
                found: index.len(),
            });
        }
        for i in index {
            let t = self.type_of(i)?;
            if !t.is_integer() {
                return Err(mismatch(
                    format!("index of {}", crate::quote(name)),
                    "an integer",
                    t,
                ));
            }
        }
        Ok(())
    }

    fn expect(&self, e: &Expr, want: DType, what: &str) -> Result<(), TypeError> {
        let t = self.type_of(e)?;
        if t == want {
            Ok(())
        } else {
            Err(mismatch(what.to_owned(), want.name(), t))
        }
    }

    /// The type of an expression, or the first error in it.
    pub fn type_of(&self, e: &Expr) -> Result<DType, TypeError> {
        match e {
            Expr::Lit(l) => {
                if l.is_well_typed() {
                    Ok(l.dtype())
                } else {
                    Err(TypeError::BadLiteral {
                        literal: l.to_string(),
                        dtype: l.dtype(),
                    })
                }
            }
            Expr::Var(name) => match self.bindings.get(name) {
                Some(Binding::Value(t)) => Ok(*t),
                Some(_) => Err(TypeError::Misuse {
                    name: name.clone(),
                    usage: "a value (it is an output or a pointer)",
                }),
                None if (self.is_symbol)(name) => Ok(DType::Int64),
                None => Err(TypeError::UnknownName { name: name.clone() }),
            },
            Expr::Load { conn, index } => match self.bindings.get(conn) {
                Some(Binding::PointerIn { dtype, rank }) => {
                    self.check_indices(conn, *rank, index)?;
                    Ok(*dtype)
                }
                Some(_) => Err(TypeError::Misuse {
                    name: conn.clone(),
                    usage: "an indexed load (it is not a pointer input)",
                }),
                None => Err(TypeError::UnknownName { name: conn.clone() }),
            },
            Expr::Unary { op, arg } => {
                let t = self.type_of(arg)?;
                if op.is_defined_on(t) {
                    Ok(t)
                } else {
                    Err(mismatch(
                        format!("operand of `{}`", op.symbol()),
                        "a type the operator is defined on",
                        t,
                    ))
                }
            }
            Expr::Binary { op, lhs, rhs } => {
                let lt = self.type_of(lhs)?;
                let rt = self.type_of(rhs)?;
                let what = format!("right operand of `{}`", op.symbol());
                if lt != rt {
                    return Err(mismatch(what, lt.name(), rt));
                }
                if !op.is_defined_on(lt) {
                    return Err(mismatch(
                        format!("operands of `{}`", op.symbol()),
                        "a type the operator is defined on",
                        lt,
                    ));
                }
                Ok(if op.is_comparison() { DType::Bool } else { lt })
            }
            Expr::Call { func, args } => self.type_of_call(*func, args),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                self.expect(cond, DType::Bool, "select condition")?;
                let t = self.type_of(then)?;
                self.expect(otherwise, t, "else arm of select")?;
                Ok(t)
            }
            Expr::Cast { dtype, arg } => {
                let from = self.type_of(arg)?;
                if from.is_complex() && !dtype.is_complex() {
                    Err(mismatch(
                        format!("cast to {dtype}"),
                        "a real value (take `real` or `abs` first)",
                        from,
                    ))
                } else {
                    Ok(*dtype)
                }
            }
        }
    }

    fn type_of_call(&self, func: Intrinsic, args: &[Expr]) -> Result<DType, TypeError> {
        if args.len() != func.arity() {
            return Err(TypeError::Arity {
                func: func.name(),
                expected: func.arity(),
                found: args.len(),
            });
        }
        if func == Intrinsic::WallClockNs {
            return Ok(DType::Int64);
        }
        let types = args
            .iter()
            .map(|a| self.type_of(a))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(&t) = types.first() else {
            return Err(TypeError::Arity {
                func: func.name(),
                expected: func.arity(),
                found: 0,
            });
        };
        if let Some(&u) = types.iter().find(|&&u| u != t) {
            return Err(mismatch(
                format!("arguments of `{}`", func.name()),
                t.name(),
                u,
            ));
        }
        let what = || format!("argument of `{}`", func.name());
        use Intrinsic as I;
        match func {
            I::Sqrt | I::Exp | I::Log | I::Sin | I::Cos | I::Tan | I::Tanh | I::Atan | I::Pow => {
                if t.is_float() || t.is_complex() {
                    Ok(t)
                } else {
                    Err(mismatch(what(), "a float or complex value", t))
                }
            }
            I::Atan2
            | I::Fmod
            | I::Erf
            | I::Floor
            | I::Ceil
            | I::Log2
            | I::Log10
            | I::Log1p
            | I::Expm1
            | I::Exp2
            | I::Sinh
            | I::Cosh
            | I::Asin
            | I::Acos
            | I::Asinh
            | I::Acosh
            | I::Atanh
            | I::Cbrt
            | I::Trunc
            | I::Rint
            | I::FrexpMantissa => {
                if t.is_float() {
                    Ok(t)
                } else {
                    Err(mismatch(what(), "a float", t))
                }
            }
            I::FrexpExponent => {
                if t.is_float() {
                    Ok(DType::Int32)
                } else {
                    Err(mismatch(what(), "a float", t))
                }
            }
            I::IsNan => {
                if t.is_float() {
                    Ok(DType::Bool)
                } else {
                    Err(mismatch(what(), "a float", t))
                }
            }
            I::Abs => {
                if t.is_numeric() {
                    Ok(t.real_type())
                } else {
                    Err(mismatch(what(), "a number", t))
                }
            }
            // Typed before its (no) arguments are.
            I::WallClockNs => Ok(DType::Int64),
            I::Min | I::Max => {
                if t.is_integer() || t.is_float() {
                    Ok(t)
                } else {
                    Err(mismatch(what(), "an integer or float", t))
                }
            }
            I::Real | I::Imag => {
                if t.is_complex() {
                    Ok(t.real_type())
                } else {
                    Err(mismatch(what(), "a complex value", t))
                }
            }
            I::Conj => {
                if t.is_complex() {
                    Ok(t)
                } else {
                    Err(mismatch(what(), "a complex value", t))
                }
            }
            I::Complex => match t {
                DType::Float32 => Ok(DType::Complex64),
                DType::Float64 => Ok(DType::Complex128),
                _ => Err(mismatch(what(), "a float", t)),
            },
        }
    }
}

fn mismatch(what: String, expected: impl Into<String>, found: DType) -> TypeError {
    TypeError::Mismatch {
        what,
        expected: expected.into(),
        found,
    }
}

/// Names of locals, connectors and symbols an expression reads, for analyses.
pub fn expr_names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Lit(_) => {}
        Expr::Var(v) => out.push(v.clone()),
        Expr::Load { conn, index } => {
            out.push(conn.clone());
            index.iter().for_each(|i| expr_names(i, out));
        }
        Expr::Unary { arg, .. } | Expr::Cast { arg, .. } => expr_names(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_names(lhs, out);
            expr_names(rhs, out);
        }
        Expr::Call { args, .. } => args.iter().for_each(|a| expr_names(a, out)),
        Expr::Select {
            cond,
            then,
            otherwise,
        } => {
            expr_names(cond, out);
            expr_names(then, out);
            expr_names(otherwise, out);
        }
    }
}

/// Renames the variables `names` maps in tasklet code, where they are read
/// (`Var`) and where they index (`Load` and `Store` indices): what a pass
/// needs when the symbols a body reads change name (map fusion's second
/// map's parameters, a map parameter an import gives a fresh name). Locals
/// and connectors of those names are renamed too: callers pass only names
/// the code reads as symbols.
pub fn rename_vars(body: &mut [Stmt], names: &BTreeMap<String, String>) {
    fn expr(e: &mut Expr, names: &BTreeMap<String, String>) {
        match e {
            Expr::Lit(_) => {}
            Expr::Var(v) => {
                if let Some(n) = names.get(v) {
                    *v = n.clone();
                }
            }
            Expr::Load { index, .. } => index.iter_mut().for_each(|i| expr(i, names)),
            Expr::Unary { arg, .. } | Expr::Cast { arg, .. } => expr(arg, names),
            Expr::Binary { lhs, rhs, .. } => {
                expr(lhs, names);
                expr(rhs, names);
            }
            Expr::Call { args, .. } => args.iter_mut().for_each(|a| expr(a, names)),
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                expr(cond, names);
                expr(then, names);
                expr(otherwise, names);
            }
        }
    }
    for s in body {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => expr(value, names),
            Stmt::Store { index, value, .. } => {
                index.iter_mut().for_each(|i| expr(i, names));
                expr(value, names);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                expr(cond, names);
                rename_vars(then, names);
                rename_vars(otherwise, names);
            }
        }
    }
}

/// Names of locals, connectors and symbols a body reads (`expr_names` of
/// every expression in it, store indices included), for analyses.
pub fn body_names(body: &[Stmt], out: &mut Vec<String>) {
    for s in body {
        match s {
            Stmt::Let { value, .. } | Stmt::Assign { value, .. } => expr_names(value, out),
            Stmt::Store { index, value, .. } => {
                index.iter().for_each(|i| expr_names(i, out));
                expr_names(value, out);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                expr_names(cond, out);
                body_names(then, out);
                body_names(otherwise, out);
            }
        }
    }
}

/// Output connectors a body writes (by assignment or store), in order of first write.
pub fn written_names(body: &[Stmt], out: &mut Vec<String>) {
    for s in body {
        match s {
            Stmt::Let { .. } => {}
            Stmt::Assign { target, .. } => out.push(target.clone()),
            Stmt::Store { conn, .. } => out.push(conn.clone()),
            Stmt::If {
                then, otherwise, ..
            } => {
                written_names(then, out);
                written_names(otherwise, out);
            }
        }
    }
}
