//! Values of Python expressions during lowering: array regions, deferred
//! elementwise expressions, symbolic integers, and NumPy's type promotion.

use sdfg_ir::code::{self, BinaryOp, Intrinsic, UnaryOp};
use sdfg_ir::symbolic::Atom;
use sdfg_ir::{DType, Literal, Range, Subset, SymExpr};

/// One dimension of an array region.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Dim {
    /// A single index: the dimension is squeezed away.
    Index(SymExpr),
    /// A visible axis: indices `start + step * k` for `k` in `0..len`.
    Range {
        start: SymExpr,
        step: SymExpr,
        len: SymExpr,
    },
    /// `np.newaxis`: a visible axis of length one that indexes nothing.
    NewAxis,
}

/// A region of a container as NumPy sees it: a view with a shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayRef {
    pub data: String,
    pub dtype: DType,
    pub dims: Vec<Dim>,
    /// The visible axes, in order, as indices into `dims` (`Range` and
    /// `NewAxis` dims only); a transpose permutes this.
    pub order: Vec<usize>,
    /// For a reshaped view (`np.reshape` of a whole array, a view in NumPy
    /// too): `dims` index a virtual array of the given shape whose elements,
    /// in row-major order, are those of the source region. Reading and
    /// writing through it reach the source's elements.
    pub reshaped: Option<Box<(ArrayRef, Vec<SymExpr>)>>,
    /// Whether the region is one element chosen by an integer index in
    /// every axis (`A[4]` of a vector, `A[1, 2]` of a matrix): NumPy's
    /// value is then a scalar, a copy, where `A[4, ...]` is a 0-d view.
    /// A name bound to it holds a copy ([`ArrayRef::is_element`]).
    pub element: bool,
}

impl ArrayRef {
    /// The whole container of the given shape (`[]` for a scalar).
    pub(crate) fn whole(data: &str, dtype: DType, shape: &[SymExpr], scalar: bool) -> ArrayRef {
        if scalar {
            return ArrayRef {
                data: data.to_owned(),
                dtype,
                dims: vec![Dim::Index(SymExpr::int(0))],
                order: vec![],
                reshaped: None,
                element: false,
            };
        }
        ArrayRef {
            data: data.to_owned(),
            dtype,
            dims: shape
                .iter()
                .map(|len| Dim::Range {
                    start: SymExpr::int(0),
                    step: SymExpr::int(1),
                    len: len.clone(),
                })
                .collect(),
            order: (0..shape.len()).collect(),
            reshaped: None,
            element: false,
        }
    }

    /// Whether the region is one element chosen by integer indices (see
    /// [`ArrayRef::element`]) and still has no visible axis.
    pub(crate) fn is_element(&self) -> bool {
        self.element && self.order.is_empty()
    }

    /// The visible shape.
    pub(crate) fn shape(&self) -> Vec<SymExpr> {
        self.order
            .iter()
            .map(|&d| match &self.dims[d] {
                Dim::Range { len, .. } => len.clone(),
                _ => SymExpr::int(1),
            })
            .collect()
    }

    /// The container index for visible indices `at` (one per visible axis).
    pub(crate) fn index(&self, at: &[SymExpr]) -> Vec<SymExpr> {
        let mut out = Vec::new();
        for (k, d) in self.dims.iter().enumerate() {
            match d {
                Dim::Index(e) => out.push(e.clone()),
                Dim::Range { start, step, .. } => {
                    let v = self.order.iter().position(|&o| o == k);
                    let i = v
                        .and_then(|v| at.get(v))
                        .cloned()
                        .unwrap_or(SymExpr::int(0));
                    out.push(start + &(step * &i));
                }
                Dim::NewAxis => {}
            }
        }
        match &self.reshaped {
            None => out,
            Some(view) => {
                let (source, shape) = &**view;
                source.index(&reindex(&out, shape, &source.shape()))
            }
        }
    }

    /// The region as a memlet subset of the container (for a reshaped
    /// view, the whole source region: it bounds every element reached).
    pub(crate) fn subset(&self) -> Subset {
        if let Some(view) = &self.reshaped {
            return view.0.subset();
        }
        Subset::new(
            self.dims
                .iter()
                .filter_map(|d| match d {
                    Dim::Index(e) => Some(Range::index(e.clone())),
                    // A reversed axis (`x[::-1]`, `np.flip`) covers the
                    // same elements as the forward one from its last.
                    Dim::Range { start, step, len } if step.as_int().is_some_and(|k| k < 0) => {
                        Some(Range {
                            begin: start + &(step * &(len - 1)),
                            end: start.clone(),
                            step: -step,
                        })
                    }
                    Dim::Range { start, step, len } => Some(Range {
                        begin: start.clone(),
                        end: start + &(step * &(len - 1)),
                        step: step.clone(),
                    }),
                    Dim::NewAxis => None,
                })
                .collect(),
        )
    }

