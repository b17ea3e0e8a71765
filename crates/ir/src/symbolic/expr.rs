//! The canonical polynomial representation and its arithmetic.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Add, Mul, Neg, Sub};
use std::sync::Arc;

thread_local! {
    /// Set when a coefficient or constant of the canonical arithmetic wrapped
    /// around 64 bits since the innermost [`SymExpr::exact`] began.
    static WRAPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The value of an overflowing operation, noting a wraparound for
/// [`SymExpr::exact`]; free when nothing wraps.
fn noted((value, wrapped): (i64, bool)) -> i64 {
    if wrapped {
        WRAPPED.with(|w| w.set(true));
    }
    value
}

fn add_c(a: i64, b: i64) -> i64 {
    noted(a.overflowing_add(b))
}

fn mul_c(a: i64, b: i64) -> i64 {
    noted(a.overflowing_mul(b))
}

/// `a + k*b`, exact where the result fits (`a - b` is not `a + (-b)`:
/// `-2**63 - -2**63` is 0).
fn axpy(a: i64, b: i64, k: i64) -> i64 {
    if k == -1 {
        noted(a.overflowing_sub(b))
    } else {
        add_c(a, mul_c(b, k))
    }
}

/// Largest constant exponent for which a power of a polynomial with several terms is expanded;
/// larger powers stay opaque [`Atom::Pow`] nodes. Powers of a single monomial always fold.
pub const MAX_EXPANDED_EXPONENT: i64 = 16;

/// The largest [`SymExpr::size`] a reader of text (the IR's parser, the
/// DaCe format's) lets an expression reach. Canonical arithmetic expands:
/// a product of `n` sums of distinct symbols has `2**n` terms, a sum of `n`
/// distinct symbols costs time quadratic in `n` to build; a reader checks
/// each step against this bound ([`SymExpr::product_size`],
/// [`SymExpr::power_size`] before, [`SymExpr::size`] after), so a few
/// hundred bytes of text cannot ask for the machine. Shapes, subsets and
/// conditions people and DaCe write take a few dozen.
pub const MAX_READ_SIZE: usize = 4096;

/// A symbolic integer expression, always in canonical form (see the [module docs](super)).
///
/// The derived comparison traits compare canonical forms, so `==` is semantic equality for
/// everything the canonical form normalizes. The order is total and deterministic but has no
/// arithmetic meaning; use [`SymExpr::try_compare`] for that.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymExpr {
    /// Non-constant terms with distinct monomials in `mono_cmp` order, coefficients nonzero.
    pub(super) terms: Vec<Term>,
    /// The constant term.
    pub(super) constant: i64,
}

/// A non-constant term of a [`SymExpr`]: a nonzero coefficient times a monomial.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Term {
    /// Strictly ascending by atom, all powers positive, never empty.
    pub(super) factors: Vec<(Atom, u32)>,
    pub(super) coeff: i64,
}

impl Term {
    /// Whether a factor is a modulo (where [`fold_div_mod`] may apply).
    fn has_mod(&self) -> bool {
        self.factors.iter().any(|(a, _)| matches!(a, Atom::Mod(_)))
    }

    /// The nonzero coefficient.
    pub fn coeff(&self) -> i64 {
        self.coeff
    }

    /// The monomial: distinct atoms in ascending order, each with a positive power.
    pub fn factors(&self) -> &[(Atom, u32)] {
        &self.factors
    }

    fn scaled(mut self, k: i64) -> Term {
        self.coeff = mul_c(self.coeff, k);
        self
    }
}

/// An indivisible factor of a monomial. Operands are canonical [`SymExpr`]s.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    /// A symbol, identified by its name.
    Symbol(Arc<str>),
    /// `data[index, ...]`: an integer read from a container.
    Read(Arc<str>, Vec<SymExpr>),
    /// `[num, den]`: `num // den`, Python floor division.
    FloorDiv(Box<[SymExpr; 2]>),
    /// `[num, den]`: `num % den`, Python modulo (the result has the sign of `den`).
    Mod(Box<[SymExpr; 2]>),
    /// `[base, exp]`: `base**exp` for an exponent that is not a small non-negative constant.
    Pow(Box<[SymExpr; 2]>),
    /// `min(args...)`: at least two sorted arguments, none of them a `min`.
    Min(Vec<SymExpr>),
    /// `max(args...)`: at least two sorted arguments, none of them a `max`.
    Max(Vec<SymExpr>),
}

impl Atom {
    /// The operand expressions of this atom (none for a symbol; the indices of a read).
    pub fn operands(&self) -> &[SymExpr] {
        match self {
            Atom::Symbol(_) => &[],
            Atom::Read(_, args) | Atom::Min(args) | Atom::Max(args) => args,
            Atom::FloorDiv(ops) | Atom::Mod(ops) | Atom::Pow(ops) => ops.as_slice(),
        }
    }

    /// Whether the atom prints without parentheses in every operand position.
    pub(super) fn is_primary(&self) -> bool {
        matches!(
            self,
            Atom::Symbol(_) | Atom::Read(..) | Atom::Min(_) | Atom::Max(_)
        )
    }

