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

    pub(super) fn matmul(&mut self, node: &impl Ranged, x: Elem, y: Elem) -> Result<Elem> {
        let (sa, sb) = (
            x.shape().ok_or_else(|| {
                self.err(
                    node,
                    ErrorKind::Shape("operands do not broadcast".to_owned()),
                )
            })?,
            y.shape().ok_or_else(|| {
                self.err(
                    node,
                    ErrorKind::Shape("operands do not broadcast".to_owned()),
                )
            })?,
        );
        let shape = match (sa.len(), sb.len()) {
            (2, 2) => vec![sa[0].clone(), sb[1].clone()],
            (2, 1) => vec![sa[0].clone()],
            (1, 2) => vec![sb[1].clone()],
            (1, 1) => vec![],
            (n, 2) if n >= 3 => {
                let mut s = sa[..n - 1].to_vec();
                s.push(sb[1].clone());
                s
            }
            (n, m) if n >= 2 && m >= 3 => {
                let batch = broadcast(&sa[..n - 2], &sb[..m - 2]).ok_or_else(|| {
                    self.err(node, ErrorKind::Shape("batch dimensions".to_owned()))
                })?;
                let mut s = batch;
                s.push(sa[n - 2].clone());
                s.push(sb[m - 1].clone());
                s
            }
            _ => {
                return Err(self.err(
                    node,
                    ErrorKind::Shape(format!("`@` of ranks {} and {}", sa.len(), sb.len())),
                ));
            }
        };
        // Stacks of matrices are a batched product (the IR's MatMul takes
        // ranks 1 and 2 only).
        let op = if sa.len() >= 3 || sb.len() >= 3 {
            LibraryOp::BatchedMatMul
        } else {
            LibraryOp::MatMul
        };
        self.library(node, op, &[("_a", x), ("_b", y)], "_c", Some(shape))
    }

    pub(super) fn reduce(
        &mut self,
        node: &impl Ranged,
        x: Elem,
        op: Wcr,
        axis: Option<Vec<SymExpr>>,
        keepdims: bool,
        mean: bool,
    ) -> Result<Elem> {
        if !self.map_ctx.is_empty() {
            return Err(self.err(node, unsupported("a reduction inside a `dace.map` body")));
        }
        let r = self.plain(node, x)?;
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
        let identity = match (op, dtype) {
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
            _ => return Err(self.err(node, unsupported(format!("a {op} reduction of {dtype}")))),
        };
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
            self.assign_region(node, out.clone(), Elem::Ref(view))?;
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
