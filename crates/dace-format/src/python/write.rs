//! Writing the IR's tasklet code as DaCe Python (see the parent module).

use sdfg_ir::code::{BinaryOp, Expr, Intrinsic, Stmt, UnaryOp};
use sdfg_ir::code::{Binding, TypeChecker};
use sdfg_ir::{DType, Literal};
use std::collections::BTreeMap;
use std::fmt::Write;

use super::{MAX_CODE_BYTES, PythonError};

/// Writes a tasklet body as DaCe Python. `bindings` are the tasklet's
/// connectors as the IR's type checker sees them; every other name is a
/// symbol (an `int64`).
pub fn write_tasklet(
    body: &[Stmt],
    bindings: BTreeMap<String, Binding>,
) -> Result<String, PythonError> {
    let mut w = Writer {
        bindings,
        out: String::new(),
    };
    w.body(body, 0)?;
    if w.out.len() > MAX_CODE_BYTES {
        return Err(PythonError::TooLarge);
    }
    // DaCe reads an empty body as "no code"; `pass` keeps it a statement.
    if w.out.is_empty() {
        w.out.push_str("pass\n");
    }
    Ok(w.out)
}

struct Writer {
    bindings: BTreeMap<String, Binding>,
    out: String,
}

impl Writer {
    fn body(&mut self, body: &[Stmt], indent: usize) -> Result<(), PythonError> {
        let saved = self.bindings.clone();
        for s in body {
            self.stmt(s, indent)?;
            if self.out.len() > MAX_CODE_BYTES {
                return Err(PythonError::TooLarge);
            }
        }
        self.bindings = saved;
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, indent: usize) -> Result<(), PythonError> {
        let pad = "    ".repeat(indent);
        match s {
            Stmt::Let { name, dtype, value } => {
                let v = self.expr(value)?;
                let _ = writeln!(self.out, "{pad}{name}: {} = {v}", type_name(*dtype));
                self.bindings.insert(name.clone(), Binding::Value(*dtype));
            }
            Stmt::Assign { target, value } => {
                let v = self.expr(value)?;
                let _ = writeln!(self.out, "{pad}{target} = {v}");
            }
            // A store through a pointer of rank 0 is DaCe's assignment to
            // an output whose memlet is dynamic (written where assigned).
            Stmt::Store { conn, index, value } if index.is_empty() => {
                let v = self.expr(value)?;
                let _ = writeln!(self.out, "{pad}{conn} = {v}");
            }
            Stmt::Store { conn, index, value } => {
                let at = self.list(index)?;
                let v = self.expr(value)?;
                let _ = writeln!(self.out, "{pad}{conn}[{at}] = {v}");
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let _ = writeln!(self.out, "{pad}if {c}:");
                self.block(then, indent + 1)?;
                if !otherwise.is_empty() {
                    let _ = writeln!(self.out, "{pad}else:");
                    self.block(otherwise, indent + 1)?;
                }
            }
        }
        Ok(())
    }

    fn block(&mut self, body: &[Stmt], indent: usize) -> Result<(), PythonError> {
        if body.is_empty() {
            let _ = writeln!(self.out, "{}pass", "    ".repeat(indent));
            return Ok(());
        }
        self.body(body, indent)
    }

    fn type_of(&self, e: &Expr) -> Result<DType, PythonError> {
        let symbol = |_: &str| true;
        TypeChecker::new(self.bindings.clone(), &symbol)
            .type_of(e)
            .map_err(|err| PythonError::Type(err.to_string()))
    }

    fn list(&self, items: &[Expr]) -> Result<String, PythonError> {
        let parts = items
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(parts.join(", "))
    }