    fn subs(&self, map: &Renaming<'_>) -> SymExpr {
        let pair = |ops: &[SymExpr; 2]| {
            let [a, b] = ops;
            (a.subs_with(map), b.subs_with(map))
        };
        match self {
            Atom::Symbol(name) => match map.symbols.get(&**name) {
                Some(e) => e.clone(),
                None => SymExpr::from_atom(self.clone()),
            },
            Atom::Read(data, index) => {
                let shift = map.shifts.get(&**data);
                if let Some(f) = map.reindex {
                    let index: Vec<SymExpr> = index.iter().map(|e| e.subs_with(map)).collect();
                    if let Some((to, at)) = f(data, &index) {
                        return SymExpr::from_atom(Atom::Read(Arc::from(to.as_str()), at));
                    }
                    return SymExpr::from_atom(Atom::Read(data.clone(), index));
                }
                SymExpr::from_atom(Atom::Read(
                    map.reads
                        .get(&**data)
                        .map_or_else(|| data.clone(), |n| Arc::from(n.as_str())),
                    index
                        .iter()
                        .enumerate()
                        .map(|(d, e)| {
                            let e = e.subs_with(map);
                            match shift.and_then(|s| s.get(d)) {
                                Some(by) => e + by.clone(),
                                None => e,
                            }
                        })
                        .collect(),
                ))
            }
            Atom::FloorDiv(ops) => {
                let (a, b) = pair(ops);
                a.floor_div(&b)
            }
            Atom::Mod(ops) => {
                let (a, b) = pair(ops);
                a.modulo(&b)
            }
            Atom::Pow(ops) => {
                let (a, b) = pair(ops);
                a.pow(&b)
            }
            Atom::Min(args) | Atom::Max(args) => {
                let mut it = args.iter().map(|e| e.subs_with(map));
                match it.next() {
                    Some(first) => extremum(first, it, matches!(self, Atom::Max(_))),
                    None => SymExpr::from_atom(self.clone()),
                }
            }
        }
    }
}

/// What a substitution replaces: symbols by expressions, and the names of
/// the containers read (`A[i]` becoming `host_A[i]`).
pub(super) struct Renaming<'m> {
    pub(super) symbols: &'m BTreeMap<String, SymExpr>,
    pub(super) reads: &'m BTreeMap<String, String>,
    /// Added to the indices of reads of a container, per dimension.
    pub(super) shifts: &'m BTreeMap<String, Vec<SymExpr>>,
    /// A read of container `x` at the (rewritten) index `i` becomes a
    /// read of `x'` at `i'` where this gives `(x', i')`.
    pub(super) reindex: Option<&'m Reindex<'m>>,
}

/// How [`SymExpr::reindex_reads`] rewrites a read: the container and index
/// read instead, or `None` to leave it.
pub type Reindex<'a> = dyn Fn(&str, &[SymExpr]) -> Option<(String, Vec<SymExpr>)> + 'a;