    /// Whether the region is expressible as a memlet seen in its natural
    /// axis order (no transpose, no new axes, no reversed axis), as library
    /// nodes need.
    pub(crate) fn is_plain(&self) -> bool {
        self.reshaped.is_none()
            && self.order.windows(2).all(|w| w[0] < w[1])
            && self.order.iter().all(|&d| {
                matches!(&self.dims[d], Dim::Range { step, .. } if step.as_int().is_none_or(|k| k >= 0))
            })
    }

    /// The region with visible axis `axis` reversed (`np.flip`): a view,
    /// as in NumPy, whose elements are reached from the axis's last.
    pub(crate) fn flipped(mut self, axis: usize) -> ArrayRef {
        let d = self.order[axis];
        if let Dim::Range { start, step, len } = &self.dims[d] {
            self.dims[d] = Dim::Range {
                start: start + &(step * &(len - 1)),
                step: -step,
                len: len.clone(),
            };
        }
        self
    }
}

/// A deferred elementwise expression over regions, symbols and literals.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Elem {
    Ref(ArrayRef),
    /// An integer value known symbolically (symbols, loop variables, map parameters).
    Sym(SymExpr),
    /// A Python literal: its dtype is "weak" in promotion (NEP 50).
    Lit(Literal),
    Unary(UnaryOp, Box<Elem>),
    /// Operator, operands, and the type both operands are converted to.
    Binary(BinaryOp, Box<Elem>, Box<Elem>, DType),
    Call(Intrinsic, Vec<Elem>, DType),
    Select(Box<Elem>, Box<Elem>, Box<Elem>, DType),
    Cast(DType, Box<Elem>),
    /// Indirect access `base[i0, i1, ...]` with one integer index per visible
    /// axis of `base`, at least one of them computed from data: NumPy's
    /// advanced indexing, whose shape is the indices' broadcast shape. The
    /// base is read through a pointer connector (a load in tasklet code).
    Gather(ArrayRef, Vec<Elem>),
}

/// The most operations one elementwise expression may take. A value used
/// twice is repeated in the expression (`t = t + t` in a map body, `a or
/// b` of numbers, `np.sign(x)`), so repeated uses grow an expression
/// exponentially; past this size it is refused instead of taking the
/// machine's time and memory.
pub(crate) const MAX_ELEM_SIZE: usize = 1 << 16;

impl Elem {
    /// Whether the expression has at most `cap` operations and operands,
    /// counted without recursion and no further than `cap`.
    pub(crate) fn fits(&self, cap: usize) -> bool {
        let mut stack = vec![self];
        let mut count = 0usize;
        while let Some(e) = stack.pop() {
            count += 1;
            if count > cap {
                return false;
            }
            stack.extend(e.operands());
        }
        true
    }

    /// The value converted to `t`; itself where it has that type already,
    /// so that a region stays a region (library nodes read it in place).
    pub(crate) fn cast(self, t: DType) -> Elem {
        if self.dtype() == t {
            self
        } else {
            Elem::Cast(t, Box::new(self))
        }
    }

