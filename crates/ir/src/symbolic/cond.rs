//! Boolean conditions over symbolic expressions, in negation normal form.

use std::collections::{BTreeMap, BTreeSet};

use super::eval::{EvalError, SymEnv};
use super::expr::{Renaming, SymExpr};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmpOp {
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
}

impl CmpOp {
    /// Applies the comparison to two integers.
    pub fn apply(self, lhs: i64, rhs: i64) -> bool {
        match self {
            CmpOp::Eq => lhs == rhs,
            CmpOp::Ne => lhs != rhs,
            CmpOp::Lt => lhs < rhs,
            CmpOp::Le => lhs <= rhs,
            CmpOp::Gt => lhs > rhs,
            CmpOp::Ge => lhs >= rhs,
        }
    }

    /// The Python spelling of the operator.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A boolean condition in canonical form (see the [module docs](super)).
///
/// Like [`SymExpr`], the derived comparison traits compare canonical forms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymCond(Node);

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Node {
    Const(bool),
    /// `expr op 0` with `op` one of `Eq`, `Ne`, `Lt`, `Le`.
    Cmp(SymExpr, CmpOp),
    /// `lhs op rhs` with `op` one of `Eq`, `Ne`, `Lt`, `Le`, kept apart
    /// because `lhs - rhs` does not fit in 64 bits (`i < -2**63`).
    Pair(SymExpr, CmpOp, SymExpr),
    /// At least two sorted, distinct operands, none an `And` or a constant.
    And(Vec<SymCond>),
    /// At least two sorted, distinct operands, none an `Or` or a constant.
    Or(Vec<SymCond>),
}

/// A read-only view of the top level of a [`SymCond`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondView<'a> {
    /// `True` or `False`.
    Const(bool),
    /// `expr op 0`, where `op` is one of `Eq`, `Ne`, `Lt`, `Le`.
    Cmp(&'a SymExpr, CmpOp),
    /// `lhs op rhs`, where `op` is one of `Eq`, `Ne`, `Lt`, `Le`: a
    /// comparison whose difference `lhs - rhs` does not fit in 64 bits, so
    /// it cannot be normalized to `expr op 0` without changing its meaning.
    Pair(&'a SymExpr, CmpOp, &'a SymExpr),
    /// Conjunction of at least two operands.
    And(&'a [SymCond]),
    /// Disjunction of at least two operands.
    Or(&'a [SymCond]),
}

impl SymCond {
    /// The condition that always holds.
    pub const TRUE: SymCond = SymCond(Node::Const(true));
    /// The condition that never holds.
    pub const FALSE: SymCond = SymCond(Node::Const(false));

    /// A constant condition.
    pub const fn constant(value: bool) -> SymCond {
        SymCond(Node::Const(value))
    }

    /// The comparison `lhs op rhs`, normalized to `expr op 0` where the
    /// difference fits in 64 bits, else kept as `lhs op rhs` (a wrapped
    /// difference would invert it: `i < -2**63` is never true, while
    /// `i + 2**63` wraps to `i - 2**63 < 0`).
    pub fn cmp(lhs: SymExpr, op: CmpOp, rhs: SymExpr) -> SymCond {
        let (lhs, op, rhs) = match op {
            CmpOp::Gt => (rhs, CmpOp::Lt, lhs),
            CmpOp::Ge => (rhs, CmpOp::Le, lhs),
            _ => (lhs, op, rhs),
        };
        match SymExpr::exact(|| &lhs - &rhs) {
            Some(d) => Self::compare_zero(d, op),
            None => SymCond(Node::Pair(lhs, op, rhs)),
        }
    }

    /// `-d op 0`, or `0 op d` where `-d` does not fit in 64 bits.
    fn compare_negated(d: SymExpr, op: CmpOp) -> SymCond {
        match SymExpr::exact(|| -&d) {
            Some(n) => Self::compare_zero(n, op),
            None => SymCond(Node::Pair(SymExpr::ZERO, op, d)),
        }
    }

    /// `d op 0` for `op` in `Eq`, `Ne`, `Lt`, `Le`: folds constants, divides by the content
    /// of the coefficients when exact (an `==` that cannot hold folds to `False`) and makes the
    /// leading coefficient of an (in)equality positive.
    fn compare_zero(d: SymExpr, op: CmpOp) -> SymCond {
        if let Some(c) = d.as_int() {
            return Self::constant(op.apply(c, 0));
        }
        let g = d.term_content();
        let exact = d.constant_term().unsigned_abs().is_multiple_of(g.max(1));
        let d = match i64::try_from(g) {
            Ok(g @ 2..) if exact => d.div_exact(g),
            _ => d,
        };
        match op {
            CmpOp::Eq | CmpOp::Ne if !exact => Self::constant(op == CmpOp::Ne),
            CmpOp::Eq | CmpOp::Ne if d.leading_coeff() < 0 => {
                let n = SymExpr::exact(|| -&d);
                SymCond(Node::Cmp(n.unwrap_or(d), op))
            }
            _ => SymCond(Node::Cmp(d, op)),
        }
    }

    /// Conjunction.
    pub fn and(self, other: SymCond) -> SymCond {
        Self::junction([self, other], true)
    }

    /// Disjunction.
    pub fn or(self, other: SymCond) -> SymCond {
        Self::junction([self, other], false)
    }

    /// Conjunction of all operands (`True` if there are none).
    pub fn and_all(ops: impl IntoIterator<Item = SymCond>) -> SymCond {
        Self::junction(ops, true)
    }

    /// Disjunction of all operands (`False` if there are none).
    pub fn or_all(ops: impl IntoIterator<Item = SymCond>) -> SymCond {
        Self::junction(ops, false)
    }

    fn junction(items: impl IntoIterator<Item = SymCond>, is_and: bool) -> SymCond {
        let mut ops = Vec::new();
        for c in items {
            match c.0 {
                // `False` absorbs a conjunction, `True` a disjunction; the other is neutral.
                Node::Const(b) if b == is_and => {}
                Node::Const(b) => return Self::constant(b),
                Node::And(inner) if is_and => ops.extend(inner),
                Node::Or(inner) if !is_and => ops.extend(inner),
                node => ops.push(SymCond(node)),
            }
        }
        ops.sort_unstable();
        ops.dedup();
        let complemented = |c: &SymCond| {
            matches!(c.0, Node::Cmp(..) | Node::Pair(..))
                && ops.binary_search(&c.clone().not()).is_ok()
        };
        if ops.len() > 1 && ops.iter().any(complemented) {
            return Self::constant(!is_and);
        }
        if ops.len() == 1
            && let Some(only) = ops.pop()
        {
            return only;
        }
        match ops.len() {
            0 => Self::constant(is_and),
            _ if is_and => SymCond(Node::And(ops)),
            _ => SymCond(Node::Or(ops)),
        }
    }

    /// Logical negation, pushed into comparisons and through `and`/`or` (De Morgan).
    #[allow(clippy::should_implement_trait)] // `Not` is implemented too; this is the named API.
    pub fn not(self) -> SymCond {
        match self.0 {
            Node::Const(b) => Self::constant(!b),
            Node::Cmp(d, CmpOp::Eq) => SymCond(Node::Cmp(d, CmpOp::Ne)),
            Node::Cmp(d, CmpOp::Ne) => SymCond(Node::Cmp(d, CmpOp::Eq)),
            Node::Cmp(d, CmpOp::Lt) => Self::compare_negated(d, CmpOp::Le),
            Node::Cmp(d, CmpOp::Le) => Self::compare_negated(d, CmpOp::Lt),
            Node::Pair(l, op, r) => {
                let (l, op, r) = match op {
                    CmpOp::Eq => (l, CmpOp::Ne, r),
                    CmpOp::Ne => (l, CmpOp::Eq, r),
                    CmpOp::Lt => (r, CmpOp::Le, l),
                    CmpOp::Le => (r, CmpOp::Lt, l),
                    CmpOp::Gt => (l, CmpOp::Le, r),
                    CmpOp::Ge => (l, CmpOp::Lt, r),
                };
                Self::cmp(l, op, r)
            }
            // Not produced by the constructors, but handled for completeness.
            Node::Cmp(d, CmpOp::Gt) => Self::compare_zero(d, CmpOp::Le),
            Node::Cmp(d, CmpOp::Ge) => Self::compare_zero(d, CmpOp::Lt),
            Node::And(ops) => Self::junction(ops.into_iter().map(SymCond::not), false),
            Node::Or(ops) => Self::junction(ops.into_iter().map(SymCond::not), true),
        }
    }

    /// The value if this is a constant.
    pub fn as_bool(&self) -> Option<bool> {
        match self.0 {
            Node::Const(b) => Some(b),
            _ => None,
        }
    }

    /// The top level of the canonical form.
    pub fn view(&self) -> CondView<'_> {
        match &self.0 {
            Node::Const(b) => CondView::Const(*b),
            Node::Cmp(d, op) => CondView::Cmp(d, *op),
            Node::Pair(l, op, r) => CondView::Pair(l, *op, r),
            Node::And(ops) => CondView::And(ops),
            Node::Or(ops) => CondView::Or(ops),
        }
    }

    /// Evaluates the condition. `and`/`or` are order-independent: an operand that decides the
    /// result (`False` in a conjunction) wins over errors in other operands; otherwise the
    /// first error (in canonical order) is returned.
    pub fn eval(&self, env: &(impl SymEnv + ?Sized)) -> Result<bool, EvalError> {
        let (ops, is_and) = match &self.0 {
            Node::Const(b) => return Ok(*b),
            Node::Cmp(d, op) => {
                return match d.eval(env) {
                    Ok(v) => Ok(op.apply(v, 0)),
                    // `-i - 2**63 < 0` at `i = -2**63`: the difference
                    // overflows where the sides, `-2**63 < i`, do not.
                    Err(EvalError::Overflow { .. }) => {
                        let (l, r) = d.split_signs();
                        Ok(op.apply(l.eval(env)?, r.eval(env)?))
                    }
                    Err(e) => Err(e),
                };
            }
            Node::Pair(l, op, r) => return Ok(op.apply(l.eval(env)?, r.eval(env)?)),
            Node::And(ops) => (ops, true),
            Node::Or(ops) => (ops, false),
        };
        let mut error = None;
        for c in ops {
            match c.eval(env) {
                Ok(b) if b != is_and => return Ok(b),
                Ok(_) => {}
                Err(e) => error = error.or(Some(e)),
            }
        }
        error.map_or(Ok(is_and), Err)
    }

    fn for_each_expr(&self, f: &mut impl FnMut(&SymExpr)) {
        match &self.0 {
            Node::Const(_) => {}
            Node::Cmp(d, _) => f(d),
            Node::Pair(l, _, r) => {
                f(l);
                f(r);
            }
            Node::And(ops) | Node::Or(ops) => ops.iter().for_each(|c| c.for_each_expr(f)),
        }
    }

    /// All symbols occurring in the condition (not container names).
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.for_each_expr(&mut |e| e.collect_names(&mut out, false));
        out
    }

    /// The names of all containers read by the condition.
    pub fn reads(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.for_each_expr(&mut |e| e.collect_names(&mut out, true));
        out
    }

    /// Simultaneous substitution of symbols, re-canonicalized.
    pub fn subs(&self, map: &BTreeMap<String, SymExpr>) -> SymCond {
        self.subs_with(&Renaming {
            symbols: map,
            reads: &BTreeMap::new(),
            shifts: &BTreeMap::new(),
            reindex: None,
        })
    }

    /// The condition reading container `renames[x]` wherever it read `x`
    /// (see [`SymExpr::rename_reads`]).
    pub fn rename_reads(&self, renames: &BTreeMap<String, String>) -> SymCond {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: renames,
            shifts: &BTreeMap::new(),
            reindex: None,
        })
    }

    /// The condition with its reads shifted (see [`SymExpr::shift_reads`]).
    pub fn shift_reads(&self, shifts: &BTreeMap<String, Vec<SymExpr>>) -> SymCond {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: &BTreeMap::new(),
            shifts,
            reindex: None,
        })
    }

    /// The condition with its reads rewritten (see [`SymExpr::reindex_reads`]).
    pub fn reindex_reads(&self, f: &super::expr::Reindex<'_>) -> SymCond {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: &BTreeMap::new(),
            shifts: &BTreeMap::new(),
            reindex: Some(f),
        })
    }

    fn subs_with(&self, map: &Renaming<'_>) -> SymCond {
        match &self.0 {
            Node::Const(b) => Self::constant(*b),
            Node::Cmp(d, op) => match SymExpr::exact(|| d.subs_with(map)) {
                Some(e) => Self::compare_zero(e, *op),
                // `i - N < 0` with `N = -2**63`: compared as `i < N`.
                None => {
                    let (l, r) = d.split_signs();
                    Self::cmp(l.subs_with(map), *op, r.subs_with(map))
                }
            },
            Node::Pair(l, op, r) => Self::cmp(l.subs_with(map), *op, r.subs_with(map)),
            Node::And(ops) => Self::and_all(ops.iter().map(|c| c.subs_with(map))),
            Node::Or(ops) => Self::or_all(ops.iter().map(|c| c.subs_with(map))),
        }
    }
}

impl std::ops::Not for SymCond {
    type Output = SymCond;
    fn not(self) -> SymCond {
        SymCond::not(self)
    }
}

impl From<bool> for SymCond {
    fn from(value: bool) -> SymCond {
        SymCond::constant(value)
    }
}