/// Python floor division of constants, wrapping (`i64::MIN // -1 == i64::MIN`, noted for
/// [`SymExpr::exact`]). `b != 0`.
pub(super) fn py_floor_div(a: i64, b: i64) -> i64 {
    let q = noted(a.overflowing_div(b));
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// Python modulo of constants (the result has the sign of `b`). `b != 0`.
pub(super) fn py_mod(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn pow_c(base: i64, exp: u64) -> i64 {
    match base {
        0 | 1 => {
            if exp == 0 {
                1
            } else {
                base
            }
        }
        -1 => 1 - 2 * (exp % 2) as i64,
        _ => match u32::try_from(exp) {
            Ok(e) => noted(base.overflowing_pow(e)),
            Err(_) => noted((0, true)),
        },
    }
}

/// `a + k*b` over sorted term lists (a merge), with constants `ac` and `bc`.
fn lin(
    a: impl IntoIterator<Item = Term>,
    ac: i64,
    b: impl IntoIterator<Item = Term>,
    bc: i64,
    k: i64,
) -> SymExpr {
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    let mut terms = Vec::with_capacity(a.size_hint().0 + b.size_hint().0);
    loop {
        let ord = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => mono_cmp(&x.factors, &y.factors),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        let term = match ord {
            Ordering::Less => a.next(),
            Ordering::Greater => b.next().map(|t| t.scaled(k)),
            Ordering::Equal => a.next().zip(b.next()).map(|(mut x, y)| {
                x.coeff = axpy(x.coeff, y.coeff, k);
                x
            }),
        };
        terms.extend(term.filter(|t| t.coeff != 0));
    }
    let sum = SymExpr {
        terms,
        constant: axpy(ac, bc, k),
    };
    if sum.terms.iter().any(Term::has_mod) {
        fold_div_mod(sum)
    } else {
        sum
    }
}

/// Folds `c*m*d*(x // d) + c*m*(x % d)` into `c*m*x` (Python's `x == (x //
/// d) * d + x % d`, for every `x` and every non-zero `d`), repeatedly: the
/// flat index of a reshape, `i // M * M + i % M`, is `i` again, so a copy
/// through a reshaped view is seen to be the contiguous block it is. `d` is
/// a constant or one monomial; the two terms must have the one coefficient
/// the identity needs (anything else stays as it is, correct but unfolded).
fn fold_div_mod(mut sum: SymExpr) -> SymExpr {
    'again: loop {
        for (i, t) in sum.terms.iter().enumerate() {
            for (j, (atom, power)) in t.factors.iter().enumerate() {
                let Atom::Mod(ops) = atom else { continue };
                let [x, d] = ops.as_ref();
                if *power != 1 {
                    continue;
                }
                let (d_factors, d_coeff): (&[(Atom, u32)], i64) =
                    match (d.terms.as_slice(), d.constant) {
                        ([], c) if c != 0 => (&[], c),
                        ([m], 0) => (&m.factors, m.coeff),
                        _ => continue,
                    };
                let mut rest = t.factors.clone();
                rest.remove(j);
                let quotient = [(Atom::FloorDiv(Box::new([x.clone(), d.clone()])), 1)];
                let partner = mul_mono(&rest, &mul_mono(d_factors, &quotient));
                let coeff = mul_c(t.coeff, d_coeff);
                let Some(p) = sum
                    .terms
                    .iter()
                    .position(|u| u.coeff == coeff && u.factors == partner)
                else {
                    continue;
                };
                let scale = if rest.is_empty() {
                    SymExpr::int(t.coeff)
                } else {
                    SymExpr {
                        terms: vec![Term {
                            factors: rest,
                            coeff: t.coeff,
                        }],
                        constant: 0,
                    }
                };
                let folded = mul_ref(&scale, x);
                let (first, second) = (i.min(p), i.max(p));
                sum.terms.remove(second);
                sum.terms.remove(first);
                sum = lin(sum.terms, sum.constant, folded.terms, folded.constant, 1);
                continue 'again;
            }
        }
        return sum;
    }
}

/// The order of terms in a canonical sum: graded lexicographic, i.e. higher total degree
/// first, then the larger power of the smallest atom first (`a**2 + 2*a*b + b**2 + a + 1`).
fn mono_cmp(x: &[(Atom, u32)], y: &[(Atom, u32)]) -> Ordering {
    let degree = |m: &[(Atom, u32)]| m.iter().map(|(_, p)| u64::from(*p)).sum::<u64>();
    let mut by_factor = x
        .iter()
        .zip(y)
        .map(|((a, p), (b, q))| a.cmp(b).then(q.cmp(p)));
    degree(y)
        .cmp(&degree(x))
        .then_with(|| by_factor.find(|o| o.is_ne()).unwrap_or(Ordering::Equal))
        .then(x.len().cmp(&y.len()))
}

/// Sorts terms, merges equal monomials and drops zero coefficients.
fn collect_terms(mut terms: Vec<Term>) -> Vec<Term> {
    terms.sort_unstable_by(|x, y| mono_cmp(&x.factors, &y.factors));
    terms.dedup_by(|later, kept| {
        let same = later.factors == kept.factors;
        if same {
            kept.coeff = add_c(kept.coeff, later.coeff);
        }
        same
    });
    terms.retain(|t| t.coeff != 0);
    terms
}

/// Product of two monomials. Powers saturate at `u32::MAX` (degrees beyond that are not
/// representable; no realistic expression gets there).
fn mul_mono(mut x: &[(Atom, u32)], mut y: &[(Atom, u32)]) -> Vec<(Atom, u32)> {
    let mut out = Vec::with_capacity(x.len() + y.len());
    loop {
        match (x.split_first(), y.split_first()) {
            (Some(((a, p), xr)), Some(((b, q), yr))) => match a.cmp(b) {
                Ordering::Less => {
                    out.push((a.clone(), *p));
                    x = xr;
                }
                Ordering::Greater => {
                    out.push((b.clone(), *q));
                    y = yr;
                }
                Ordering::Equal => {
                    out.push((a.clone(), p.saturating_add(*q)));
                    (x, y) = (xr, yr);
                }
            },
            _ => {
                out.extend_from_slice(x);
                out.extend_from_slice(y);
                return out;
            }
        }
    }
}

/// Joins the powers of one symbol in a monomial: `R * R**(K - 1)` is
/// `R**K`, `R**i * R**j` is `R**(i + j)`. Only where the joined exponent is
/// not a constant (a constant one would fold into a polynomial: left as it
/// is, correct but unjoined). Not part of the canonical form, which keeps
/// the factors a product was built from (`a * R**i * R**(K - i - 1) + k`
/// shows the dependence test the stride `R**(K - i - 1)` that separates
/// `k`): see [`SymExpr::joined_powers`].
fn merge_powers(factors: Vec<(Atom, u32)>) -> Vec<(Atom, u32)> {
    let base = |a: &Atom| match a {
        Atom::Pow(ops) => ops[0].is_symbol().map(str::to_owned),
        _ => None,
    };
    if !factors.iter().any(|(a, _)| base(a).is_some()) {
        return factors;
    }
    // Per symbol with a power atom: the joined exponent, and how many
    // factors it joins.
    let mut joined: BTreeMap<String, (SymExpr, usize)> = BTreeMap::new();
    for (a, p) in &factors {
        if let Some(b) = base(a) {
            let Atom::Pow(ops) = a else { continue };
            let e = joined.entry(b).or_insert((SymExpr::ZERO, 0));
            e.0 = &e.0 + &(&ops[1] * i64::from(*p));
            e.1 += 1;
        }
    }
    for (a, p) in &factors {
        if let Atom::Symbol(n) = a
            && let Some(e) = joined.get_mut(&**n)
        {
            e.0 = &e.0 + &SymExpr::int(i64::from(*p));
            e.1 += 1;
        }
    }
    joined.retain(|_, (e, n)| *n > 1 && e.as_int().is_none());
    if joined.is_empty() {
        return factors;
    }
    let mut out: Vec<(Atom, u32)> = factors
        .into_iter()
        .filter(|(a, _)| {
            let name = match a {
                Atom::Symbol(n) => Some(n.to_string()),
                other => base(other),
            };
            !name.is_some_and(|n| joined.contains_key(&n))
        })
        .collect();
    for (b, (e, _)) in joined {
        out.push((Atom::Pow(Box::new([SymExpr::symbol(b), e])), 1));
    }
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

fn mul_ref(a: &SymExpr, b: &SymExpr) -> SymExpr {
    if let Some(k) = a.as_int() {
        return b.times(k);
    }
    if let Some(k) = b.as_int() {
        return a.times(k);
    }
    let mut terms = Vec::with_capacity((a.terms.len() + 1) * (b.terms.len() + 1));
    for x in &a.terms {
        for y in &b.terms {
            let factors = mul_mono(&x.factors, &y.factors);
            terms.push(Term {
                factors,
                coeff: mul_c(x.coeff, y.coeff),
            });
        }
    }
    for (ts, k) in [(&a.terms, b.constant), (&b.terms, a.constant)] {
        if k != 0 {
            terms.extend(ts.iter().map(|t| t.clone().scaled(k)));
        }
    }
    SymExpr {
        terms: collect_terms(terms),
        constant: mul_c(a.constant, b.constant),
    }
}

/// Canonical `min`/`max` of `first` and `rest`.
fn extremum(first: SymExpr, rest: impl IntoIterator<Item = SymExpr>, is_max: bool) -> SymExpr {
    let mut args = Vec::new();
    for a in std::iter::once(first).chain(rest) {
        let nested = matches!(
            (a.as_atom(), is_max),
            (Some(Atom::Min(_)), false) | (Some(Atom::Max(_)), true)
        );
        if !nested {
            args.push(a);
            continue;
        }
        match a.into_atom() {
            Ok(Atom::Min(inner) | Atom::Max(inner)) => args.extend(inner),
            Ok(atom) => args.push(SymExpr::from_atom(atom)),
            Err(a) => args.push(a),
        }
    }
    // Arguments differing only by a constant are adjacent after sorting by terms; keep the
    // dominating one (smallest constant for min, largest for max). Constants fold the same way.
    args.sort_unstable_by(|x, y| {
        let by_const = if is_max {
            y.constant.cmp(&x.constant)
        } else {
            x.constant.cmp(&y.constant)
        };
        x.terms.cmp(&y.terms).then(by_const)
    });
    args.dedup_by(|later, kept| later.terms == kept.terms);
    if args.len() == 1
        && let Some(only) = args.pop()
    {
        return only;
    }
    SymExpr::from_atom(if is_max {
        Atom::Max(args)
    } else {
        Atom::Min(args)
    })
}

/// Builds the opaque `num // den` or `num % den` after normalizing the sign of the divisor's
/// leading coefficient and the common content: `a // -b == (-a) // b`,
/// `a % -b == -((-a) % b)`, `(g*a) // (g*b) == a // b`, `(g*a) % (g*b) == g*(a % b)`.
fn division_atom(mut num: SymExpr, mut den: SymExpr, is_mod: bool) -> SymExpr {
    let mut scale = 1;
    let lead = den.leading_coeff();
    if lead < 0 && lead != i64::MIN {
        (num, den) = (-num, -den);
        if is_mod {
            scale = -1;
        }
    }
    if !den.is_zero() {
        let g = gcd(num.content(), den.content());
        if let Ok(g @ 2..) = i64::try_from(g) {
            (num, den) = (num.div_exact(g), den.div_exact(g));
            if is_mod {
                scale *= g;
            }
        }
    }
    let ops = Box::new([num, den]);
    let atom = SymExpr::from_atom(if is_mod {
        Atom::Mod(ops)
    } else {
        Atom::FloorDiv(ops)
    });
    atom.scaled(scale)
}

impl SymExpr {
    /// The product of `factors` when every one is a constant and the
    /// product fits in 64 bits (checked, unlike the canonical arithmetic):
    /// the constant size of a map or a reduction, for launch geometry and
    /// lowering decisions; `None` where any factor is symbolic.
    pub fn constant_product<E: std::borrow::Borrow<SymExpr>>(
        factors: impl IntoIterator<Item = E>,
    ) -> Option<i64> {
        factors.into_iter().try_fold(1i64, |acc, f| {
            f.borrow().as_int().and_then(|c| acc.checked_mul(c))
        })
    }
}

impl SymExpr {
    /// Runs `f`, arithmetic on canonical expressions, and gives its result
    /// only if no coefficient or constant wrapped around 64 bits on the way.
    ///
    /// The canonical arithmetic (the operators, [`SymExpr::subs`],
    /// [`SymExpr::pow`], ...) is total and wraps like C++'s `int64_t`, which
    /// the analyses need: they compare canonical forms and never fail. Where
    /// a wrapped value would change a program's meaning (the frontend folding
    /// Python integers, which never wrap; a comparison normalized to
    /// `lhs - rhs < 0`), the caller asks for exactness instead and reports or
    /// avoids the overflow. Calls nest: an overflow is reported to the
    /// innermost `exact` around it only, whose caller handles it (a
    /// comparison kept as a pair inside a parse is no error of the parse).
    pub fn exact<T>(f: impl FnOnce() -> T) -> Option<T> {
        let before = WRAPPED.with(|w| w.replace(false));
        let value = f();
        let wrapped = WRAPPED.with(|w| w.replace(before));
        (!wrapped).then_some(value)
    }

    /// Splits `self` into `(lhs, rhs)` with `self == lhs - rhs`, the
    /// negative terms and constant going right, negated (so `i - N` is
    /// `(i, N)`), exactly: a coefficient of `i64::MIN`, whose negation does
    /// not fit, stays left.
    pub fn split_signs(&self) -> (SymExpr, SymExpr) {
        let right = |c: i64| c < 0 && c != i64::MIN;
        let part = |goes_right: bool| {
            let pick = |c: i64| if goes_right { -c } else { c };
            SymExpr {
                terms: self
                    .terms
                    .iter()
                    .filter(|t| right(t.coeff) == goes_right)
                    .map(|t| Term {
                        factors: t.factors.clone(),
                        coeff: pick(t.coeff),
                    })
                    .collect(),
                constant: if right(self.constant) == goes_right {
                    pick(self.constant)
                } else {
                    0
                },
            }
        };
        (part(false), part(true))
    }

    /// The constant 0.
    pub const ZERO: SymExpr = SymExpr::int(0);
    /// The constant 1.
    pub const ONE: SymExpr = SymExpr::int(1);

    /// An integer constant.
    pub const fn int(value: i64) -> SymExpr {
        SymExpr {
            terms: Vec::new(),
            constant: value,
        }
    }

    /// A symbol. Two symbols are equal iff their names are.
    pub fn symbol(name: impl Into<String>) -> SymExpr {
        Self::from_atom(Atom::Symbol(name.into().into()))
    }

    /// An integer read `data[index, ...]` from a container.
    pub fn read(data: impl Into<String>, index: Vec<SymExpr>) -> SymExpr {
        Self::from_atom(Atom::Read(data.into().into(), index))
    }

    fn from_atom(atom: Atom) -> SymExpr {
        SymExpr {
            terms: vec![Term {
                factors: vec![(atom, 1)],
                coeff: 1,
            }],
            constant: 0,
        }
    }

    fn into_atom(mut self) -> Result<Atom, SymExpr> {
        if self.as_atom().is_some()
            && let Some((atom, _)) = self.terms.pop().and_then(|mut t| t.factors.pop())
        {
            return Ok(atom);
        }
        Err(self)
    }

    fn scaled(mut self, k: i64) -> SymExpr {
        match k {
            0 => Self::ZERO,
            1 => self,
            _ => {
                self.constant = mul_c(self.constant, k);
                for t in &mut self.terms {
                    t.coeff = mul_c(t.coeff, k);
                }
                self.terms.retain(|t| t.coeff != 0);
                self
            }
        }
    }

    fn times(&self, k: i64) -> SymExpr {
        if k == 0 {
            Self::ZERO
        } else {
            self.clone().scaled(k)
        }
    }

    /// Exact division of every coefficient by `g > 0` (the caller guarantees divisibility).
    pub(super) fn div_exact(mut self, g: i64) -> SymExpr {
        self.constant = self.constant.wrapping_div(g);
        for t in &mut self.terms {
            t.coeff = t.coeff.wrapping_div(g);
        }
        self
    }

    /// GCD of the absolute values of the non-constant coefficients (0 for a constant).
    pub(super) fn term_content(&self) -> u64 {
        self.terms
            .iter()
            .fold(0, |g, t| gcd(g, t.coeff.unsigned_abs()))
    }

    fn content(&self) -> u64 {
        gcd(self.term_content(), self.constant.unsigned_abs())
    }

    /// The coefficient of the first (highest-degree) term, or the constant if there is none.
    pub(super) fn leading_coeff(&self) -> i64 {
        self.terms.first().map_or(self.constant, |t| t.coeff)
    }

    /// `min(self, other)`, canonicalized. (Shadows [`Ord::min`], which is structural.)
    pub fn min(self, other: SymExpr) -> SymExpr {
        extremum(self, [other], false)
    }

    /// `max(self, other)`, canonicalized. (Shadows [`Ord::max`], which is structural.)
    pub fn max(self, other: SymExpr) -> SymExpr {
        extremum(self, [other], true)
    }

    /// The canonical `min` of all arguments, `None` if there are none.
    pub fn min_all(args: impl IntoIterator<Item = SymExpr>) -> Option<SymExpr> {
        let mut it = args.into_iter();
        it.next().map(|first| extremum(first, it, false))
    }

    /// The canonical `max` of all arguments, `None` if there are none.
    pub fn max_all(args: impl IntoIterator<Item = SymExpr>) -> Option<SymExpr> {
        let mut it = args.into_iter();
        it.next().map(|first| extremum(first, it, true))
    }

    /// Python floor division `self // den`. `0 // x` simplifies to `0` for every `x`.
    pub fn floor_div(&self, den: &SymExpr) -> SymExpr {
        if self.is_zero() {
            return Self::ZERO;
        }
        match (den.as_int(), self.as_int()) {
            (Some(0) | None, _) => division_atom(self.clone(), den.clone(), false),
            (Some(1), _) => self.clone(),
            (Some(-1), _) => -self,
            (Some(d), Some(n)) => Self::int(py_floor_div(n, d)),
            (Some(d), None) => {
                let (q, r) = self.split_multiples(d);
                if r.terms.is_empty() {
                    q
                } else {
                    q + division_atom(r, den.clone(), false)
                }
            }
        }
    }

    /// Python modulo `self % den` (sign of the divisor). `0 % x` simplifies to `0` for every `x`.
    pub fn modulo(&self, den: &SymExpr) -> SymExpr {
        if self.is_zero() {
            return Self::ZERO;
        }
        match (den.as_int(), self.as_int()) {
            (Some(0) | None, _) => division_atom(self.clone(), den.clone(), true),
            (Some(1 | -1), _) => Self::ZERO,
            (Some(d), Some(n)) => Self::int(py_mod(n, d)),
            (Some(d), None) => {
                let (_, r) = self.split_multiples(d);
                if r.terms.is_empty() {
                    r
                } else {
                    division_atom(r, den.clone(), true)
                }
            }
        }
    }

    /// Splits `self == d*q + r`: `q` takes the terms whose coefficient is a multiple of `d`,
    /// and the constant is split Python-style, so `r`'s constant lies between 0 and `d`.
    fn split_multiples(&self, d: i64) -> (SymExpr, SymExpr) {
        let (mut q, mut r) = (Vec::new(), Vec::new());
        for t in &self.terms {
            if t.coeff.wrapping_rem(d) == 0 {
                q.push(Term {
                    factors: t.factors.clone(),
                    coeff: noted(t.coeff.overflowing_div(d)),
                });
            } else {
                r.push(t.clone());
            }
        }
        let c = self.constant;
        (
            SymExpr {
                terms: q,
                constant: py_floor_div(c, d),
            },
            SymExpr {
                terms: r,
                constant: py_mod(c, d),
            },
        )
    }

    /// `self` with the powers of each symbol in every term joined (`R *
    /// R**(K - 1)` is `R**K`): the form in which two sizes built from
    /// different factorings compare equal, as a reshape's shape `(R,
    /// R**(K - 1))` and the `R**K` elements it reshapes. Comparisons of
    /// sizes use it; the canonical form itself keeps the factors (see
    /// `merge_powers`).
    pub fn joined_powers(&self) -> SymExpr {
        let terms = self
            .terms
            .iter()
            .map(|t| Term {
                factors: merge_powers(t.factors.clone()),
                coeff: t.coeff,
            })
            .collect();
        SymExpr {
            terms: collect_terms(terms),
            constant: self.constant,
        }
    }

    /// `self ** exp`. Constant exponents 0 and 1 fold; positive constant exponents fold into
    /// constants and monomials and expand other polynomials up to [`MAX_EXPANDED_EXPONENT`].
    /// Everything else (including negative exponents) stays an opaque [`Atom::Pow`].
    pub fn pow(&self, exp: &SymExpr) -> SymExpr {
        match exp.as_int() {
            Some(0) => return Self::ONE,
            Some(1) => return self.clone(),
            Some(e @ 2..) => {
                if let Some(b) = self.as_int() {
                    return Self::int(pow_c(b, e.unsigned_abs()));
                }
                if let Some(m) = self.monomial_pow(e) {
                    return m;
                }
                if e <= MAX_EXPANDED_EXPONENT
                    && let Ok(e) = u32::try_from(e)
                {
                    return self.expand_pow(e);
                }
            }
            _ => {}
        }
        Self::from_atom(Atom::Pow(Box::new([self.clone(), exp.clone()])))
    }

    fn monomial_pow(&self, e: i64) -> Option<SymExpr> {
        let ([t], 0) = (self.terms.as_slice(), self.constant) else {
            return None;
        };
        let e = u32::try_from(e).ok()?;
        let factors: Option<Vec<_>> = t
            .factors
            .iter()
            .map(|(a, p)| Some((a.clone(), p.checked_mul(e)?)))
            .collect();
        let coeff = pow_c(t.coeff, u64::from(e));
        let terms = if coeff == 0 {
            Vec::new()
        } else {
            vec![Term {
                factors: factors?,
                coeff,
            }]
        };
        Some(SymExpr { terms, constant: 0 })
    }

    fn expand_pow(&self, mut e: u32) -> SymExpr {
        let (mut acc, mut base) = (Self::ONE, self.clone());
        loop {
            if e & 1 == 1 {
                acc = &acc * &base;
            }
            e >>= 1;
            if e == 0 {
                return acc;
            }
            base = &base * &base;
        }
    }

    /// The value if this is a constant.
    pub fn as_int(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// `self - other` when it is a constant, without building the
    /// difference: both have the same non-constant terms (the canonical form
    /// makes that the only way), and the constants' difference fits. The
    /// validator asks this of every bound of every memlet, so it must not
    /// allocate.
    pub fn const_difference(&self, other: &SymExpr) -> Option<i64> {
        if self.terms != other.terms {
            return None;
        }
        self.constant.checked_sub(other.constant)
    }

    /// Calls `f` on every symbol named anywhere (read indices and opaque
    /// nodes included, container names not), once per occurrence, until it
    /// returns `true`; returns whether it did. [`free_symbols`](Self::free_symbols)
    /// without building a set.
    pub fn any_symbol<'a>(&'a self, f: &mut impl FnMut(&'a str) -> bool) -> bool {
        self.any_atom(&mut |a| match a {
            Atom::Symbol(name) => f(name),
            _ => false,
        })
    }

    /// Whether some `//` or `%` in the expression divides by the constant
    /// 0: evaluating it fails for every value of the symbols, so a layout
    /// holding one describes nothing (the validator refuses it, rather than
    /// leave the failure to whichever run allocates the container).
    pub fn divides_by_zero(&self) -> bool {
        self.any_atom(&mut |a| match a {
            Atom::FloorDiv(ops) | Atom::Mod(ops) => ops[1].is_zero(),
            _ => false,
        })
    }

    /// Whether this is the constant 0.
    pub fn is_zero(&self) -> bool {
        self.terms.is_empty() && self.constant == 0
    }

    /// The name if this is exactly one symbol.
    pub fn is_symbol(&self) -> Option<&str> {
        match self.as_atom()? {
            Atom::Symbol(name) => Some(name),
            _ => None,
        }
    }

    /// The atom if this is exactly one atom (coefficient 1, power 1, no constant).
    pub fn as_atom(&self) -> Option<&Atom> {
        match (self.terms.as_slice(), self.constant) {
            ([Term { factors, coeff: 1 }], 0) => match factors.as_slice() {
                [(atom, 1)] => Some(atom),
                _ => None,
            },
            _ => None,
        }
    }

    /// The constant term.
    pub fn constant_term(&self) -> i64 {
        self.constant
    }

    /// The non-constant terms in canonical order.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// How much the canonical form holds at its top level: its terms and
    /// their factors, plus one (the arguments of its atoms not counted,
    /// each bounded where it was built). The work of an operation is
    /// bounded by its operands' sizes ([`MAX_READ_SIZE`]).
    pub fn size(&self) -> usize {
        1 + self
            .terms
            .iter()
            .map(|t| 1 + t.factors.len())
            .sum::<usize>()
    }

    /// An upper bound of the [`size`](Self::size) of `self * other`, and
    /// of the work of computing it: each term of the product is a term (or
    /// the constant) of each side, with their factors.
    pub fn product_size(&self, other: &SymExpr) -> usize {
        self.size().saturating_mul(other.size())
    }

    /// An upper bound of the [`size`](Self::size) of `self ** exp`, and of
    /// the work of computing it: a polynomial of `t` terms (the constant
    /// counted) expanded to the power `e` has at most `C(t + e - 1, e)`
    /// terms of at most `e` times as many factors; other powers fold or
    /// stay one atom.
    pub fn power_size(&self, exp: &SymExpr) -> usize {
        let Some(e) = exp
            .as_int()
            .filter(|e| (2..=MAX_EXPANDED_EXPONENT).contains(e))
        else {
            return self.size();
        };
        let e = e as usize;
        let t = self.terms.len() + usize::from(self.constant != 0);
        if t <= 1 {
            return self.size().saturating_mul(e);
        }
        // C(t + e - 1, e), saturating.
        let mut multisets = 1usize;
        for k in 1..=e {
            multisets = multisets.saturating_mul(t + k - 1) / k;
        }
        let factors = self
            .terms
            .iter()
            .map(|t| t.factors.len())
            .max()
            .unwrap_or(0);
        multisets.saturating_mul(1 + e * factors)
    }

    /// The greatest monomial dividing every term of every expression of
    /// `exprs`: the gcd of their coefficients (positive) times the atoms
    /// common to all of them, each with its least power. `None` when there
    /// is no term at all or a constant term (a constant is divided by no
    /// monomial but 1, which this does not report). The dependence test
    /// uses it for strides: `k + N * g` and `k' + N * g'` can only be equal
    /// for `k == k'` when `k` runs over fewer than `N` values.
    pub fn common_monomial(exprs: &[&SymExpr]) -> Option<SymExpr> {
        let mut terms = exprs.iter().flat_map(|e| e.terms.iter());
        let first = terms.next()?;
        if exprs.iter().any(|e| e.constant != 0) {
            return None;
        }
        let mut coeff = first.coeff.unsigned_abs();
        let mut factors = first.factors.clone();
        for t in terms {
            coeff = gcd(coeff, t.coeff.unsigned_abs());
            factors.retain_mut(
                |(atom, power)| match t.factors.iter().find(|(a, _)| a == atom) {
                    Some((_, p)) => {
                        *power = (*power).min(*p);
                        true
                    }
                    None => false,
                },
            );
        }
        let coeff = i64::try_from(coeff).ok()?;
        if factors.is_empty() {
            return Some(SymExpr::int(coeff));
        }
        Some(SymExpr {
            terms: vec![Term { factors, coeff }],
            constant: 0,
        })
    }

    /// Whether `f` holds for any atom, at any depth (including inside operands).
    fn any_atom<'a>(&'a self, f: &mut impl FnMut(&'a Atom) -> bool) -> bool {
        for (atom, _) in self.terms.iter().flat_map(|t| &t.factors) {
            if f(atom) {
                return true;
            }
            for e in atom.operands() {
                if e.any_atom(f) {
                    return true;
                }
            }
        }
        false
    }

    /// All symbols, including those inside read indices and opaque nodes (not container names).
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_names(&mut out, false);
        out
    }

    /// The names of all containers read, at any depth.
    pub fn reads(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_names(&mut out, true);
        out
    }

    /// Adds the names of all symbols (or, with `reads`, all read containers) to `out`.
    pub(super) fn collect_names(&self, out: &mut BTreeSet<String>, reads: bool) {
        self.any_atom(&mut |a| {
            let name = match a {
                Atom::Symbol(name) if !reads => name,
                Atom::Read(name, _) if reads => name,
                _ => return false,
            };
            if !out.contains(&**name) {
                out.insert(name.to_string());
            }
            false
        });
    }

    /// Whether the expression reads a container anywhere
    /// ([`reads`](Self::reads) is not empty), without collecting the names.
    pub fn has_reads(&self) -> bool {
        self.any_atom(&mut |a| matches!(a, Atom::Read(..)))
    }

    /// Whether the symbol `name` occurs anywhere in the expression.
    pub fn has_symbol(&self, name: &str) -> bool {
        self.any_atom(&mut |a| matches!(a, Atom::Symbol(n) if &**n == name))
    }

    /// Simultaneous substitution of symbols by expressions, re-canonicalized.
    /// Container names are not substituted; their indices are.
    pub fn subs(&self, map: &BTreeMap<String, SymExpr>) -> SymExpr {
        self.subs_with(&Renaming {
            symbols: map,
            reads: &BTreeMap::new(),
            shifts: &BTreeMap::new(),
            reindex: None,
        })
    }

    /// The expression reading container `renames[x]` wherever it read `x`,
    /// re-canonicalized: the offload pass points host code at a host twin
    /// of data whose home is the device.
    pub fn rename_reads(&self, renames: &BTreeMap<String, String>) -> SymExpr {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: renames,
            shifts: &BTreeMap::new(),
            reindex: None,
        })
    }

    /// The expression with `shifts[x][d]` added to dimension `d` of every
    /// index it reads container `x` at: DaCe's arrays with index offsets
    /// (Fortran's `a(1:n)`), read into the IR's arrays from 0.
    pub fn shift_reads(&self, shifts: &BTreeMap<String, Vec<SymExpr>>) -> SymExpr {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: &BTreeMap::new(),
            shifts,
            reindex: None,
        })
    }

    /// The expression with each read rewritten by `f` (where it gives a
    /// container and index), its indices rewritten first: a nested SDFG's
    /// container read through the window its connector is bound to
    /// ([`crate::window`]).
    pub fn reindex_reads(&self, f: &Reindex<'_>) -> SymExpr {
        self.subs_with(&Renaming {
            symbols: &BTreeMap::new(),
            reads: &BTreeMap::new(),
            shifts: &BTreeMap::new(),
            reindex: Some(f),
        })
    }

    pub(super) fn subs_with(&self, map: &Renaming<'_>) -> SymExpr {
        let mut acc = Self::int(self.constant);
        for t in &self.terms {
            let mut prod = Self::int(t.coeff);
            for (atom, p) in &t.factors {
                let a = atom.subs(map);
                prod = prod
                    * if *p == 1 {
                        a
                    } else {
                        a.pow(&Self::int(i64::from(*p)))
                    };
            }
            acc = acc + prod;
        }
        acc
    }

    /// Splits `self == coeff*sym + rest` with neither part mentioning `sym`; `None` if `self`
    /// is not linear in `sym` (a power of it, or `sym` inside an opaque node or read index).
    pub fn linear_in(&self, sym: &str) -> Option<(SymExpr, SymExpr)> {
        let is_sym = |a: &Atom| matches!(a, Atom::Symbol(n) if &**n == sym);
        let (mut coeff, mut coeff_const, mut rest) = (Vec::new(), 0, Vec::new());
        for t in &self.terms {
            let mut linear = false;
            for (a, p) in &t.factors {
                if is_sym(a) {
                    if *p != 1 {
                        return None;
                    }
                    linear = true;
                } else if a.operands().iter().any(|e| e.has_symbol(sym)) {
                    return None;
                }
            }
            if !linear {
                rest.push(t.clone());
                continue;
            }
            let factors: Vec<_> = t
                .factors
                .iter()
                .filter(|(a, _)| !is_sym(a))
                .cloned()
                .collect();
            if factors.is_empty() {
                coeff_const = t.coeff;
            } else {
                coeff.push(Term {
                    factors,
                    coeff: t.coeff,
                });
            }
        }
        Some((
            SymExpr {
                terms: collect_terms(coeff),
                constant: coeff_const,
            },
            SymExpr {
                terms: rest,
                constant: self.constant,
            },
        ))
    }

    /// The sign of a constant expression (`Some(Less)` for negative constants), `None` if the
    /// expression is not constant. No range reasoning about symbols is attempted.
    pub fn const_sign(&self) -> Option<Ordering> {
        self.as_int().map(|c| c.cmp(&0))
    }

    /// Compares two expressions whose difference is a constant, e.g. `N + 1 > N`; `None`
    /// otherwise. Compares the constants directly, so it is exact even near `i64` limits.
    pub fn try_compare(&self, other: &SymExpr) -> Option<Ordering> {
        (self.terms == other.terms).then(|| self.constant.cmp(&other.constant))
    }
}

