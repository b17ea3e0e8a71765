//! Python-syntax printing. Everything printed parses back to an equal value.

use std::fmt::{self, Display, Formatter, Write};

use super::cond::{CmpOp, CondView, SymCond};
use super::expr::{Atom, SymExpr, Term};

/// `(atom, power)` if `e` is exactly one factor with coefficient 1 and no constant.
fn single_factor(e: &SymExpr) -> Option<(&Atom, u32)> {
    match (e.terms.as_slice(), e.constant) {
        ([Term { factors, coeff: 1 }], 0) => match factors.as_slice() {
            [(atom, p)] => Some((atom, *p)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` can stand without parentheses as a divisor or an exponent, where Python parses
/// a unary expression (`a // -3`, `a**-1`) or a power (`a // b**2`, `a**b**c`).
fn is_unary_operand(e: &SymExpr) -> bool {
    e.as_int().is_some()
        || matches!(single_factor(e), Some((a, _)) if a.is_primary())
        || matches!(single_factor(e), Some((Atom::Pow(_), 1)))
}

/// Whether `e` can stand without parentheses as the base of `**`.
fn is_power_base(e: &SymExpr) -> bool {
    e.as_int().is_some_and(|c| c >= 0) || matches!(single_factor(e), Some((a, 1)) if a.is_primary())
}

fn write_wrapped(f: &mut Formatter<'_>, e: &impl Display, wrap: bool) -> fmt::Result {
    if wrap {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

fn write_list(f: &mut Formatter<'_>, items: &[SymExpr]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// Writes one term with its sign: `-2*a` first, ` - 2*a` later.
///
/// The literal `9223372036854775808` (2**63) only parses right after a unary
/// minus, so a later term of coefficient `i64::MIN` prints as
/// ` - 9223372036854775807*a - a`.
fn write_term(f: &mut Formatter<'_>, t: &Term, first: bool) -> fmt::Result {
    if t.coeff == i64::MIN && !first {
        let part = |coeff| Term {
            factors: t.factors.clone(),
            coeff,
        };
        write_term(f, &part(-i64::MAX), false)?;
        return write_term(f, &part(-1), false);
    }
    let neg = t.coeff < 0;
    f.write_str(match (first, neg) {
        (true, false) => "",
        (true, true) => "-",
        (false, false) => " + ",
        (false, true) => " - ",
    })?;
    let mag = t.coeff.unsigned_abs();
    // `a // 2` may stand alone, but not after a unary minus or inside a product.
    let alone = mag == 1 && t.factors.len() == 1 && !(first && neg);
    if mag != 1 {
        write!(f, "{mag}*")?;
    }
    for (i, (atom, p)) in t.factors.iter().enumerate() {
        if i > 0 {
            f.write_char('*')?;
        }
        let wrap = match atom {
            Atom::FloorDiv(_) | Atom::Mod(_) => !alone || *p > 1,
            Atom::Pow(_) => *p > 1,
            _ => false,
        };
        write_wrapped(f, atom, wrap)?;
        if *p > 1 {
            write!(f, "**{p}")?;
        }
    }
    Ok(())
}

impl Display for SymExpr {
    /// Positive terms first, then negative ones, then the constant: `N - i - 1`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let pos = self.terms.iter().filter(|t| t.coeff > 0);
        let neg = self.terms.iter().filter(|t| t.coeff < 0);
        let mut first = true;
        for t in pos.chain(neg) {
            write_term(f, t, first)?;
            first = false;
        }
        match self.constant {
            c if first => write!(f, "{c}"),
            0 => Ok(()),
            // 2**63 parses only right after a unary minus.
            i64::MIN => write!(f, " - {} - 1", i64::MAX),
            c => write!(f, " {} {}", if c < 0 { '-' } else { '+' }, c.unsigned_abs()),
        }
    }
}

impl Display for Atom {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let binary = |f: &mut Formatter<'_>, [a, b]: &[SymExpr; 2], op: &str| {
            write_wrapped(f, a, a.terms.len() + usize::from(a.constant != 0) > 1)?;
            f.write_str(op)?;
            write_wrapped(f, b, !is_unary_operand(b))
        };
        match self {
            Atom::Symbol(name) => f.write_str(name),
            Atom::Read(data, index) => {
                write!(f, "{data}[")?;
                write_list(f, index)?;
                f.write_char(']')
            }
            Atom::FloorDiv(ops) => binary(f, ops, " // "),
            Atom::Mod(ops) => binary(f, ops, " % "),
            Atom::Pow(ops) => {
                let [base, exp] = &**ops;
                write_wrapped(f, base, !is_power_base(base))?;
                f.write_str("**")?;
                write_wrapped(f, exp, !is_unary_operand(exp))
            }
            Atom::Min(args) | Atom::Max(args) => {
                f.write_str(if matches!(self, Atom::Min(_)) {
                    "min("
                } else {
                    "max("
                })?;
                write_list(f, args)?;
                f.write_char(')')
            }
        }
    }
}

impl Display for CmpOp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Display for SymCond {
    /// Comparisons print with negative terms moved to the right: `i - N < 0` as `i < N`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (ops, sep) = match self.view() {
            CondView::Const(b) => return f.write_str(if b { "True" } else { "False" }),
            CondView::Cmp(d, op) => {
                let (lhs, rhs) = d.split_signs();
                return write!(f, "{lhs} {op} {rhs}");
            }
            CondView::Pair(lhs, op, rhs) => return write!(f, "{lhs} {op} {rhs}"),
            CondView::And(ops) => (ops, " and "),
            CondView::Or(ops) => (ops, " or "),
        };
        for (i, c) in ops.iter().enumerate() {
            if i > 0 {
                f.write_str(sep)?;
            }
            // Parentheses are needed around `or` inside `and`, and added for readability
            // around `and` inside `or`.
            write_wrapped(f, c, matches!(c.view(), CondView::And(_) | CondView::Or(_)))?;
        }
        Ok(())
    }
}
