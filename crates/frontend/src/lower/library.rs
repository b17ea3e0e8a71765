//! Library operations (products, reductions, linear algebra) and the evaluation of values into regions they need.

use super::*;

impl<'m> Lowerer<'m> {
    /// A region that library nodes can take: `e` itself when it is a plain
    /// region, else a transient holding its value.
    pub(super) fn plain(&mut self, node: &impl Ranged, e: Elem) -> Result<ArrayRef> {
        match e {
            Elem::Ref(r) if r.is_plain() => Ok(r),
            other => {
                let shape = other.shape().ok_or_else(|| {
                    self.err(
                        node,
                        ErrorKind::Shape("operands do not broadcast".to_owned()),
                    )
                })?;
                let dtype = other.dtype();
                let r = self.new_transient("tmp_", dtype, &shape);
                self.assign_region(node, r.clone(), other)?;
                Ok(r)
            }
        }
    }

    /// Evaluates `e` into a region (a transient unless it already is one).
    /// The contiguous region `r` covers entirely, if it does: a whole
    /// container in its natural order, or a whole reshaped view of one
    /// (then its source).
    pub(super) fn whole_source(&self, r: &ArrayRef) -> Option<ArrayRef> {
        let identity = r.order.iter().copied().eq(0..r.dims.len());
        let all = |dims: &[Dim], shape: &[SymExpr]| {
            dims.len() == shape.len()
                && dims.iter().zip(shape).all(|(d, n)| {
                    matches!(d, Dim::Range { start, step, len }
                        if start.as_int() == Some(0) && step.as_int() == Some(1) && len == n)
                })
        };
        if !identity {
            return None;
        }
        match &r.reshaped {
            Some(view) => all(&r.dims, &view.1).then(|| view.0.clone()),
            None => {
                let desc = self.sdfg.container(&r.data)?;
                (!desc.is_scalar() && all(&r.dims, &desc.shape())).then(|| r.clone())
            }
        }
    }

    pub(super) fn materialize(&mut self, node: &impl Ranged, e: Elem) -> Result<ArrayRef> {
        if !self.map_ctx.is_empty() && !matches!(e, Elem::Ref(_)) {
            return Err(self.err(
                node,
                unsupported("an array temporary inside a `dace.map` body"),
            ));
        }
        self.plain(node, e)
    }

    pub(super) fn library(
        &mut self,
        node: &impl Ranged,
        op: LibraryOp,
        inputs: &[(&str, Elem)],
        out_conn: &str,
        out_shape: Option<Vec<SymExpr>>,
    ) -> Result<Elem> {
        if !self.map_ctx.is_empty() {
            return Err(self.err(
                node,
                unsupported("a library operation inside a `dace.map` body"),
            ));
        }
        let mut ins = Vec::new();
        for (conn, e) in inputs {
            ins.push(((*conn).to_owned(), self.plain(node, e.clone())?));
        }
        let first = ins
            .first()
            .map(|(_, r)| r.clone())
            .ok_or_else(|| self.err(node, unsupported("a library call without operands")))?;
        let dtype = ins
            .iter()
            .map(|(_, r)| r.dtype)
            .reduce(|a, b| promote(a, false, b, false))
            .unwrap_or(DType::Float64);
        let shape = out_shape.unwrap_or_else(|| first.shape());
        let out = self.new_transient("lib_", dtype, &shape);
        let label = op.name().to_owned();
        let out_c = out.clone();
        let out_conn = out_conn.to_owned();
        self.state(node, &label.clone(), move |s| {
            let n = s.library(&label, op);
            for (conn, r) in &ins {
                let a = s.access(&r.data);
                s.edge(a, None, n, Some(conn), Memlet::new(&r.data, r.subset()));
            }
            let o = s.access(&out_c.data);
            s.edge(
                n,
                Some(&out_conn),
                o,
                None,
                Memlet::new(&out_c.data, out_c.subset()),
            );
        })?;
        Ok(Elem::Ref(out))
    }