    pub(crate) fn dtype(&self) -> DType {
        match self {
            Elem::Ref(r) => r.dtype,
            Elem::Sym(_) => DType::Int64,
            Elem::Lit(l) => l.dtype(),
            Elem::Unary(_, e) => e.dtype(),
            Elem::Binary(op, _, _, t) => {
                if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) {
                    DType::Bool
                } else {
                    *t
                }
            }
            Elem::Call(f, _, t) => match f {
                Intrinsic::Abs | Intrinsic::Real | Intrinsic::Imag => t.real_type(),
                Intrinsic::IsNan => DType::Bool,
                Intrinsic::FrexpExponent => DType::Int32,
                _ => *t,
            },
            Elem::Select(_, _, _, t) => *t,
            Elem::Cast(t, _) => *t,
            Elem::Gather(base, _) => base.dtype,
        }
    }

    /// Whether the value is a "weak" Python scalar in promotion.
    pub(crate) fn is_weak(&self) -> bool {
        match self {
            Elem::Sym(_) | Elem::Lit(_) => true,
            Elem::Unary(_, e) => e.is_weak(),
            Elem::Binary(_, a, b, _) => a.is_weak() && b.is_weak(),
            _ => false,
        }
    }

    /// The operands of the expression, in evaluation order (the indices of
    /// a gather; its base is not an elementwise operand).
    fn operands(&self) -> Vec<&Elem> {
        match self {
            Elem::Ref(_) | Elem::Sym(_) | Elem::Lit(_) => Vec::new(),
            Elem::Unary(_, e) | Elem::Cast(_, e) => vec![e],
            Elem::Binary(_, a, b, _) => vec![a, b],
            Elem::Call(_, args, _) | Elem::Gather(_, args) => args.iter().collect(),
            Elem::Select(c, a, b, _) => vec![c, a, b],
        }
    }

    /// Leaves that are regions, in evaluation order.
    pub(crate) fn refs<'a>(&'a self, out: &mut Vec<&'a ArrayRef>) {
        match self {
            Elem::Ref(r) => out.push(r),
            e => e.operands().into_iter().for_each(|o| o.refs(out)),
        }
    }

    /// The bases of indirect accesses, in evaluation order.
    pub(crate) fn gathered<'a>(&'a self, out: &mut Vec<&'a ArrayRef>) {
        if let Elem::Gather(base, _) = self {
            out.push(base);
        }
        for o in self.operands() {
            o.gathered(out);
        }
    }

    /// The broadcast shape of the expression, or `None` when shapes conflict.
    pub(crate) fn shape(&self) -> Option<Vec<SymExpr>> {
        let mut refs = Vec::new();
        self.refs(&mut refs);
        let mut shape: Vec<SymExpr> = Vec::new();
        for r in refs {
            shape = broadcast(&shape, &r.shape())?;
        }
        Some(shape)
    }

    /// The integer symbolic value, if the expression is one.
    pub(crate) fn as_sym(&self) -> Option<SymExpr> {
        match self {
            Elem::Sym(s) => Some(s.clone()),
            Elem::Lit(Literal::Int { value, .. }) => Some(SymExpr::int(*value)),
            Elem::Unary(UnaryOp::Neg, e) => e.as_sym().map(|s| -s),
            Elem::Binary(op, a, b, _) => {
                let (a, b) = (a.as_sym()?, b.as_sym()?);
                Some(match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::FloorDiv => a.floor_div(&b),
                    BinaryOp::Mod => a.modulo(&b),
                    BinaryOp::Pow => a.pow(&b),
                    _ => return None,
                })
            }
            Elem::Call(Intrinsic::Min, args, _) => {
                SymExpr::min_all(args.iter().map(Elem::as_sym).collect::<Option<Vec<_>>>()?)
            }
            Elem::Call(Intrinsic::Max, args, _) => {
                SymExpr::max_all(args.iter().map(Elem::as_sym).collect::<Option<Vec<_>>>()?)
            }
            _ => None,
        }
    }
}

/// The index in an array of shape `to` of the element at `at` in an array
/// of shape `from` holding the same elements in row-major order (a
/// reshape). No wrap-around on the first axis of `to`: an index past the
/// end stays past it, where bounds checks see it.
pub(crate) fn reindex(at: &[SymExpr], from: &[SymExpr], to: &[SymExpr]) -> Vec<SymExpr> {
    let mut linear = SymExpr::int(0);
    for (i, len) in at.iter().zip(from) {
        linear = linear * len.clone() + i.clone();
    }
    let mut out = vec![SymExpr::int(0); to.len()];
    for (d, len) in to.iter().enumerate().rev() {
        if d == 0 {
            out[0] = linear.clone();
        } else {
            out[d] = linear.modulo(len);
            linear = linear.floor_div(len);
        }
    }
    out
}

/// NumPy broadcasting of two shapes (right-aligned; 1 stretches).
pub(crate) fn broadcast(a: &[SymExpr], b: &[SymExpr]) -> Option<Vec<SymExpr>> {
    let n = a.len().max(b.len());
    let one = SymExpr::int(1);
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let x = (k + a.len()).checked_sub(n).map_or(&one, |i| &a[i]);
        let y = (k + b.len()).checked_sub(n).map_or(&one, |i| &b[i]);
        out.push(if x == y || *y == one {
            x.clone()
        } else if *x == one {
            y.clone()
        } else {
            return None;
        });
    }
    Some(out)
}

fn kind(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        d if d.is_integer() => 1,
        d if d.is_float() => 2,
        _ => 3,
    }
}

