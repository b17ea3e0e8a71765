//! Printing IR expressions as C++: dtypes, literals, symbolic expressions
//! and conditions, and tasklet code.
//!
//! Everything printed here is valid in host and device code alike; the
//! semantics the interpreter gives each operation (Python's `//` and `%`,
//! C's truncating `/` on integers, NumPy's NaN-propagating `min`/`max`) come
//! from helpers in the prelude (`sdfg::floordiv`, `sdfg::mod`, ...).

use sdfg_ir::code::{BinaryOp, Binding, Expr, Intrinsic, Stmt, TypeChecker, UnaryOp};
use sdfg_ir::symbolic::{Atom, CondView};
use sdfg_ir::{DType, Literal, SymCond, SymExpr, Wcr};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The C++ type of a dtype.
pub fn ctype(t: DType) -> &'static str {
    match t {
        DType::Bool => "bool",
        DType::Int8 => "int8_t",
        DType::Int16 => "int16_t",
        DType::Int32 => "int32_t",
        DType::Int64 => "int64_t",
        DType::UInt8 => "uint8_t",
        DType::UInt16 => "uint16_t",
        DType::UInt32 => "uint32_t",
        DType::UInt64 => "uint64_t",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::Complex64 => "sdfg::complex<float>",
        DType::Complex128 => "sdfg::complex<double>",
    }
}

const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "nullptr",
    "operator",
    "or",
    "private",
    "protected",
    "public",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "xor",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "dim3",
    "main",
    "sdfg",
    "stream",
    "min",
    "max",
    "abs",
    "pow",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "floor",
    "ceil",
];

/// A C++ identifier for an IR name: names that are C++ keywords, names of
/// the prelude or of the standard library, names with a leading underscore
/// (reserved in C++ at namespace scope) and names starting with `sdfg` (the
/// emitter's own namespace: `sdfg_h`, `sdfg_blas`, `sdfg_cap_A`, ...) get a
/// prefix, so no container or symbol can collide with a generated name.
pub fn ident(name: &str) -> String {
    if name.starts_with('_') || name.starts_with("sdfg") || KEYWORDS.contains(&name) {
        format!("v{name}")
    } else {
        name.to_owned()
    }
}

/// A literal of its exact type.
pub fn literal(l: &Literal) -> String {
    match l {
        Literal::Bool(b) => b.to_string(),
        Literal::Int { value, dtype } => format!("(({}){})", ctype(*dtype), int64(*value)),
        Literal::UInt { value, dtype } => format!("(({}){value}ULL)", ctype(*dtype)),
        Literal::Float { value, dtype } => float(*value, *dtype),
        Literal::Complex { re, im, dtype } => {
            let part = if *dtype == DType::Complex64 {
                DType::Float32
            } else {
                DType::Float64
            };
            format!(
                "{}({}, {})",
                ctype(*dtype),
                float(*re, part),
                float(*im, part)
            )
        }
    }
}

/// A 64-bit integer literal: `-9223372036854775808LL` would be the
/// negation of a literal that does not fit in `long long`, so `i64::MIN`
/// is spelled as a difference.
pub fn int64(c: i64) -> String {
    if c == i64::MIN {
        "(-9223372036854775807LL - 1)".to_owned()
    } else {
        format!("{c}LL")
    }
}

fn float(v: f64, t: DType) -> String {
    let ty = ctype(t);
    if v.is_nan() {
        format!("(({ty})NAN)")
    } else if v.is_infinite() {
        format!("(({ty}){}INFINITY)", if v < 0.0 { "-" } else { "" })
    } else {
        // `{:?}` prints the shortest representation that round-trips.
        format!("(({ty}){v:?})")
    }
}

/// Prints a read of a container element given the printed indices.
pub type ReadPrinter<'a> = Box<dyn Fn(&str, &[String]) -> String + 'a>;