    fn expr(&self, e: &Expr) -> Result<String, PythonError> {
        Ok(match e {
            Expr::Lit(l) => literal(l),
            Expr::Var(v) => v.clone(),
            Expr::Load { conn, index } => {
                if index.is_empty() {
                    conn.clone()
                } else {
                    format!("{conn}[{}]", self.list(index)?)
                }
            }
            Expr::Unary { op, arg } => {
                let t = self.type_of(arg)?;
                let a = self.expr(arg)?;
                match op {
                    UnaryOp::Neg => narrow(t, format!("(- {a})")),
                    UnaryOp::Not => format!("(not {a})"),
                    UnaryOp::BitNot if t == DType::Bool => format!("(not {a})"),
                    UnaryOp::BitNot => narrow(t, format!("(~ {a})")),
                }
            }
            Expr::Binary { op, lhs, rhs } => {
                let t = self.type_of(lhs)?;
                let (l, mut r) = (self.expr(lhs)?, self.expr(rhs)?);
                if let (
                    BinaryOp::Pow,
                    Expr::Unary {
                        op: UnaryOp::Neg,
                        arg,
                    },
                ) = (op, &**rhs)
                    && !matches!(**arg, Expr::Lit(_))
                {
                    // DaCe's unparser fails on `a ** (- x)` unless `x` is
                    // a number: the exponent goes through a cast to its
                    // own type, which changes nothing.
                    r = format!("{}({r})", type_name(self.type_of(rhs)?));
                }
                use BinaryOp as B;
                match op {
                    B::Mod => format!("Mod({l}, {r})"),
                    B::And => format!("({l} and {r})"),
                    B::Or => format!("({l} or {r})"),
                    B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => {
                        format!("({l} {} {r})", op.symbol())
                    }
                    B::Add
                    | B::Sub
                    | B::Mul
                    | B::Div
                    | B::FloorDiv
                    | B::Pow
                    | B::BitAnd
                    | B::BitOr
                    | B::BitXor
                    | B::Shl
                    | B::Shr => narrow(t, format!("({l} {} {r})", op.symbol())),
                }
            }
            Expr::Call { func, args } => self.call(*func, args)?,
            Expr::Select {
                cond,
                then,
                otherwise,
            } => format!(
                "({} if {} else {})",
                self.expr(then)?,
                self.expr(cond)?,
                self.expr(otherwise)?
            ),
            Expr::Cast { dtype, arg } => format!("{}({})", type_name(*dtype), self.expr(arg)?),
        })
    }

    fn call(&self, func: Intrinsic, args: &[Expr]) -> Result<String, PythonError> {
        let a = args
            .iter()
            .map(|e| self.expr(e))
            .collect::<Result<Vec<_>, _>>()?;
        if let (Intrinsic::Min | Intrinsic::Max, [x, y]) = (func, a.as_slice()) {
            let t = self.type_of(&args[0])?;
            let name = if func == Intrinsic::Min { "min" } else { "max" };
            if !t.is_float() {
                return Ok(format!("{name}({x}, {y})"));
            }
            // NumPy's minimum/maximum: a NaN operand is the result.
            let cmp = if func == Intrinsic::Min { "<" } else { ">" };
            return Ok(format!("({x} if (isnan({x}) or ({x} {cmp} {y})) else {y})"));
        }
        if func == Intrinsic::Complex {
            let t = match args.first().map(|e| self.type_of(e)).transpose()? {
                Some(DType::Float32) => DType::Complex64,
                _ => DType::Complex128,
            };
            return Ok(format!("{}({})", type_name(t), a.join(", ")));
        }
        let name = match func {
            Intrinsic::FrexpMantissa => {
                return Err(PythonError::Unsupported("frexp_mantissa".into()));
            }
            Intrinsic::FrexpExponent => {
                return Err(PythonError::Unsupported("frexp_exponent".into()));
            }
            // DaCe's unparser passes calls through: the C++ library's names.
            other => other.cpp_name().ok_or_else(|| {
                PythonError::Type(format!(
                    "`{}` takes {} arguments",
                    other.name(),
                    other.arity()
                ))
            })?,
        };
        Ok(format!("{name}({})", a.join(", ")))
    }
}

/// `text` cast back to `t` where C++'s integer promotion would widen it
/// (types narrower than 32 bits, booleans); as is otherwise.
fn narrow(t: DType, text: String) -> String {
    if t == DType::Bool || (t.is_integer() && t.size_bytes() < 4) {
        format!("{}({text})", type_name(t))
    } else {
        text
    }
}

/// DaCe's Python name of a type (`dace.float64`), which its unparser
/// turns into the C++ type.
pub fn type_name(t: DType) -> String {
    match t {
        DType::Bool => "dace.bool_".to_owned(),
        other => format!("dace.{}", other.name()),
    }
}

/// A literal as DaCe Python: `int64` and `float64` as plain numbers
/// (DaCe's unparser suffixes wide integers itself), other types through
/// their type, non-finite floats by the names the unparser maps to C's
/// `INFINITY` and `NAN`.
pub fn literal(l: &Literal) -> String {
    match *l {
        Literal::Bool(b) => (if b { "True" } else { "False" }).to_owned(),
        Literal::Int { value, dtype } => {
            // `-9223372036854775808` would parse as the negation of a
            // literal that does not fit.
            let text = if value == i64::MIN {
                "(-9223372036854775807 - 1)".to_owned()
            } else if value < 0 {
                format!("({value})")
            } else {
                value.to_string()
            };
            if dtype == DType::Int64 {
                text
            } else {
                format!("{}({text})", type_name(dtype))
            }
        }
        Literal::UInt { value, dtype } => format!("{}({value})", type_name(dtype)),
        Literal::Float { value, dtype } => {
            let text = float(value);
            if dtype == DType::Float64 {
                text
            } else {
                format!("{}({text})", type_name(dtype))
            }
        }
        Literal::Complex { re, im, dtype } => {
            format!("{}({}, {})", type_name(dtype), float(re), float(im))
        }
    }
}