/// NumPy's result type of a binary operation (NEP 50: Python scalars are
/// "weak" and take the array's type when it is of the same or a higher kind).
pub(crate) fn promote(a: DType, a_weak: bool, b: DType, b_weak: bool) -> DType {
    let default_of = |k: u8| match k {
        0 => DType::Bool,
        1 => DType::Int64,
        2 => DType::Float64,
        _ => DType::Complex128,
    };
    match (a_weak, b_weak) {
        (true, true) => default_of(kind(a).max(kind(b))),
        (false, true) if kind(a) >= kind(b) => a,
        (true, false) if kind(b) >= kind(a) => b,
        (false, true) | (true, false) => {
            let (strong, weak) = if a_weak { (b, a) } else { (a, b) };
            match (kind(strong), kind(weak)) {
                (_, 3) if strong == DType::Float32 => DType::Complex64,
                (_, k) => default_of(k),
            }
        }
        (false, false) => {
            if a == b {
                return a;
            }
            let (ka, kb) = (kind(a), kind(b));
            if ka == kb {
                if ka == 1 && a.is_signed_integer() != b.is_signed_integer() {
                    // Mixed signedness: the narrowest signed type that
                    // holds both (the signed one where it is wider, else
                    // twice the unsigned width; float64 beyond int64).
                    let (signed, unsigned) = if a.is_signed_integer() {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    if signed.size_bytes() > unsigned.size_bytes() {
                        return signed;
                    }
                    return match unsigned.size_bytes() {
                        1 => DType::Int16,
                        2 => DType::Int32,
                        4 => DType::Int64,
                        _ => DType::Float64,
                    };
                }
                return if a.size_bytes() >= b.size_bytes() {
                    a
                } else {
                    b
                };
            }
            let (hi, lo) = if ka > kb { (a, b) } else { (b, a) };
            match (kind(hi), kind(lo)) {
                (2, 1) if hi == DType::Float32 && lo.size_bytes() <= 2 => DType::Float32,
                (2, 1) => DType::Float64,
                // Integers that float32 holds exactly stay in complex64.
                (3, 1) if hi == DType::Complex64 && lo.size_bytes() <= 2 => DType::Complex64,
                (3, 1) => DType::Complex128,
                (3, 2) if hi == DType::Complex64 && lo == DType::Float64 => DType::Complex128,
                _ => hi,
            }
        }
    }
}

/// A symbolic integer as tasklet code (an `int64` expression of symbols).
pub(crate) fn sym_code(e: &SymExpr) -> Option<code::Expr> {
    let mut acc: Option<code::Expr> = None;
    for t in e.terms() {
        let mut term = code::Expr::i64(t.coeff());
        for (atom, pow) in t.factors() {
            let a = atom_code(atom)?;
            // Squares and cubes as products; higher powers as one power
            // node, not a chain of products as deep as the exponent (`k**53`
            // nested 53 levels deep in the tasklet and its JSON).
            if *pow <= 3 {
                for _ in 0..*pow {
                    term = term * a.clone();
                }
            } else {
                term =
                    term * code::Expr::binary(BinaryOp::Pow, a, code::Expr::i64(i64::from(*pow)));
            }
        }
        acc = Some(match acc {
            None => term,
            Some(x) => x + term,
        });
    }
    let c = code::Expr::i64(e.constant_term());
    Some(match acc {
        None => c,
        Some(x) if e.constant_term() == 0 => x,
        Some(x) => x + c,
    })
}

fn atom_code(a: &Atom) -> Option<code::Expr> {
    Some(match a {
        Atom::Symbol(name) => code::Expr::var(&**name),
        Atom::FloorDiv(ops) => {
            code::Expr::binary(BinaryOp::FloorDiv, sym_code(&ops[0])?, sym_code(&ops[1])?)
        }
        Atom::Mod(ops) => code::Expr::binary(BinaryOp::Mod, sym_code(&ops[0])?, sym_code(&ops[1])?),
        Atom::Pow(ops) => code::Expr::binary(BinaryOp::Pow, sym_code(&ops[0])?, sym_code(&ops[1])?),
        Atom::Min(args) | Atom::Max(args) => {
            let f = if matches!(a, Atom::Min(_)) {
                Intrinsic::Min
            } else {
                Intrinsic::Max
            };
            let mut it = args.iter().map(sym_code);
            let mut acc = it.next()??;
            for x in it {
                acc = code::Expr::call(f, vec![acc, x?]);
            }
            acc
        }
        Atom::Read(..) => return None,
    })
}