/// Implements a linear operator (`+` or `-`) for all owned/borrowed combinations and `i64`.
macro_rules! impl_linear {
    ($tr:ident, $m:ident, $k:expr) => {
        impl $tr<SymExpr> for SymExpr {
            type Output = SymExpr;
            fn $m(self, rhs: SymExpr) -> SymExpr {
                lin(self.terms, self.constant, rhs.terms, rhs.constant, $k)
            }
        }
        impl $tr<&SymExpr> for SymExpr {
            type Output = SymExpr;
            fn $m(self, rhs: &SymExpr) -> SymExpr {
                lin(
                    self.terms,
                    self.constant,
                    rhs.terms.iter().cloned(),
                    rhs.constant,
                    $k,
                )
            }
        }
        impl $tr<SymExpr> for &SymExpr {
            type Output = SymExpr;
            fn $m(self, rhs: SymExpr) -> SymExpr {
                lin(
                    self.terms.iter().cloned(),
                    self.constant,
                    rhs.terms,
                    rhs.constant,
                    $k,
                )
            }
        }
        impl $tr<&SymExpr> for &SymExpr {
            type Output = SymExpr;
            fn $m(self, rhs: &SymExpr) -> SymExpr {
                let (a, b) = (self.terms.iter().cloned(), rhs.terms.iter().cloned());
                lin(a, self.constant, b, rhs.constant, $k)
            }
        }
        impl $tr<i64> for SymExpr {
            type Output = SymExpr;
            fn $m(mut self, rhs: i64) -> SymExpr {
                self.constant = axpy(self.constant, rhs, $k);
                self
            }
        }
        impl $tr<i64> for &SymExpr {
            type Output = SymExpr;
            fn $m(self, rhs: i64) -> SymExpr {
                self.clone().$m(rhs)
            }
        }
    };
}