    /// `x @ y` with NumPy's rules: 1-D operands are a row on the left and
    /// a column on the right (removed from the result), stacks of matrices
    /// broadcast. Where NumPy refuses a product (its ranks or contracted
    /// lengths do not fit), DaCe squeezes every dimension of length one out
    /// of its operands and multiplies what is left (nbody's
    /// `(dx * inv_r3) @ mass`, with `dx` of shape (N, 1, N, 1)); so do we.
    pub(super) fn matmul(&mut self, node: &impl Ranged, x: Elem, y: Elem) -> Result<Elem> {
        let shape_of = |l: &Self, e: &Elem| {
            e.shape().ok_or_else(|| {
                l.err(
                    node,
                    ErrorKind::Shape("operands do not broadcast".to_owned()),
                )
            })
        };
        let (sa, sb) = (shape_of(self, &x)?, shape_of(self, &y)?);
        if let Some(shape) = matmul_shape(&sa, &sb) {
            return self.product(node, x, y, &sa, &sb, shape);
        }
        let (x2, y2) = (self.squeeze(node, x)?, self.squeeze(node, y)?);
        let (sa2, sb2) = (shape_of(self, &x2)?, shape_of(self, &y2)?);
        match matmul_shape(&sa2, &sb2) {
            Some(shape) if (sa2, sb2) != (sa.clone(), sb.clone()) => {
                let (sa2, sb2) = (shape_of(self, &x2)?, shape_of(self, &y2)?);
                self.product(node, x2, y2, &sa2, &sb2, shape)
            }
            _ => Err(self.err(
                node,
                ErrorKind::Shape(format!(
                    "`@` of shapes ({}) and ({})",
                    join_shape(&sa),
                    join_shape(&sb)
                )),
            )),
        }
    }

    /// The product of operands of shapes `sa` and `sb` whose result has
    /// NumPy's shape `result`. The IR's matrix products see the ranks of
    /// their operands without dimensions of length one, so those are
    /// taken apart first: a contracted length of one is an outer product
    /// (elementwise), rows and columns of length one are indexed away and
    /// the result reshaped, and a stack times a matrix is one product of
    /// the flattened stack.
    fn product(
        &mut self,
        node: &impl Ranged,
        x: Elem,
        y: Elem,
        sa: &[SymExpr],
        sb: &[SymExpr],
        result: Vec<SymExpr>,
    ) -> Result<Elem> {
        let unit = |e: &SymExpr| e.as_int() == Some(1);
        let (na, nb) = (sa.len(), sb.len());
        let k = &sa[na - 1];
        // A contracted length of one: x[..., m, 0] times y[..., 0, n].
        if unit(k) {
            let xe = if na == 1 {
                self.index_axis(node, x, 0)?
            } else if nb == 1 {
                self.index_axis(node, x, na - 1)?
            } else {
                x
            };
            let ye = if nb == 1 {
                self.index_axis(node, y, 0)?
            } else if na == 1 {
                self.index_axis(node, y, nb - 2)?
            } else {
                y
            };
            return self.binary(node, BinaryOp::Mul, xe, ye);
        }
        // A stack of matrices (or one matrix) times a matrix or a vector:
        // one product of the rows of the whole stack.
        if na >= 2 && nb <= 2 && (na > 2 || unit(&sa[0])) {
            let rows = sa[..na - 1]
                .iter()
                .fold(SymExpr::int(1), |acc, d| acc * d.clone());
            if !unit(&rows) || nb == 2 && !unit(&sb[1]) {
                let flat = self.reshape(node, x, vec![rows, k.clone()])?;
                let p = self.product_2d(node, flat, y, nb)?;
                return self.reshape(node, p, result);
            }
        }
        // A vector gathered through indices (`vals @ x[cols]`) is no strided
        // vector a vendor dot takes: rather than gather it into a temporary
        // first, one map sums the products into the result (spmv's row).
        let gathered = |e: &Elem| matches!(e, Elem::Gather(..));
        if na == 1 && nb == 1 && (gathered(&x) || gathered(&y)) {
            let prod = self.binary(node, BinaryOp::Mul, x.clone(), y.clone())?;
            let dtype = prod.dtype();
            // (A boolean dot is a logical or: the library node's.)
            if let Some(zero) =
                super::elementwise::wcr_identity(Wcr::Sum, dtype).filter(|_| dtype != DType::Bool)
            {
                let acc = self.new_transient("dot_", dtype, &[]);
                self.assign_region(node, acc.clone(), Elem::Lit(zero))?;
                self.reduce_into(node, acc.clone(), prod, Wcr::Sum)?;
                return Ok(Elem::Ref(acc));
            }
        }
        if na <= 2 && nb <= 2 {
            return self.product_2d(node, x, y, nb).and_then(|p| {
                if p.shape().as_deref() == Some(&result[..]) {
                    Ok(p)
                } else {
                    self.reshape(node, p, result)
                }
            });
        }
        // Stacks on the right: a batched product, unless a length of one
        // would hide a dimension from it; then the sum over the contracted
        // axis of the broadcast elementwise product.
        if na == 1 || sa.iter().chain(sb).any(unit) {
            // x[..., m, k, newaxis] * y[..., newaxis, k, n] (a vector x is
            // x[k, newaxis] against y[..., k, n]).
            let (xa, ya) = (self.plain(node, x)?, self.plain(node, y)?);
            let xe = add_axis(xa, na);
            let ye = if na == 1 { ya } else { add_axis(ya, nb - 2) };
            let prod = self.binary(node, BinaryOp::Mul, Elem::Ref(xe), Elem::Ref(ye))?;
            let rank = result.len() + 1;
            return self.reduce(
                node,
                prod,
                Wcr::Sum.into(),
                Some(vec![SymExpr::int(rank as i64 - 2)]),
                false,
                false,
            );
        }
        let op = LibraryOp::BatchedMatMul;
        self.library(node, op, &[("_a", x), ("_b", y)], "_c", Some(result))
    }