/// Prints symbolic integer expressions; `read` prints a read of a container
/// element (`data[index...]`, interstate code reading data), and every
/// symbol printed is recorded.
pub struct SymPrinter<'a> {
    /// Prints `data[index...]` given the printed indices.
    pub read: ReadPrinter<'a>,
    /// Symbols printed so far.
    pub used: BTreeSet<String>,
}

impl SymPrinter<'_> {
    /// An `int64_t` C++ expression for `e`.
    pub fn expr(&mut self, e: &SymExpr) -> String {
        // Written into one buffer: the emitter prints every bound, offset
        // and stride through here, so it must not allocate per term.
        let mut out = String::from("(");
        let mut term = String::new();
        let mut first = true;
        let mut push = |out: &mut String, part: &str| {
            if first {
                out.push_str(part);
                first = false;
            } else if let Some(neg) = part.strip_prefix('-') {
                out.push_str(" - ");
                out.push_str(neg);
            } else {
                out.push_str(" + ");
                out.push_str(part);
            }
        };
        for t in e.terms() {
            term.clear();
            match t.coeff() {
                1 => {}
                -1 => term.push('-'),
                c => {
                    term.push_str(&int64(c));
                    term.push_str(" * ");
                }
            }
            let mut lead = true;
            for (atom, power) in t.factors() {
                let a = self.atom(atom);
                for _ in 0..*power {
                    if !lead {
                        term.push_str(" * ");
                    }
                    term.push_str(&a);
                    lead = false;
                }
            }
            push(&mut out, &term);
        }
        let c = e.constant_term();
        if c != 0 || e.terms().is_empty() {
            push(&mut out, &int64(c));
        }
        out.push(')');
        out
    }

    fn atom(&mut self, a: &Atom) -> String {
        match a {
            Atom::Symbol(s) => {
                if !self.used.contains(&**s) {
                    self.used.insert(s.to_string());
                }
                ident(s)
            }
            Atom::Read(data, index) => {
                let idx: Vec<String> = index.iter().map(|i| self.expr(i)).collect();
                format!("((int64_t){})", (self.read)(data, &idx))
            }
            Atom::FloorDiv(b) => {
                let (n, d) = (self.expr(&b[0]), self.expr(&b[1]));
                format!("sdfg::ifloordiv({n}, {d})")
            }
            Atom::Mod(b) => {
                let (n, d) = (self.expr(&b[0]), self.expr(&b[1]));
                format!("sdfg::imod({n}, {d})")
            }
            Atom::Pow(b) => {
                let (n, d) = (self.expr(&b[0]), self.expr(&b[1]));
                format!("sdfg::ipow64({n}, {d})")
            }
            Atom::Min(args) => self.fold("sdfg::imin", args),
            Atom::Max(args) => self.fold("sdfg::imax", args),
        }
    }

    fn fold(&mut self, f: &str, args: &[SymExpr]) -> String {
        let mut it = args.iter();
        let Some(first) = it.next() else {
            return "0LL".to_owned();
        };
        let mut acc = self.expr(first);
        for a in it {
            acc = format!("{f}({acc}, {})", self.expr(a));
        }
        acc
    }

    /// A `bool` C++ expression for `c`.
    pub fn cond(&mut self, c: &SymCond) -> String {
        match c.view() {
            CondView::Const(b) => b.to_string(),
            // C++ spells the comparisons as Python does.
            // Printed as `lhs op rhs` with the negative terms moved right
            // (`i < N`, not `i - N < 0`): what a reader expects, and sides
            // that stay in 64 bits where the difference would not.
            CondView::Cmp(e, op) => {
                let (l, r) = e.split_signs();
                format!("({} {} {})", self.expr(&l), op.as_str(), self.expr(&r))
            }
            CondView::Pair(l, op, r) => {
                format!("({} {} {})", self.expr(l), op.as_str(), self.expr(r))
            }
            CondView::And(ops) => {
                let parts: Vec<String> = ops.iter().map(|o| self.cond(o)).collect();
                format!("({})", parts.join(" && "))
            }
            CondView::Or(ops) => {
                let parts: Vec<String> = ops.iter().map(|o| self.cond(o)).collect();
                format!("({})", parts.join(" || "))
            }
        }
    }
}

