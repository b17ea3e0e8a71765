//! Elementwise assignment: one map per write, its tasklet code, gathers and scatters through pointer connectors.

use super::*;

impl<'m> Lowerer<'m> {
    /// Whether the iterations of the enclosing maps write disjoint parts of
    /// `target`: every map parameter, plus a constant, indexes one of the
    /// target's dimensions (so different iterations differ there, whatever
    /// the region's other dimensions cover).
    pub(super) fn owns_element(&self, target: &ArrayRef) -> bool {
        if target.reshaped.is_some() {
            return false;
        }
        let indices: Vec<&SymExpr> = target
            .dims
            .iter()
            .filter_map(|d| match d {
                Dim::Index(e) => Some(e),
                _ => None,
            })
            .collect();
        self.map_ctx.iter().all(|(p, _)| {
            let param = SymExpr::symbol(p.clone());
            indices.iter().any(|i| (*i - &param).as_int().is_some())
        })
    }

    /// `target[...] = value`, elementwise with broadcasting, as one map.
    pub(super) fn assign_region(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        value: Elem,
    ) -> Result<()> {
        self.write(node, target, None, value, None)
    }

    /// `target[...] = value` (with `scatter`, `target[i0, i1, ...] = value`
    /// through index values, a store through a pointer connector), or with
    /// `wcr` the combining update, elementwise with broadcasting, as one map.
    pub(super) fn write(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        scatter: Option<Vec<Elem>>,
        value: Elem,
        wcr: Option<Wcr>,
    ) -> Result<()> {
        self.write_with(node, target, scatter, value, wcr, false)
    }

    /// `target op= sum over value's elements` for a single element
    /// `target`: one map over `value`'s shape whose points all combine into
    /// it with `w` (a reduction without a temporary for its operand, which
    /// a gather would otherwise need).
    pub(super) fn reduce_into(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        value: Elem,
        w: Wcr,
    ) -> Result<()> {
        self.write_with(node, target, None, value, Some(w), true)
    }