    /// A product of operands of ranks 1 and 2 (`nb`: the rank of `y`) none
    /// of whose dimensions but the contracted one may have length one: rows
    /// and columns of length one are indexed away (the IR's products see
    /// ranks without them).
    fn product_2d(&mut self, node: &impl Ranged, x: Elem, y: Elem, nb: usize) -> Result<Elem> {
        let unit = |e: &SymExpr| e.as_int() == Some(1);
        let (sa, sb) = (x.shape().unwrap_or_default(), y.shape().unwrap_or_default());
        let x = if sa.len() == 2 && unit(&sa[0]) {
            self.index_axis(node, x, 0)?
        } else {
            x
        };
        let y = if nb == 2 && unit(&sb[1]) {
            self.index_axis(node, y, 1)?
        } else {
            y
        };
        let (ra, rb) = (
            x.shape().map_or(0, |s| s.len()),
            y.shape().map_or(0, |s| s.len()),
        );
        let shape = match (ra, rb) {
            (2, 2) => vec![sa[0].clone(), sb[1].clone()],
            (2, 1) => vec![sa[0].clone()],
            (1, 2) => vec![sb[1].clone()],
            _ => vec![],
        };
        self.library(
            node,
            LibraryOp::MatMul,
            &[("_a", x), ("_b", y)],
            "_c",
            Some(shape),
        )
    }

    /// `e` with visible axis `axis` indexed at 0 (the axis removed).
    fn index_axis(&mut self, node: &impl Ranged, e: Elem, axis: usize) -> Result<Elem> {
        let mut r = match e {
            Elem::Ref(r) => r,
            other => self.plain(node, other)?,
        };
        let d = r.order.remove(axis);
        if let Dim::Range { start, .. } = &r.dims[d] {
            r.dims[d] = Dim::Index(start.clone());
        }
        Ok(Elem::Ref(r))
    }