fn float(v: f64) -> String {
    if v.is_nan() {
        "nan".to_owned()
    } else if v.is_infinite() {
        (if v > 0.0 { "inf" } else { "(-inf)" }).to_owned()
    } else if v < 0.0 || (v == 0.0 && v.is_sign_negative()) {
        format!("({v:?})")
    } else {
        format!("{v:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalars(names: &[(&str, DType)]) -> BTreeMap<String, Binding> {
        names
            .iter()
            .map(|(n, t)| ((*n).to_owned(), Binding::Value(*t)))
            .collect()
    }

    fn out(name: &str, t: DType) -> (String, Binding) {
        (name.to_owned(), Binding::Output(t))
    }

    #[test]
    fn operators_get_the_spelling_whose_cpp_meaning_is_the_irs() {
        let mut b = scalars(&[("a", DType::Int64), ("b", DType::Int64)]);
        b.extend([out("o", DType::Int64)]);
        let body = vec![Stmt::assign(
            "o",
            Expr::binary(
                BinaryOp::Add,
                Expr::binary(BinaryOp::Mod, Expr::var("a"), Expr::var("b")),
                Expr::binary(BinaryOp::FloorDiv, Expr::var("a"), Expr::i64(-3)),
            ),
        )];
        assert_eq!(
            write_tasklet(&body, b).unwrap(),
            "o = (Mod(a, b) + (a // (-3)))\n"
        );
    }

    #[test]
    fn narrow_integers_wrap_and_literals_keep_their_type() {
        let mut b = scalars(&[("a", DType::Int8)]);
        b.extend([out("o", DType::Int8), out("f", DType::Float32)]);
        let body = vec![
            Stmt::assign(
                "o",
                Expr::binary(
                    BinaryOp::Add,
                    Expr::var("a"),
                    Expr::Lit(Literal::Int {
                        value: 1,
                        dtype: DType::Int8,
                    }),
                ),
            ),
            Stmt::assign(
                "f",
                Expr::Lit(Literal::Float {
                    value: 0.5,
                    dtype: DType::Float32,
                }),
            ),
        ];
        assert_eq!(
            write_tasklet(&body, b).unwrap(),
            "o = dace.int8((a + dace.int8(1)))\nf = dace.float32(0.5)\n"
        );
    }

    #[test]
    fn float_min_propagates_nan_and_integer_min_is_plain() {
        let mut b = scalars(&[("x", DType::Float64), ("i", DType::Int32)]);
        b.extend([out("o", DType::Float64), out("p", DType::Int32)]);
        let body = vec![
            Stmt::assign(
                "o",
                Expr::call(Intrinsic::Max, vec![Expr::var("x"), Expr::f64(0.0)]),
            ),
            Stmt::assign(
                "p",
                Expr::call(Intrinsic::Min, vec![Expr::var("i"), Expr::var("i")]),
            ),
        ];
        assert_eq!(
            write_tasklet(&body, b).unwrap(),
            "o = (x if (isnan(x) or (x > 0.0)) else 0.0)\np = min(i, i)\n"
        );
    }

    #[test]
    fn locals_branches_and_special_values() {
        let mut b = scalars(&[("x", DType::Float64)]);
        b.extend([out("o", DType::Float64)]);
        let body = vec![
            Stmt::Let {
                name: "t".into(),
                dtype: DType::Float64,
                value: Expr::f64(f64::NEG_INFINITY),
            },
            Stmt::If {
                cond: Expr::binary(BinaryOp::Lt, Expr::var("x"), Expr::var("t")),
                then: vec![Stmt::assign("o", Expr::f64(f64::NAN))],
                otherwise: vec![Stmt::assign("o", Expr::var("t"))],
            },
        ];
        assert_eq!(
            write_tasklet(&body, b).unwrap(),
            "t: dace.float64 = (-inf)\nif (x < t):\n    o = nan\nelse:\n    o = t\n"
        );
    }

    #[test]
    fn frexp_is_refused_by_name() {
        let mut b = scalars(&[("x", DType::Float64)]);
        b.extend([out("o", DType::Float64)]);
        let body = vec![Stmt::assign(
            "o",
            Expr::call(Intrinsic::FrexpMantissa, vec![Expr::var("x")]),
        )];
        assert_eq!(
            write_tasklet(&body, b),
            Err(PythonError::Unsupported("frexp_mantissa".into()))
        );
    }

    #[test]
    fn the_smallest_int64_is_written_so_that_it_parses() {
        assert_eq!(
            literal(&Literal::i64(i64::MIN)),
            "(-9223372036854775807 - 1)"
        );
    }
}