/// How a tasklet's pointer connector is indexed: `conn[i, j]` is
/// `conn[i * coeff[0] + j * coeff[1]]`.
pub type PointerCoeffs = BTreeMap<String, Vec<String>>;

/// Prints tasklet code as C++ statements.
pub struct TaskletPrinter<'a> {
    /// Types of connectors, for the type checker.
    pub bindings: BTreeMap<String, Binding>,
    /// Whether a free name is a symbol.
    pub is_symbol: &'a dyn Fn(&str) -> bool,
    /// Element offsets per index of each pointer connector.
    pub coeffs: &'a PointerCoeffs,
    /// Symbols referenced.
    pub used: BTreeSet<String>,
    /// Pointer outputs whose memlet combines rather than overwrites: the
    /// write-conflict resolution, and whether other threads may update the
    /// same element (then the store is an atomic update).
    pub updates: BTreeMap<String, (Wcr, bool)>,
}

impl TaskletPrinter<'_> {
    /// The C++ statements of `body`, indented by `indent` levels.
    pub fn body(&mut self, body: &[Stmt], indent: usize, out: &mut String) {
        let saved = self.bindings.clone();
        for s in body {
            self.stmt(s, indent, out);
        }
        self.bindings = saved;
    }

    fn stmt(&mut self, s: &Stmt, indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent);
        match s {
            Stmt::Let { name, dtype, value } => {
                let v = self.expr(value);
                let _ = writeln!(out, "{pad}{} {} = {v};", ctype(*dtype), local(name));
                self.bindings.insert(name.clone(), Binding::Value(*dtype));
            }
            Stmt::Assign { target, value } => {
                let v = self.expr(value);
                let _ = writeln!(out, "{pad}{} = {v};", local(target));
            }
            Stmt::Store { conn, index, value } => {
                let v = self.expr(value);
                let at = self.index(conn, index);
                let target = format!("{}[{at}]", local(conn));
                let line = match self.updates.get(conn) {
                    None => format!("{target} = {v};"),
                    Some(&(w, true)) => format!("sdfg::{}(&{target}, {v});", atomic_update(w)),
                    Some(&(w, false)) => format!("{target} = {};", combine(w, &target, &v)),
                };
                let _ = writeln!(out, "{pad}{line}");
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond);
                let _ = writeln!(out, "{pad}if ({c}) {{");
                self.body(then, indent + 1, out);
                if otherwise.is_empty() {
                    let _ = writeln!(out, "{pad}}}");
                } else {
                    let _ = writeln!(out, "{pad}}} else {{");
                    self.body(otherwise, indent + 1, out);
                    let _ = writeln!(out, "{pad}}}");
                }
            }
        }
    }

    /// Whether `e` reads a symbol (a name no connector or local binds).
    fn reads_symbol(&self, e: &Expr) -> bool {
        let mut names = Vec::new();
        sdfg_ir::code::expr_names(e, &mut names);
        names
            .iter()
            .any(|n| !self.bindings.contains_key(n) && (self.is_symbol)(n))
    }

    fn type_of(&self, e: &Expr) -> DType {
        TypeChecker::new(self.bindings.clone(), self.is_symbol)
            .type_of(e)
            .unwrap_or(DType::Float64)
    }

    fn index(&mut self, conn: &str, index: &[Expr]) -> String {
        let coeffs = self.coeffs.get(conn).cloned().unwrap_or_default();
        let parts: Vec<String> = index
            .iter()
            .zip(coeffs.iter())
            .map(|(i, c)| format!("(int64_t)({}) * {c}", self.expr(i)))
            .collect();
        if parts.is_empty() {
            "0".to_owned()
        } else {
            parts.join(" + ")
        }
    }

    /// A C++ expression for `e`.
    pub fn expr(&mut self, e: &Expr) -> String {
        match e {
            Expr::Lit(l) => literal(l),
            Expr::Var(name) => {
                if !self.bindings.contains_key(name) && (self.is_symbol)(name) {
                    self.used.insert(name.clone());
                    ident(name)
                } else {
                    local(name)
                }
            }
            Expr::Load { conn, index } => {
                let at = self.index(conn, index);
                format!("{}[{at}]", local(conn))
            }
            Expr::Unary { op, arg } => {
                let a = self.expr(arg);
                match op {
                    UnaryOp::Neg => format!("(-{a})"),
                    UnaryOp::Not => format!("(!{a})"),
                    UnaryOp::BitNot if self.type_of(arg) == DType::Bool => format!("(!{a})"),
                    UnaryOp::BitNot => format!("(({})~{a})", ctype(self.type_of(arg))),
                }
            }
            Expr::Binary { op, lhs, rhs } => {
                let t = self.type_of(lhs);
                let (l, r) = (self.expr(lhs), self.expr(rhs));
                let ty = ctype(t);
                use BinaryOp as B;
                match op {
                    B::Add | B::Sub | B::Mul | B::Div => {
                        let sym = op.symbol();
                        if t.is_integer() && t.size_bytes() < 4 || t == DType::Bool {
                            // Integer promotion would widen: wrap back.
                            format!("(({ty})({l} {sym} {r}))")
                        } else {
                            format!("({l} {sym} {r})")
                        }
                    }
                    B::FloorDiv => format!("(({ty})sdfg::floordiv({l}, {r}))"),
                    B::Mod => format!("(({ty})sdfg::mod({l}, {r}))"),
                    B::Pow => match constant_exponent(rhs, t) {
                        Some(Exponent::Integer(n)) if n >= 0 => {
                            format!("(({ty})sdfg::integer_power<{n}>({l}))")
                        }
                        Some(Exponent::Integer(n)) => format!(
                            "(({ty})({ty}(1) / sdfg::integer_power<{}>({l})))",
                            n.unsigned_abs()
                        ),
                        Some(Exponent::Half) => format!("(({ty})sdfg::sqrt({l}))"),
                        None => format!("(({ty})sdfg::pow({l}, {r}))"),
                    },
                    B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                        format!("({l} {} {r})", op.symbol())
                    }
                    B::And => format!("({l} && {r})"),
                    B::Or => format!("({l} || {r})"),
                    B::BitAnd | B::BitOr | B::BitXor | B::Shl | B::Shr => {
                        let sym = match op {
                            B::BitAnd => "&",
                            B::BitOr => "|",
                            B::BitXor => "^",
                            B::Shl => "<<",
                            _ => ">>",
                        };
                        format!("(({ty})({l} {sym} {r}))")
                    }
                }
            }
            Expr::Call { func, args } => {
                // The prelude's minimum and maximum take one type: operands
                // of another are converted to the call's, as the type
                // checker decided it. So are operands reading a symbol: the
                // checker types symbols in code as int64, whatever type the
                // unit declares them with (DaCe's nussinov takes the
                // maximum of an int32 symbol and an int64 sum).
                let same_type = matches!(func, Intrinsic::Min | Intrinsic::Max);
                let t = self.type_of(e);
                let a: Vec<String> = args
                    .iter()
                    .map(|x| {
                        let text = self.expr(x);
                        let from = self.type_of(x);
                        if same_type && (from != t || self.reads_symbol(x)) {
                            format!("sdfg::cast<{}, {}>({text})", ctype(t), ctype(from))
                        } else {
                            text
                        }
                    })
                    .collect();
                format!("sdfg::{}({})", intrinsic(*func), a.join(", "))
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => {
                let (c, a, b) = (self.expr(cond), self.expr(then), self.expr(otherwise));
                format!("({c} ? {a} : {b})")
            }
            Expr::Cast { dtype, arg } => {
                let from = self.type_of(arg);
                let a = self.expr(arg);
                format!("sdfg::cast<{}, {}>({a})", ctype(*dtype), ctype(from))
            }
        }
    }
}

