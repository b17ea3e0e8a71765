//! Expressions: names, literals, operators, indexing (regions, gathers, data symbols).

use super::*;

impl<'m> Lowerer<'m> {
    pub(super) fn sym(&mut self, e: &Expr) -> Result<SymExpr> {
        let v = self.elem(e)?;
        if let Some(s) = v.as_sym() {
            return Ok(s);
        }
        self.host_symbol(e, &v)?.ok_or_else(|| {
            self.err(
                e,
                unsupported(format!(
                    "{} must be an integer expression of symbols here",
                    self.m.source.quoted(e.range())
                )),
            )
        })
    }

    pub(super) fn is_module(&self, e: &Expr, aliases: &[String]) -> bool {
        matches!(e, Expr::Name(n) if aliases.iter().any(|a| a == n.id.as_str()))
    }

    /// `np.name` / `dace.name` / `np.linalg.name`: the attribute's name.
    pub(super) fn module_func<'e>(&self, func: &'e Expr) -> Option<(&'static str, &'e str)> {
        let Expr::Attribute(a) = func else {
            return None;
        };
        if self.is_module(&a.value, &self.m.numpy_alias) {
            return Some(("np", a.attr.id.as_str()));
        }
        if self.is_module(&a.value, &self.m.dace_alias) {
            return Some(("dace", a.attr.id.as_str()));
        }
        if let Expr::Attribute(inner) = &*a.value
            && inner.attr.id.as_str() == "linalg"
            && self.is_module(&inner.value, &self.m.numpy_alias)
        {
            return Some(("linalg", a.attr.id.as_str()));
        }
        None
    }

    pub(super) fn elem(&mut self, e: &Expr) -> Result<Elem> {
        let v = self.deeper(e, |l| l.elem_inner(e))?;
        self.bounded(e, v)
    }

    /// `v`, if it is at most [`MAX_ELEM_SIZE`] operations: each expression
    /// is checked as it is built, so none grows past a few times that.
    pub(super) fn bounded(&self, e: &Expr, v: Elem) -> Result<Elem> {
        if v.fits(MAX_ELEM_SIZE) {
            return Ok(v);
        }
        Err(self.err(
            e,
            unsupported(format!(
                "this expression: written out it takes more than {MAX_ELEM_SIZE} operations, as each use of a value repeats it (`t = t + t` in a map body, `a or b` of numbers, `np.sign`); store parts of it in arrays"
            )),
        ))
    }

    pub(super) fn elem_inner(&mut self, e: &Expr) -> Result<Elem> {
        match e {
            Expr::Name(n) => {
                let name = n.id.as_str();
                match self.names.get(name) {
                    Some(Name::Ref(r)) => Ok(Elem::Ref(r.clone())),
                    Some(Name::Sym(s)) => Ok(Elem::Sym(SymExpr::symbol(s.clone()))),
                    Some(Name::Value(v)) => Ok(Elem::Sym(v.clone())),
                    Some(Name::Local(e)) => Ok(e.clone()),
                    Some(Name::Expired(why)) => {
                        Err(self.err(e, ErrorKind::Value(format!("`{name}` {why}"))))
                    }
                    None if self.m.symbols.contains_key(name) => {
                        self.declare_symbol(name);
                        Ok(Elem::Sym(SymExpr::symbol(name)))
                    }
                    None => match (self.m.constants.get(name), self.m.symbol_exprs.get(name)) {
                        (Some(value), _) => Ok(Elem::Lit(*value)),
                        (None, Some(expr)) => self.elem(expr),
                        (None, None) => Err(match self.m.opaque.get(name) {
                            Some(o) => self.err(
                                e,
                                unsupported(format!(
                                    "`{name}`, bound at line {} of the module to {}; programs can read module-level symbols, numbers, dtypes and other programs",
                                    o.line, o.what
                                )),
                            ),
                            None => self.err(e, ErrorKind::UnknownName(name.to_owned())),
                        }),
                    },
                }
            }
            Expr::NumberLiteral(n) => Ok(Elem::Lit(match &n.value {
                ast::Number::Int(i) => Literal::i64(i.as_i64().ok_or_else(|| self.too_large(e))?),
                ast::Number::Float(f) => Literal::f64(*f),
                ast::Number::Complex { real, imag } => Literal::Complex {
                    re: *real,
                    im: *imag,
                    dtype: DType::Complex128,
                },
            })),
            Expr::BooleanLiteral(b) => Ok(Elem::Lit(Literal::Bool(b.value))),
            Expr::BinOp(b) => {
                if matches!(b.op, ast::Operator::MatMult) {
                    let (x, y) = (self.elem(&b.left)?, self.elem(&b.right)?);
                    return self.matmul(b, x, y);
                }
                let op = binary_op(b.op).ok_or_else(|| {
                    self.err(b, unsupported(format!("operator `{}`", b.op.as_str())))
                })?;
                let (x, y) = (self.elem(&b.left)?, self.elem(&b.right)?);
                self.binary(b, op, x, y)
            }
            Expr::UnaryOp(u) => {
                let x = self.elem(&u.operand)?;
                let op = match u.op {
                    ast::UnaryOp::USub => Some(UnaryOp::Neg),
                    ast::UnaryOp::Invert => Some(UnaryOp::BitNot),
                    ast::UnaryOp::UAdd | ast::UnaryOp::Not => None,
                };
                if let Some(op) = op
                    && !op.is_defined_on(x.dtype())
                {
                    return Err(self.err(
                        u,
                        ErrorKind::Type(format!(
                            "`{}` is not defined on a {} operand",
                            op.symbol(),
                            x.dtype()
                        )),
                    ));
                }
                Ok(match u.op {
                    ast::UnaryOp::UAdd => x,
                    ast::UnaryOp::USub => match x.as_sym() {
                        Some(s) if x.is_weak() => {
                            Elem::Sym(SymExpr::exact(|| -s).ok_or_else(|| self.too_large(u))?)
                        }
                        _ => Elem::Unary(UnaryOp::Neg, Box::new(x)),
                    },
                    ast::UnaryOp::Not => {
                        Elem::Unary(UnaryOp::Not, Box::new(Elem::Cast(DType::Bool, Box::new(x))))
                    }
                    ast::UnaryOp::Invert => Elem::Unary(UnaryOp::BitNot, Box::new(x)),
                })
            }
            Expr::Compare(c) => {
                if c.ops.len() != 1 {
                    return Err(self.err(c, unsupported("chained comparison")));
                }
                let op = match c.ops[0] {
                    ast::CmpOp::Eq => BinaryOp::Eq,
                    ast::CmpOp::NotEq => BinaryOp::Ne,
                    ast::CmpOp::Lt => BinaryOp::Lt,
                    ast::CmpOp::LtE => BinaryOp::Le,
                    ast::CmpOp::Gt => BinaryOp::Gt,
                    ast::CmpOp::GtE => BinaryOp::Ge,
                    _ => return Err(self.err(c, unsupported("this comparison operator"))),
                };
                let (x, y) = (self.elem(&c.left)?, self.elem(&c.comparators[0])?);
                self.binary(c, op, x, y)
            }
            // Python's `a or b` is `a` if `a` is true, else `b`; `a and b`
            // is `a` if `a` is false, else `b`: the result is an operand,
            // not a bool (`False or N` is `N`). Operands of known truth
            // short-circuit at compile time, as Python would at run time.
            Expr::BoolOp(b) => {
                let or = matches!(b.op, ast::BoolOp::Or);
                let mut vals = b.values.iter();
                let first = vals
                    .next()
                    .ok_or_else(|| self.err(b, unsupported("an empty boolean operation")))?;
                let mut acc = self.elem(first)?;
                for v in vals {
                    // A value that is not a truth value is repeated at each
                    // operand: bounded as it grows.
                    acc = self.bounded(e, acc)?;
                    match truth(&acc) {
                        // `True or ...`, `0 and ...`: the rest is not evaluated.
                        Some(t) if t == or => break,
                        Some(_) => acc = self.elem(v)?,
                        None => {
                            let y = self.elem(v)?;
                            acc = if acc.dtype() == DType::Bool && y.dtype() == DType::Bool {
                                let op = if or { BinaryOp::Or } else { BinaryOp::And };
                                self.binary(b, op, acc, y)?
                            } else {
                                let t = promote(acc.dtype(), acc.is_weak(), y.dtype(), y.is_weak());
                                let cond = Box::new(Elem::Cast(DType::Bool, Box::new(acc.clone())));
                                let (yes, no) = if or { (acc, y) } else { (y, acc) };
                                Elem::Select(cond, Box::new(yes), Box::new(no), t)
                            };
                        }
                    }
                }
                Ok(acc)
            }
            Expr::If(i) => {
                let c = self.elem(&i.test)?;
                let (a, b) = (self.elem(&i.body)?, self.elem(&i.orelse)?);
                let t = promote(a.dtype(), a.is_weak(), b.dtype(), b.is_weak());
                Ok(Elem::Select(Box::new(c), Box::new(a), Box::new(b), t))
            }
            // `x.shape[k]`: an extent, a symbolic integer.
            Expr::Subscript(s) if matches!(&*s.value, Expr::Attribute(a) if a.attr.id.as_str() == "shape") =>
            {
                let shape = self.shape_arg(&s.value)?;
                let k = self.sym(&s.slice)?.as_int().ok_or_else(|| {
                    self.err(
                        &*s.slice,
                        unsupported("a `shape` index that is not a constant"),
                    )
                })?;
                let rank = shape.len() as i64;
                let k = if k < 0 { k + rank } else { k };
                usize::try_from(k)
                    .ok()
                    .and_then(|k| shape.get(k).cloned())
                    .map(Elem::Sym)
                    .ok_or_else(|| {
                        self.err(
                            &*s.slice,
                            ErrorKind::Shape(format!("axis {k} out of range")),
                        )
                    })
            }
            Expr::Subscript(s) => {
                let base = self.elem(&s.value)?;
                let base = match base {
                    Elem::Ref(r) => r,
                    other => self.materialize(s, other)?,
                };
                self.index(base, &s.slice)
            }
            // NumPy's constants.
            Expr::Attribute(a)
                if self.is_module(&a.value, &self.m.numpy_alias)
                    && matches!(a.attr.id.as_str(), "pi" | "e" | "inf" | "nan") =>
            {
                Ok(Elem::Lit(Literal::f64(match a.attr.id.as_str() {
                    "pi" => std::f64::consts::PI,
                    "e" => std::f64::consts::E,
                    "inf" => f64::INFINITY,
                    _ => f64::NAN,
                })))
            }
            Expr::Attribute(a) if a.attr.id.as_str() == "T" => {
                let base = self.elem(&a.value)?;
                let mut r = match base {
                    Elem::Ref(r) => r,
                    other => self.materialize(a, other)?,
                };
                r.order.reverse();
                Ok(Elem::Ref(r))
            }
            Expr::Call(c) => self.call(c),
            other => Err(self.err(
                other,
                unsupported(format!(
                    "expression {}",
                    self.m.source.quoted(other.range())
                )),
            )),
        }
    }

    /// The error for an integer that does not fit in 64 bits: Python's
    /// integers are unbounded, and wrapping one would change the program.
    fn too_large(&self, node: &impl Ranged) -> FrontendError {
        self.err(
            node,
            ErrorKind::Value(format!(
                "the integer {} does not fit in 64 bits",
                self.m.source.quoted(node.range())
            )),
        )
    }

    /// A binary operation with NumPy's promotion (and true division).
    pub(super) fn binary(
        &mut self,
        node: &impl Ranged,
        op: BinaryOp,
        x: Elem,
        y: Elem,
    ) -> Result<Elem> {
        // An integer to a negative constant power is a float in Python
        // (`10**-2` is 0.01); NumPy refuses it for integer arrays.
        if op == BinaryOp::Pow
            && is_integral(x.dtype())
            && is_integral(y.dtype())
            && y.as_sym().and_then(|e| e.as_int()).is_some_and(|k| k < 0)
        {
            if !x.is_weak() {
                return Err(self.err(
                    node,
                    unsupported(
                        "an integer array to a negative integer power (NumPy: \"Integers to negative integer powers are not allowed\")",
                    ),
                ));
            }
            let float = |e: Elem| Elem::Cast(DType::Float64, Box::new(e));
            if let (Some(b), Some(k)) = (
                x.as_sym().and_then(|e| e.as_int()),
                y.as_sym().and_then(|e| e.as_int()),
            ) {
                return Ok(Elem::Lit(Literal::f64((b as f64).powf(k as f64))));
            }
            return Ok(Elem::Binary(
                op,
                Box::new(float(x)),
                Box::new(float(y)),
                DType::Float64,
            ));
        }
        // Integer arithmetic on symbols stays symbolic.
        if x.is_weak() && y.is_weak() {
            let e = Elem::Binary(op, Box::new(x.clone()), Box::new(y.clone()), DType::Int64);
            // Python integers never wrap: a fold beyond 64 bits is refused.
            match SymExpr::exact(|| e.as_sym()) {
                Some(Some(s)) => return Ok(Elem::Sym(s)),
                Some(None) => {}
                None => return Err(self.too_large(node)),
            }
        }
        let mut t = promote(x.dtype(), x.is_weak(), y.dtype(), y.is_weak());
        let mut op = op;
        let (mut x, mut y) = (x, y);
        if t == DType::Bool
            && matches!(
                op,
                BinaryOp::FloorDiv | BinaryOp::Mod | BinaryOp::Pow | BinaryOp::Shl | BinaryOp::Shr
            )
        {
            // NumPy has no boolean loops for these: booleans compute as
            // int8, the first integer loop (`True // True` is int8 1).
            t = DType::Int8;
            x = x.cast(t);
            y = y.cast(t);
        }
        if t == DType::Bool && matches!(op, BinaryOp::Add | BinaryOp::Mul) {
            if x.is_weak() && y.is_weak() {
                // Python's `True + True` is 2: a bool is an int there.
                t = DType::Int64;
            } else {
                // NumPy's `add` and `multiply` on bools are `or` and `and`.
                op = if op == BinaryOp::Add {
                    BinaryOp::Or
                } else {
                    BinaryOp::And
                };
            }
        }
        if op == BinaryOp::Div && (t.is_integer() || t == DType::Bool) {
            t = DType::Float64;
        }
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            t = DType::Bool;
        }
        if !op.is_defined_on(t) {
            return Err(self.err(
                node,
                ErrorKind::Type(format!("`{}` is not defined on {t} operands", op.symbol())),
            ));
        }
        let e = Elem::Binary(op, Box::new(x), Box::new(y), t);
        if e.shape().is_none() {
            return Err(self.err(
                node,
                ErrorKind::Shape("operands do not broadcast".to_owned()),
            ));
        }
        Ok(e)
    }

    /// Whether a slice is written with length one: `a:a + 1` (the same
    /// text on both sides), `k:k + 1` with `k` and `k + 1` constants, or
    /// `:1`, with no step or a step of one.
    fn written_as_one(&self, sl: &ast::ExprSlice) -> bool {
        let int = |e: &Expr| match e {
            Expr::NumberLiteral(n) => n.value.as_int().and_then(ast::Int::as_i64),
            _ => None,
        };
        if sl.step.as_deref().is_some_and(|s| int(s) != Some(1)) {
            return false;
        }
        let Some(upper) = sl.upper.as_deref() else {
            return false;
        };
        let lower = sl.lower.as_deref();
        match (lower.map(int), int(upper)) {
            (None, Some(1)) | (Some(Some(0)), Some(1)) => return true,
            (Some(Some(a)), Some(b)) => return b - a == 1,
            _ => {}
        }
        let (Some(lower), Expr::BinOp(b)) = (lower, upper) else {
            return false;
        };
        let text = |e: &Expr| {
            self.m
                .source
                .snippet(e.range())
                .split_whitespace()
                .collect::<String>()
        };
        matches!(b.op, ast::Operator::Add)
            && ((int(&b.right) == Some(1) && text(&b.left) == text(lower))
                || (int(&b.left) == Some(1) && text(&b.right) == text(lower)))
    }

    /// Applies a subscript to a region: a region, or an indirect access
    /// ([`Elem::Gather`]) where an index is computed from data.
    ///
    /// A scalar integer index read from data outside map bodies becomes a
    /// symbol the host reads on the transition before its use (as DaCe
    /// assigns symbols from data on interstate edges), so the access stays
    /// a region. Inside a map body, or with an array of indices, every
    /// index is an elementwise value and the access a gather.
    pub(super) fn index(&mut self, base: ArrayRef, slice: &Expr) -> Result<Elem> {
        let written: Vec<&Expr> = match slice {
            Expr::Tuple(t) => t.elts.iter().collect(),
            one => vec![one],
        };
        // `...` stands for as many whole axes (`:`) as the other indices
        // leave (at most one `...`, as in NumPy).
        let is_newaxis = |item: &Expr| {
            matches!(item, Expr::NoneLiteral(_))
                || matches!(item, Expr::Attribute(a) if a.attr.id.as_str() == "newaxis")
        };
        let ellipses = written
            .iter()
            .filter(|e| matches!(e, Expr::EllipsisLiteral(_)))
            .count();
        if ellipses > 1 {
            return Err(self.err(slice, unsupported("more than one `...` in one subscript")));
        }
        let indexed = written
            .iter()
            .filter(|e| !is_newaxis(e) && !matches!(e, Expr::EllipsisLiteral(_)))
            .count();
        let mut items: Vec<(&Expr, bool)> = Vec::new();
        for e in &written {
            if matches!(e, Expr::EllipsisLiteral(_)) {
                let whole = base.order.len().saturating_sub(indexed);
                items.extend(std::iter::repeat_n((*e, true), whole));
            } else {
                items.push((*e, false));
            }
        }
        // Per visible axis of `base`: its index as an elementwise value, and
        // whether some index is data (then the access is a gather).
        let mut gather: Vec<Elem> = Vec::new();
        let mut data_index = false;
        let mut sliced: Option<&Expr> = None;
        let mut dims = base.dims.clone();
        let mut order = Vec::new();
        let mut visible = base.order.iter().copied();
        for (item, whole) in items {
            if whole {
                // A whole axis from `...`: kept as it is.
                let d = visible.next().ok_or_else(|| {
                    self.err(item, ErrorKind::Shape("too many indices".to_owned()))
                })?;
                sliced = Some(item);
                order.push(d);
                continue;
            }
            if is_newaxis(item) {
                dims.push(Dim::NewAxis);
                order.push(dims.len() - 1);
                sliced = Some(item);
                continue;
            }
            let d = visible
                .next()
                .ok_or_else(|| self.err(item, ErrorKind::Shape("too many indices".to_owned())))?;
            // An axis a `np.newaxis` made indexes nothing: slicing keeps it,
            // an index (0 or -1) removes it.
            if matches!(dims[d], Dim::NewAxis) {
                if matches!(item, Expr::Slice(_)) {
                    sliced = Some(item);
                    order.push(d);
                    continue;
                }
                match self.sym(item)?.as_int() {
                    Some(0 | -1) => continue,
                    _ => {
                        return Err(self.err(
                            item,
                            ErrorKind::Shape(
                                "an index of an axis of length one (from `np.newaxis`) that is not 0 or -1"
                                    .to_owned(),
                            ),
                        ));
                    }
                }
            }
            let (start, step, len) = match &dims[d] {
                Dim::Range { start, step, len } => (start.clone(), step.clone(), len.clone()),
                _ => (SymExpr::int(0), SymExpr::int(1), SymExpr::int(1)),
            };
            match item {
                Expr::Slice(sl) => {
                    sliced = Some(item);
                    let norm = |l: &mut Self, e: &Expr| -> Result<SymExpr> {
                        let v = l.sym(e)?;
                        Ok(if v.as_int().is_some_and(|k| k < 0) {
                            &len + &v
                        } else {
                            v
                        })
                    };
                    let st = match &sl.step {
                        Some(e) => self.sym(e)?,
                        None => SymExpr::int(1),
                    };
                    let Some(k) = st.as_int().filter(|k| *k != 0) else {
                        return Err(self.err(
                            item,
                            unsupported("a slice step that is not a nonzero constant"),
                        ));
                    };
                    // A negative step walks from `lower` (default: the last
                    // element) down to just above `upper` (default: past
                    // the first), as in Python.
                    let lo = match &sl.lower {
                        Some(e) => norm(self, e)?,
                        None if k < 0 => &len - 1,
                        None => SymExpr::int(0),
                    };
                    let n = match (&sl.upper, k) {
                        (Some(e), _) => {
                            let hi = norm(self, e)?;
                            if k == 1 {
                                &hi - &lo
                            } else if k > 0 {
                                (&hi - &lo + (k - 1)).floor_div(&SymExpr::int(k))
                            } else {
                                (&lo - &hi + (-k - 1)).floor_div(&SymExpr::int(-k))
                            }
                        }
                        (None, 1) => &len - &lo,
                        (None, k) if k > 0 => (&len - &lo + (k - 1)).floor_div(&SymExpr::int(k)),
                        (None, -1) => &lo + 1,
                        (None, k) => (&lo - k).floor_div(&SymExpr::int(-k)),
                    };
                    let first = &start + &(&step * &lo);
                    // DaCe squeezes a slice of length one out of a
                    // subscript, as if it were an index: `pos[:, 0:1]` has
                    // shape (N,), where NumPy's has (N, 1) (NPBench's nbody
                    // relies on it). Only a slice written with length one
                    // (`0:1`, `i:i + 1`) is: one whose length is a size
                    // symbol of an inlined program (one when called with
                    // an extent of one) is not, as DaCe keeps such symbols.
                    if n.as_int() == Some(1) && self.written_as_one(sl) {
                        dims[d] = Dim::Index(first);
                        continue;
                    }
                    dims[d] = Dim::Range {
                        start: first,
                        step: &step * &st,
                        len: n,
                    };
                    order.push(d);
                }
                e => {
                    let v = self.elem(e)?;
                    if v.dtype() == DType::Bool && v.shape().is_some_and(|s| !s.is_empty()) {
                        return Err(self.err(e, unsupported("selecting with a boolean mask (the result's size depends on the data); assign through the mask or use np.where")));
                    }
                    if !v.dtype().is_integer() {
                        return Err(
                            self.err(e, unsupported(format!("an index of type {}", v.dtype())))
                        );
                    }
                    let i = match v.as_sym() {
                        Some(i) => Some(i),
                        None => self.host_symbol(e, &v)?,
                    };
                    let Some(i) = i else {
                        // Indirect: `len + i` for a negative index, as NumPy
                        // (an unsigned index is never negative).
                        if v.dtype().is_unsigned_integer() {
                            gather.push(v);
                            data_index = true;
                            continue;
                        }
                        let wrapped = Elem::Select(
                            Box::new(Elem::Binary(
                                BinaryOp::Lt,
                                Box::new(v.clone()),
                                Box::new(Elem::Lit(Literal::i64(0))),
                                v.dtype(),
                            )),
                            Box::new(Elem::Binary(
                                BinaryOp::Add,
                                Box::new(v.clone()),
                                Box::new(Elem::Sym(len.clone())),
                                DType::Int64,
                            )),
                            Box::new(v),
                            DType::Int64,
                        );
                        gather.push(wrapped);
                        data_index = true;
                        continue;
                    };
                    let written = i.as_int();
                    let i = if written.is_some_and(|k| k < 0) {
                        &len + &i
                    } else {
                        i
                    };
                    // NumPy's IndexError where both are known (every index
                    // of an empty axis is out of bounds).
                    if len.as_int() == Some(0) {
                        let axis = base.order.iter().position(|&x| x == d).unwrap_or(d);
                        return Err(self.err(
                            e,
                            ErrorKind::Value(format!(
                                "index {i} is out of bounds for axis {axis} with size 0"
                            )),
                        ));
                    }
                    if let (Some(k), Some(n)) = (written, len.as_int())
                        && !(-n..n).contains(&k)
                    {
                        let axis = base.order.iter().position(|&x| x == d).unwrap_or(d);
                        return Err(self.err(
                            e,
                            ErrorKind::Value(format!(
                                "index {k} is out of bounds for axis {axis} with size {n}"
                            )),
                        ));
                    }
                    gather.push(Elem::Sym(i.clone()));
                    dims[d] = Dim::Index(&start + &(&step * &i));
                }
            }
        }
        if data_index {
            // Pure advanced indexing only: one integer index per axis.
            if let Some(item) = sliced {
                return Err(self.err(
                    item,
                    unsupported(
                        "a slice or new axis next to an index array (mixed advanced indexing)",
                    ),
                ));
            }
            if visible.next().is_some() || !base.is_plain() {
                return Err(self.err(
                    slice,
                    unsupported("indirect access that does not index every axis of a plain array"),
                ));
            }
            let e = Elem::Gather(base, gather);
            if e.shape().is_none() {
                return Err(self.err(
                    slice,
                    ErrorKind::Shape("index arrays do not broadcast".to_owned()),
                ));
            }
            return Ok(e);
        }
        order.extend(visible);
        // Integers in every axis (no slice, `...` or new axis) select an
        // element: NumPy's scalar, where `A[4, ...]` is a 0-d view.
        let element = sliced.is_none() && ellipses == 0 && order.is_empty();
        Ok(Elem::Ref(ArrayRef {
            data: base.data,
            dtype: base.dtype,
            dims,
            order,
            reshaped: base.reshaped,
            element,
        }))
    }

    /// A scalar integer read from data outside map bodies, as a symbol the
    /// host assigns on the transition before its use (`None` for array
    /// values and inside map bodies, where data stays elementwise). A read
    /// made before, of a value nothing can have changed since, is reused.
    pub(super) fn host_symbol(&mut self, node: &impl Ranged, v: &Elem) -> Result<Option<SymExpr>> {
        if !self.map_ctx.is_empty()
            || !v.dtype().is_integer()
            || v.shape().is_none_or(|s| !s.is_empty())
        {
            return Ok(None);
        }
        let r = match v {
            Elem::Ref(r) => r.clone(),
            other => self.plain(node, other.clone())?,
        };
        let read = SymExpr::read(&r.data, r.index(&[]));
        if let Some((_, sym)) = self.host_reads.iter().find(|(x, _)| *x == read) {
            return Ok(Some(SymExpr::symbol(sym.clone())));
        }
        let sym = self.fresh("__data");
        self.declare_symbol(&sym);
        self.assign_symbol(node, &sym, read.clone());
        self.host_reads.push((read, sym.clone()));
        Ok(Some(SymExpr::symbol(sym)))
    }
}

/// Whether values of `t` are integers in Python's sense (bools too).
fn is_integral(t: DType) -> bool {
    t.is_integer() || t == DType::Bool
}

/// The truth of a value known at compile time (a literal, or a symbolic
/// integer that is a constant), as Python's `bool()` gives it.
fn truth(e: &Elem) -> Option<bool> {
    match e {
        Elem::Lit(Literal::Bool(b)) => Some(*b),
        Elem::Lit(Literal::Float { value, .. }) => Some(*value != 0.0),
        Elem::Lit(Literal::Complex { re, im, .. }) => Some(*re != 0.0 || *im != 0.0),
        _ => e.as_sym().and_then(|s| s.as_int()).map(|v| v != 0),
    }
}