    /// `e` without its visible axes of length one (DaCe's squeeze).
    fn squeeze(&mut self, node: &impl Ranged, e: Elem) -> Result<Elem> {
        let shape = e.shape().unwrap_or_default();
        let mut out = e;
        for axis in (0..shape.len()).rev() {
            if shape[axis].as_int() == Some(1) {
                out = self.index_axis(node, out, axis)?;
            }
        }
        Ok(out)
    }

    pub(super) fn reduce(
        &mut self,
        node: &impl Ranged,
        x: Elem,
        fold: Fold,
        axis: Option<Vec<SymExpr>>,
        keepdims: bool,
        mean: bool,
    ) -> Result<Elem> {
        let Fold { op, initial } = fold;
        if !self.map_ctx.is_empty() {
            return Err(self.err(node, unsupported("a reduction inside a `dace.map` body")));
        }
        let r = self.plain(node, x)?;
        // The maximum and minimum of booleans are their `or` and `and`.
        let op = match (op, r.dtype) {
            (Wcr::Max, DType::Bool) => Wcr::BitOr,
            (Wcr::Min, DType::Bool) => Wcr::BitAnd,
            (op, _) => op,
        };
        let shape = r.shape();
        let rank = shape.len();
        let axes: Vec<usize> = match axis {
            None => (0..rank).collect(),
            Some(list) => {
                let mut v = Vec::new();
                for a in list {
                    let k = a.as_int().ok_or_else(|| {
                        self.err(node, unsupported("a reduction axis that is not a constant"))
                    })?;
                    let k = if k < 0 { k + rank as i64 } else { k };
                    let k = usize::try_from(k)
                        .ok()
                        .filter(|k| *k < rank)
                        .ok_or_else(|| {
                            self.err(node, ErrorKind::Shape(format!("axis {k} out of range")))
                        })?;
                    v.push(k);
                }
                v.sort_unstable();
                v.dedup();
                v
            }
        };
        let out_shape: Vec<SymExpr> = shape
            .iter()
            .enumerate()
            .filter_map(|(d, s)| {
                if axes.contains(&d) {
                    keepdims.then(|| SymExpr::int(1))
                } else {
                    Some(s.clone())
                }
            })
            .collect();
        let dtype = r.dtype;
        let neutral = match (op, dtype) {
            (Wcr::Sum, d) if d.is_float() => Literal::Float {
                value: 0.0,
                dtype: d,
            },
            (Wcr::Product, d) if d.is_float() => Literal::Float {
                value: 1.0,
                dtype: d,
            },
            (Wcr::Max, d) if d.is_float() => Literal::Float {
                value: f64::NEG_INFINITY,
                dtype: d,
            },
            (Wcr::Min, d) if d.is_float() => Literal::Float {
                value: f64::INFINITY,
                dtype: d,
            },
            (Wcr::Sum, d) if d.is_signed_integer() => Literal::Int { value: 0, dtype: d },
            (Wcr::Product, d) if d.is_signed_integer() => Literal::Int { value: 1, dtype: d },
            (Wcr::Max, d) if d.is_signed_integer() => Literal::Int {
                value: i64::MIN >> (64 - 8 * d.size_bytes()),
                dtype: d,
            },
            (Wcr::Min, d) if d.is_signed_integer() => Literal::Int {
                value: i64::MAX >> (64 - 8 * d.size_bytes()),
                dtype: d,
            },
            (Wcr::BitAnd | Wcr::BitOr | Wcr::BitXor, d) if d.is_integer() || d == DType::Bool => {
                op.identity(d)
            }
            _ => return Err(self.err(node, unsupported(format!("a {op} reduction of {dtype}")))),
        };
        // NumPy starts a reduction with `initial` where one is given.
        let identity = initial.unwrap_or(neutral);
        // The node sees its operand through a memlet, which squeezes
        // dimensions of length one: the axes are renumbered among the others.
        // Reducing only axes of length one changes no value: it is a reshape.
        let unit = |d: usize| shape[d].as_int() == Some(1);
        let squeezed_rank = (0..rank).filter(|&d| !unit(d)).count();
        let squeezed_axes: Vec<usize> = axes
            .iter()
            .filter(|&&d| !unit(d))
            .map(|&d| (0..d).filter(|&e| !unit(e)).count())
            .collect();
        let axes_opt = if squeezed_axes.len() == squeezed_rank {
            None
        } else {
            Some(squeezed_axes.clone())
        };
        let red = if squeezed_axes.is_empty() {
            // Reducing only axes of length one changes no value: a copy
            // without those axes (with them, under `keepdims`).
            let mut view = r.clone();
            if !keepdims {
                for &d in &axes {
                    let dim = view.order[d];
                    if let Dim::Range { start, .. } = &view.dims[dim] {
                        view.dims[dim] = Dim::Index(start.clone());
                    }
                }
                view.order = (0..rank)
                    .filter(|d| !axes.contains(d))
                    .map(|d| r.order[d])
                    .collect();
            }
            let out = self.new_transient("red_", dtype, &out_shape);
            let value = match &initial {
                Some(start) => self.combine(node, op, Elem::Ref(view), Elem::Lit(*start))?,
                None => Elem::Ref(view),
            };
            self.assign_region(node, out.clone(), value)?;
            Elem::Ref(out)
        } else {
            self.library(
                node,
                LibraryOp::Reduce {
                    op,
                    axes: axes_opt,
                    identity: Some(identity),
                },
                &[("_in", Elem::Ref(r))],
                "_out",
                Some(out_shape),
            )?
        };
        if !mean {
            return Ok(red);
        }
        let count = axes
            .iter()
            .fold(SymExpr::int(1), |acc, &d| acc * shape[d].clone());
        let t = if dtype.is_float() {
            dtype
        } else {
            DType::Float64
        };
        Ok(Elem::Binary(
            BinaryOp::Div,
            Box::new(red),
            Box::new(Elem::Sym(count)),
            t,
        ))
    }
}