    /// [`Self::write`]; with `over_value`, the map runs over the value's
    /// shape into the one element `target` is ([`Self::reduce_into`]).
    fn write_with(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        scatter: Option<Vec<Elem>>,
        value: Elem,
        wcr: Option<Wcr>,
        over_value: bool,
    ) -> Result<()> {
        let value = match self
            .pred
            .iter()
            .cloned()
            .reduce(|a, b| Elem::Binary(BinaryOp::And, Box::new(a), Box::new(b), DType::Bool))
        {
            // Where the predicate is false the element keeps its value: a
            // plain write writes it back, a combining one adds the identity.
            Some(p) => {
                let keep = match (wcr, &scatter) {
                    (None, None) => Elem::Ref(target.clone()),
                    (None, Some(index)) => Elem::Gather(target.clone(), index.clone()),
                    (Some(w), _) => Elem::Lit(wcr_identity(w, target.dtype).ok_or_else(|| {
                        self.err(
                            node,
                            unsupported(format!("a conditional {w} update of {}", target.dtype)),
                        )
                    })?),
                };
                Elem::Select(Box::new(p), Box::new(value), Box::new(keep), target.dtype)
            }
            None => value,
        };
        if self.reshaped.contains(&target.data) {
            return Err(self.err(node, unsupported("writing into the result of `reshape` (it is a copy; write the original array instead)")));
        }
        if over_value && !target.shape().is_empty() {
            return Err(self.err(
                node,
                ErrorKind::Shape("a reduction into more than one element".to_owned()),
            ));
        }
        let tshape = match &scatter {
            None if over_value => value.shape().unwrap_or_default(),
            None => target.shape(),
            Some(index) => index
                .iter()
                .try_fold(Vec::new(), |acc, i| broadcast(&acc, &i.shape()?))
                .ok_or_else(|| {
                    self.err(
                        node,
                        ErrorKind::Shape("index arrays do not broadcast".to_owned()),
                    )
                })?,
        };
        let mut vshape = value.shape().ok_or_else(|| {
            self.err(
                node,
                ErrorKind::Shape("operands do not broadcast".to_owned()),
            )
        })?;
        // DaCe copies between regions whose shapes agree once dimensions
        // of length one are squeezed out (stockham_fft's
        // `Dv[:, :, k] = np.reshape(tmpv[0], (R, R**i, 1))`), where NumPy
        // refuses the assignment: the value is reshaped to the target's
        // shape.
        let mut value = value;
        let squeezed = |s: &[SymExpr]| -> Vec<SymExpr> {
            s.iter()
                .filter(|d| d.as_int() != Some(1))
                .cloned()
                .collect()
        };
        if broadcast(&tshape, &vshape).as_deref() != Some(&tshape[..])
            && scatter.is_none()
            && squeezed(&tshape) == squeezed(&vshape)
        {
            value = self.reshape(node, value, tshape.clone())?;
            vshape = tshape.clone();
        }
        if broadcast(&tshape, &vshape).as_deref() != Some(&tshape[..]) {
            let show = |s: &[SymExpr]| {
                format!(
                    "({})",
                    s.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(self.err(
                node,
                ErrorKind::Shape(format!(
                    "cannot assign shape {} to shape {}",
                    show(&vshape),
                    show(&tshape)
                )),
            ));
        }
        // NumPy evaluates the whole right-hand side first: if it reads the
        // target anywhere but at the element being written, evaluate it into
        // a temporary.
        let mut borrowed = Vec::new();
        value.refs(&mut borrowed);
        let mut bases = Vec::new();
        value.gathered(&mut bases);
        let aliased = borrowed
            .iter()
            .any(|r| r.data == target.data && (**r != target || scatter.is_some()))
            || bases.iter().any(|b| b.data == target.data);
        let value = if aliased {
            if !self.map_ctx.is_empty() {
                return Err(self.err(
                    node,
                    unsupported("a `dace.map` body reading its target at another index"),
                ));
            }
            let tmp = self.new_transient("tmp_", value.dtype(), &vshape);
            self.assign_region(node, tmp.clone(), value)?;
            Elem::Ref(tmp)
        } else {
            value
        };

        // Map scopes: one per enclosing `dace.map` statement (an inner range
        // may depend on an outer parameter), then one over the target's axes.
        let mut levels: Vec<(Vec<String>, Vec<Range>)> = Vec::new();
        let mut last_level = None;
        for ((p, r), level) in self.map_ctx.iter().zip(&self.map_level) {
            if last_level != Some(*level) {
                levels.push((Vec::new(), Vec::new()));
                last_level = Some(*level);
            }
            if let Some(l) = levels.last_mut() {
                l.0.push(p.clone());
                l.1.push(r.clone());
            }
        }
        let mut own = (Vec::new(), Vec::new());
        let axis_params: Vec<SymExpr> = tshape
            .iter()
            .map(|len| {
                let p = self.fresh("__i");
                own.0.push(p.clone());
                own.1.push(Range::slice(SymExpr::int(0), len.clone()));
                SymExpr::symbol(p)
            })
            .collect();
        if !own.0.is_empty() {
            levels.push(own);
        }

        // Inputs: one scalar connector per distinct region read elementwise
        // (the value's and the scatter indices'), one pointer connector per
        // distinct region read indirectly.
        let mut refs = Vec::new();
        value.refs(&mut refs);
        let mut bases = Vec::new();
        value.gathered(&mut bases);
        for i in scatter.iter().flatten() {
            i.refs(&mut refs);
            i.gathered(&mut bases);
        }
        let mut inputs: Vec<(ArrayRef, String)> = Vec::new();
        for r in refs {
            if !inputs.iter().any(|(x, _)| x == r) {
                inputs.push((r.clone(), format!("__in{}", inputs.len())));
            }
        }
        let mut pointers: Vec<(ArrayRef, String)> = Vec::new();
        for b in bases {
            if !pointers.iter().any(|(x, _)| x == b) {
                pointers.push((b.clone(), format!("__ptr{}", pointers.len())));
            }
        }
        let conn_of = |r: &ArrayRef, pointer: bool| {
            let list = if pointer { &pointers } else { &inputs };
            list.iter().find(|(x, _)| x == r).map(|(_, c)| c.clone())
        };
        let code = self.code(node, &value, &conn_of)?;
        let code = cast(code, value.dtype(), target.dtype).map_err(|k| self.err(node, k))?;
        let (stmt, out_conn, out_memlet) = match &scatter {
            None => (
                code::Stmt::assign("__out", code),
                Connector::scalar("__out", target.dtype),
                Memlet::new(
                    &target.data,
                    Subset::at(target.index(if over_value { &[] } else { &axis_params })),
                ),
            ),
            Some(index) => (
                code::Stmt::Store {
                    conn: "__out".to_owned(),
                    index: self.load_index(node, &target, index, &conn_of)?,
                    value: code,
                },
                Connector::pointer("__out", target.dtype),
                Memlet::new(&target.data, target.subset()).into_dynamic(),
            ),
        };
        let mut memlets: Vec<(Connector, Memlet)> = inputs
            .iter()
            .map(|(r, conn)| {
                let at = aligned(&r.shape(), &tshape, &axis_params);
                (
                    Connector::scalar(conn, r.dtype),
                    Memlet::new(&r.data, Subset::at(r.index(&at))),
                )
            })
            .collect();
        memlets.extend(pointers.iter().map(|(b, conn)| {
            (
                Connector::pointer(conn, b.dtype),
                Memlet::new(&b.data, b.subset()).into_dynamic(),
            )
        }));
        let out_memlet = match wcr {
            Some(w) => out_memlet.with_wcr(w),
            None => out_memlet,
        };
        let line = self.line(node);
        let maps: Vec<Map> = levels
            .into_iter()
            .enumerate()
            .map(|(k, (params, ranges))| Map {
                label: format!("{}_l{line}_{k}", target.data),
                params,
                ranges,
                schedule: Schedule::Default,
            })
            .collect();
        self.state(node, "assign", move |s| {
            let in_conns: Vec<Connector> = memlets.iter().map(|(c, _)| c.clone()).collect();
            let t = s.tasklet("assign", in_conns, vec![out_conn], vec![stmt]);
            let out = s.access(&out_memlet.data);
            if maps.is_empty() {
                for (conn, m) in memlets {
                    let a = s.access(&m.data);
                    s.edge(a, None, t, Some(&conn.name), m);
                }
                s.edge(t, Some("__out"), out, None, out_memlet);
                return;
            }
            let scopes: Vec<_> = maps.into_iter().map(|m| s.map_with(m)).collect();
            let entries: Vec<_> = scopes.iter().map(|(e, _)| *e).collect();
            let exits: Vec<_> = scopes.iter().rev().map(|(_, x)| *x).collect();
            if memlets.is_empty() {
                // Order each scope inside its parent, and the tasklet inside the innermost.
                for w in entries.windows(2) {
                    s.empty_edge(w[0], w[1]);
                }
                if let Some(last) = entries.last() {
                    s.empty_edge(*last, t);
                }
            }
            for (conn, m) in memlets {
                let mut path = vec![s.access(&m.data)];
                path.extend(&entries);
                path.push(t);
                s.path(&path, None, Some(&conn.name), m);
            }
            let mut path = vec![t];
            path.extend(&exits);
            path.push(out);
            s.path(&path, Some("__out"), None, out_memlet);
        })
    }

    /// The indices of a load from or store into `base` through a pointer
    /// connector whose memlet is `base`'s region: one per axis the memlet
    /// does not squeeze (an axis of length one takes no index).
    pub(super) fn load_index(
        &self,
        node: &impl Ranged,
        base: &ArrayRef,
        index: &[Elem],
        conn_of: &dyn Fn(&ArrayRef, bool) -> Option<String>,
    ) -> Result<Vec<code::Expr>> {
        let subset = base.subset();
        let mut out = Vec::new();
        for (axis, i) in base.order.iter().zip(index) {
            let kept = subset.ranges.get(*axis).is_some_and(|r| !r.is_index());
            if kept {
                out.push(self.converted(node, i, DType::Int64, conn_of)?);
            }
        }
        Ok(out)
    }

    /// Tasklet code for `x` converted to `to` (see [`cast`]).
    fn converted(
        &self,
        node: &impl Ranged,
        x: &Elem,
        to: DType,
        conn_of: &dyn Fn(&ArrayRef, bool) -> Option<String>,
    ) -> Result<code::Expr> {
        cast(self.code(node, x, conn_of)?, x.dtype(), to).map_err(|k| self.err(node, k))
    }

    /// Tasklet code for an elementwise expression.
    pub(super) fn code(
        &self,
        node: &impl Ranged,
        e: &Elem,
        conn_of: &dyn Fn(&ArrayRef, bool) -> Option<String>,
    ) -> Result<code::Expr> {
        let bad = || self.err(node, unsupported("this expression in elementwise code"));
        Ok(match e {
            Elem::Ref(r) => code::Expr::var(conn_of(r, false).ok_or_else(bad)?),
            Elem::Gather(base, index) => code::Expr::Load {
                conn: conn_of(base, true).ok_or_else(bad)?,
                index: self.load_index(node, base, index, conn_of)?,
            },
            Elem::Sym(s) => sym_code(s).ok_or_else(|| {
                self.err(
                    node,
                    unsupported("a data-dependent integer in elementwise code"),
                )
            })?,
            Elem::Lit(l) => code::Expr::Lit(*l),
            Elem::Unary(op, x) => {
                let t = e.dtype();
                code::Expr::unary(*op, self.converted(node, x, t, conn_of)?)
            }
            Elem::Binary(op, x, y, t) => code::Expr::binary(
                *op,
                self.converted(node, x, *t, conn_of)?,
                self.converted(node, y, *t, conn_of)?,
            ),
            Elem::Call(f, args, t) => code::Expr::call(
                *f,
                args.iter()
                    .map(|a| self.converted(node, a, *t, conn_of))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Elem::Select(c, a, b, t) => code::Expr::select(
                self.converted(node, c, DType::Bool, conn_of)?,
                self.converted(node, a, *t, conn_of)?,
                self.converted(node, b, *t, conn_of)?,
            ),
            Elem::Cast(t, x) => self.converted(node, x, *t, conn_of)?,
        })
    }
}

/// The value a write-conflict resolution leaves unchanged, for a write that
/// a false predicate turns into no update.
pub(super) fn wcr_identity(w: Wcr, dtype: DType) -> Option<Literal> {
    let unit = match w {
        Wcr::Sum => 0.0,
        Wcr::Product => 1.0,
        Wcr::Min | Wcr::Max => return None,
        Wcr::BitAnd | Wcr::BitOr | Wcr::BitXor => return Some(w.identity(dtype)),
    };
    Literal::f64(unit)
        .with_dtype(dtype)
        .or_else(|| Literal::i64(unit as i64).with_dtype(dtype))
}

/// Casts `e` of type `from` to `to` (a no-op when equal; literals are
/// retyped). A complex value has no real conversion: NumPy refuses to store
/// one in a real array (`TypeError`) and `astype` would drop the imaginary
/// part with only a warning, so the program must say which part it means.
fn cast(e: code::Expr, from: DType, to: DType) -> std::result::Result<code::Expr, ErrorKind> {
    if from == to {
        return Ok(e);
    }
    if from.is_complex() && !to.is_complex() {
        return Err(ErrorKind::Type(format!(
            "a {from} value cannot become {to} (it would drop the imaginary part): take `.real`, `.imag` or `abs()` first"
        )));
    }
    Ok(cast_real(e, to))
}

/// [`cast`] of a value that is not complex or becomes complex.
fn cast_real(e: code::Expr, to: DType) -> code::Expr {
    if let code::Expr::Lit(l) = &e {
        let v = match *l {
            Literal::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            Literal::Int { value, .. } => Some(value as f64),
            Literal::Float { value, .. } => Some(value),
            _ => None,
        };
        if let Some(v) = v {
            if to.is_float() {
                return code::Expr::Lit(Literal::Float {
                    value: v,
                    dtype: to,
                });
            }
            if to.is_signed_integer() && v.fract() == 0.0 {
                return code::Expr::Lit(Literal::Int {
                    value: v as i64,
                    dtype: to,
                });
            }
            if to.is_unsigned_integer() && v.fract() == 0.0 && v >= 0.0 {
                return code::Expr::Lit(Literal::UInt {
                    value: v as u64,
                    dtype: to,
                });
            }
        }
    }
    code::Expr::cast(to, e)
}

/// The visible indices of a region of shape `shape` broadcast against a
/// target of shape `target` iterated by `params` (right-aligned; axes of
/// length one where the target's is not take index 0).
fn aligned(shape: &[SymExpr], target: &[SymExpr], params: &[SymExpr]) -> Vec<SymExpr> {
    let offset = target.len().saturating_sub(shape.len());
    shape
        .iter()
        .enumerate()
        .map(|(k, len)| {
            let t = k + offset;
            if len.as_int() == Some(1) && target.get(t).and_then(SymExpr::as_int) != Some(1) {
                SymExpr::int(0)
            } else {
                params.get(t).cloned().unwrap_or(SymExpr::int(0))
            }
        })
        .collect()
}