impl_linear!(Add, add, 1);
impl_linear!(Sub, sub, -1);

impl Mul<SymExpr> for SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: SymExpr) -> SymExpr {
        match (self.as_int(), rhs.as_int()) {
            (Some(k), _) => rhs.scaled(k),
            (_, Some(k)) => self.scaled(k),
            _ => mul_ref(&self, &rhs),
        }
    }
}

impl Mul<&SymExpr> for SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: &SymExpr) -> SymExpr {
        match rhs.as_int() {
            Some(k) => self.scaled(k),
            None => mul_ref(&self, rhs),
        }
    }
}

impl Mul<SymExpr> for &SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: SymExpr) -> SymExpr {
        rhs * self
    }
}

impl Mul<&SymExpr> for &SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: &SymExpr) -> SymExpr {
        mul_ref(self, rhs)
    }
}

impl Mul<i64> for SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: i64) -> SymExpr {
        self.scaled(rhs)
    }
}

impl Mul<i64> for &SymExpr {
    type Output = SymExpr;
    fn mul(self, rhs: i64) -> SymExpr {
        self.times(rhs)
    }
}

impl Neg for SymExpr {
    type Output = SymExpr;
    fn neg(self) -> SymExpr {
        self.scaled(-1)
    }
}

impl Neg for &SymExpr {
    type Output = SymExpr;
    fn neg(self) -> SymExpr {
        self.times(-1)
    }
}

impl From<i64> for SymExpr {
    fn from(value: i64) -> SymExpr {
        SymExpr::int(value)
    }
}