/// NumPy's shape of `x @ y` for operand shapes `a` and `b`, or `None` when
/// NumPy refuses the product (a rank of zero, contracted lengths that are
/// different constants, batch dimensions that do not broadcast).
fn matmul_shape(a: &[SymExpr], b: &[SymExpr]) -> Option<Vec<SymExpr>> {
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 {
        return None;
    }
    let ka = &a[na - 1];
    let kb = if nb == 1 { &b[0] } else { &b[nb - 2] };
    // Different constants, or a literal one against a length that is not
    // (NumPy accepts that only where the length is one at run time).
    let one = |e: &SymExpr| e.as_int() == Some(1);
    if (ka - kb).as_int().is_some_and(|d| d != 0) || one(ka) != one(kb) {
        return None;
    }
    let batch_a = if na >= 2 { &a[..na - 2] } else { &[][..] };
    let batch_b = if nb >= 2 { &b[..nb - 2] } else { &[][..] };
    let mut out = broadcast(batch_a, batch_b)?;
    if na >= 2 {
        out.push(a[na - 2].clone());
    }
    if nb >= 2 {
        out.push(b[nb - 1].clone());
    }
    Some(out)
}

/// A region with a new axis of length one at visible position `at`.
fn add_axis(mut r: ArrayRef, at: usize) -> ArrayRef {
    r.dims.push(Dim::NewAxis);
    r.order.insert(at, r.dims.len() - 1);
    r
}

fn join_shape(s: &[SymExpr]) -> String {
    s.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a reduction folds its elements: the operator, and the value it
/// starts from where NumPy's `initial` gives one (else the operator's
/// identity).
pub(super) struct Fold {
    pub op: Wcr,
    pub initial: Option<Literal>,
}

impl From<Wcr> for Fold {
    fn from(op: Wcr) -> Fold {
        Fold { op, initial: None }
    }
}