/// The prelude function of an intrinsic: the C++ library's name, and the
/// prelude's own functions where the library has none with the IR's meaning.
fn intrinsic(f: Intrinsic) -> &'static str {
    match f {
        Intrinsic::Min => "minimum",
        Intrinsic::Max => "maximum",
        Intrinsic::Complex => "make_complex",
        Intrinsic::FrexpMantissa => "frexp_mantissa",
        Intrinsic::FrexpExponent => "frexp_exponent",
        Intrinsic::WallClockNs => "wall_clock_ns",
        other => other.cpp_name().unwrap_or("unknown_intrinsic"),
    }
}

/// The C++ name of a tasklet connector or local (kept apart from container
/// and symbol names by a prefix).
pub fn local(name: &str) -> String {
    format!("t_{name}")
}

/// The prelude's atomic update for a write-conflict resolution.
pub fn atomic_update(w: Wcr) -> &'static str {
    match w {
        Wcr::Sum => "atomic_sum",
        Wcr::Product => "atomic_product",
        Wcr::Min => "atomic_min",
        Wcr::Max => "atomic_max",
        Wcr::BitAnd => "atomic_bit_and",
        Wcr::BitOr => "atomic_bit_or",
        Wcr::BitXor => "atomic_bit_xor",
    }
}

/// `old` combined with `new` under a write-conflict resolution, for a thread
/// that owns the element (a read-modify-write, no atomic).
pub fn combine(w: Wcr, old: &str, new: &str) -> String {
    match w {
        Wcr::Sum => format!("{old} + {new}"),
        Wcr::Product => format!("{old} * {new}"),
        Wcr::Min => format!("sdfg::minimum({old}, {new})"),
        Wcr::Max => format!("sdfg::maximum({old}, {new})"),
        Wcr::BitAnd => format!("{old} & {new}"),
        Wcr::BitOr => format!("{old} | {new}"),
        Wcr::BitXor => format!("{old} ^ {new}"),
    }
}

/// The largest constant exponent written as multiplications: binary
/// exponentiation takes at most 2 log2(64) = 12 of them.
const LARGEST_MULTIPLIED_EXPONENT: i64 = 64;

/// A constant exponent of `**` that needs no call of `pow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exponent {
    /// An integer: multiplications by squaring (its reciprocal when
    /// negative).
    Integer(i64),
    /// One half: a square root, as NumPy's `x ** 0.5` is.
    Half,
}

/// The exponent `e` of a power whose operands have type `t`, when it is a
/// constant that multiplications (or a square root) compute: an integer
/// of at most [`LARGEST_MULTIPLIED_EXPONENT`] in magnitude (negative ones
/// for floats and complex numbers only: NumPy refuses integers to negative
/// powers), or one half for floats and complex numbers. Decided on the IR's
/// literal, seen through a cast to `t` (which keeps such a value).
fn constant_exponent(e: &Expr, t: DType) -> Option<Exponent> {
    let inexact = t.is_float() || t.is_complex();
    if t == DType::Bool || !(inexact || t.is_integer()) {
        return None;
    }
    let value = match e {
        Expr::Cast { dtype, arg } if *dtype == t => return constant_exponent(arg, t),
        Expr::Unary {
            op: UnaryOp::Neg,
            arg,
        } => match constant_exponent(arg, t)? {
            Exponent::Integer(n) => return Some(Exponent::Integer(-n)).filter(|_| inexact),
            Exponent::Half => return None,
        },
        Expr::Lit(Literal::Int { value, .. }) => *value as f64,
        Expr::Lit(Literal::UInt { value, .. }) => *value as f64,
        Expr::Lit(Literal::Float { value, .. }) => *value,
        Expr::Lit(Literal::Complex { re, im, .. }) if *im == 0.0 => *re,
        _ => return None,
    };
    if value == 0.5 && inexact {
        return Some(Exponent::Half);
    }
    let n = value as i64;
    let integral = value.fract() == 0.0 && n.abs() <= LARGEST_MULTIPLIED_EXPONENT;
    (integral && (n >= 0 || inexact)).then_some(Exponent::Integer(n))
}
