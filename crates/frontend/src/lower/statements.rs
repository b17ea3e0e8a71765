//! Statements: assignments, loops, conditionals, returns.

use super::*;

impl<'m> Lowerer<'m> {
    pub(super) fn body(&mut self, stmts: &[Stmt]) -> Result<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    /// Runs `f` one nesting level deeper, or fails at `node` beyond [`MAX_NESTING`].
    pub(super) fn deeper<T>(
        &mut self,
        node: &impl Ranged,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        if self.depth >= MAX_NESTING {
            return Err(self.err(
                node,
                unsupported(format!(
                    "statements and expressions nested more than {MAX_NESTING} levels deep"
                )),
            ));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<()> {
        // The statement the blocks pushed now come from (an invalid SDFG
        // is reported at it).
        let outer = self.statement.replace(s.range());
        let r = self.deeper(s, |l| l.stmt_inner(s));
        self.statement = outer;
        r
    }

    pub(super) fn stmt_inner(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Pass(_) => Ok(()),
            Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_)) => Ok(()),
            // A call for its effect (`np.add(a, b, out=c)`, a program that
            // writes its arguments): evaluate it, drop the value.
            Stmt::Expr(e) if matches!(&*e.value, Expr::Call(_)) => self.elem(&e.value).map(drop),
            // Each kind of statement has a method of its own: this function
            // is on the recursion path of nested blocks, so its frame stays small.
            Stmt::Assign(a) => self.assign_stmt(a),
            Stmt::AnnAssign(a) => self.annotated_assign(a),
            Stmt::AugAssign(a) => self.augmented_assign(a),
            Stmt::For(f) => self.for_loop(f),
            Stmt::While(w) => self.while_loop(w),
            Stmt::If(i) if !self.map_ctx.is_empty() => self.map_body_if(i),
            Stmt::If(i) => {
                let cond = self.condition(&i.test)?;
                let rest: Vec<(Option<&Expr>, &[Stmt])> = i
                    .elif_else_clauses
                    .iter()
                    .map(|c| (c.test.as_ref(), &c.body[..]))
                    .collect();
                self.if_chain(i, cond, &i.body, &rest)
            }
            Stmt::Break(b) => {
                let label = format!("break_l{}_{}", self.line(b), self.fresh(""));
                self.push_block(label, BlockKind::Break);
                Ok(())
            }
            Stmt::Continue(c) => {
                let label = format!("continue_l{}_{}", self.line(c), self.fresh(""));
                self.push_block(label, BlockKind::Continue);
                Ok(())
            }
            Stmt::With(w) if self.is_tasklet_block(w) => self.explicit_body(&w.body),
            Stmt::FunctionDef(f) => self.decorated_function(f),
            Stmt::Return(r) if !self.inlining.is_empty() => self.inlined_return(r),
            Stmt::Return(r) => self.program_return(r),
            other => Err(self.err(
                other,
                unsupported(format!("statement {}", self.m.source.quoted(other.range()))),
            )),
        }
    }

    /// `x = v`, `a, b = u, v` and `a, b = program(...)`.
    pub(super) fn assign_stmt(&mut self, a: &ast::StmtAssign) -> Result<()> {
        let [target] = &a.targets[..] else {
            return Err(self.err(a, unsupported("chained assignment")));
        };
        match (target, &*a.value) {
            (Expr::Tuple(ts), Expr::Tuple(vs)) if ts.elts.len() == vs.elts.len() => {
                // Evaluate every value before assigning any target.
                let values = vs
                    .elts
                    .iter()
                    .map(|v| self.elem(v))
                    .collect::<Result<Vec<_>>>()?;
                let values = values
                    .into_iter()
                    .map(|v| {
                        if v.as_sym().is_some() {
                            Ok(v)
                        } else {
                            self.materialize(a, v).map(Elem::Ref)
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                for (t, v) in ts.elts.iter().zip(values) {
                    self.assign(t, v)?;
                }
                Ok(())
            }
            (Expr::Tuple(ts), Expr::Call(c)) => {
                // `KE, PE = program(...)`, `q, r = divmod(a, b)`.
                let values = match self.numpy_results(c, ts.elts.len())? {
                    Some(v) => Some(v),
                    None => self.call_results(c)?,
                };
                let Some(values) = values else {
                    return Err(self.err(a, unsupported("unpacking a value that is not a tuple")));
                };
                if values.len() != ts.elts.len() {
                    return Err(self.err(
                        a,
                        ErrorKind::Shape(format!(
                            "{} names for {} values",
                            ts.elts.len(),
                            values.len()
                        )),
                    ));
                }
                for (t, v) in ts.elts.iter().zip(values) {
                    self.assign(t, v)?;
                }
                Ok(())
            }
            _ => {
                let v = self.elem(&a.value)?;
                self.assign(target, v)
            }
        }
    }

    /// `x: dtype = v`: a scalar of the annotated type, whatever the
    /// value's own type (outside maps a container, so that an integer does
    /// not become a symbol).
    pub(super) fn annotated_assign(&mut self, a: &ast::StmtAnnAssign) -> Result<()> {
        let (Expr::Name(n), Some(value)) = (&*a.target, &a.value) else {
            return Err(self.err(a, unsupported("an annotation without a value")));
        };
        let dtype = self.m.dtype_of(&a.annotation).ok_or_else(|| {
            self.err(
                &*a.annotation,
                unsupported("an annotation that is not a scalar dtype"),
            )
        })?;
        let v = self.elem(value)?;
        if v.shape().is_some_and(|s| !s.is_empty()) {
            return Err(self.err(
                &**value,
                unsupported("an array value for a scalar annotation"),
            ));
        }
        let v = Elem::Cast(dtype, Box::new(v));
        if !self.map_ctx.is_empty() {
            return self.assign(&a.target, v);
        }
        let r = self.new_transient(&format!("{}_", n.id), dtype, &[]);
        self.declared.insert(r.data.clone());
        self.assign_region(a, r.clone(), v)?;
        self.names.insert(n.id.to_string(), Name::Ref(r));
        Ok(())
    }

    /// `x op= v`.
    pub(super) fn augmented_assign(&mut self, a: &ast::StmtAugAssign) -> Result<()> {
        let op = binary_op(a.op)
            .ok_or_else(|| self.err(a, unsupported(format!("operator `{}=`", a.op.as_str()))))?;
        let rhs = self.elem(&a.value)?;
        if let Expr::Name(n) = &*a.target
            && let Some(Name::Sym(sym)) = self.names.get(n.id.as_str()).cloned()
        {
            let r = rhs.as_sym().ok_or_else(|| {
                self.err(a, unsupported("non-integer update of an integer variable"))
            })?;
            let cur = SymExpr::symbol(sym.clone());
            let v = Elem::Binary(
                op,
                Box::new(Elem::Sym(cur)),
                Box::new(Elem::Sym(r)),
                DType::Int64,
            )
            .as_sym()
            .ok_or_else(|| self.err(a, unsupported("this integer update")))?;
            self.assign_symbol(a, &sym, v);
            return Ok(());
        }
        if let Expr::Name(n) = &*a.target
            && let Some(Name::Local(old)) = self.names.get(n.id.as_str()).cloned()
        {
            let v = self.binary(a, op, old, rhs)?;
            return self.assign(&a.target, v);
        }
        let (target, scatter) = self.write_target(&a.target)?;
        // Inside a map, iterations that update the same element
        // conflict: the update is a write-conflict resolution
        // (atomic on a device) unless every iteration owns its
        // element. An indirect update may always conflict.
        if let Some(wcr) = wcr_of(op)
            && !self.map_ctx.is_empty()
            && (scatter.is_some() || !self.owns_element(&target))
        {
            let rhs = Elem::Cast(target.dtype, Box::new(rhs));
            return self.write(a, target, scatter, rhs, Some(wcr));
        }
        let current = match &scatter {
            None => Elem::Ref(target.clone()),
            Some(index) => Elem::Gather(target.clone(), index.clone()),
        };
        let value = self.binary(a, op, current, rhs)?;
        self.write(a, target, scatter, value, None)
    }

    /// `while cond:`.
    pub(super) fn while_loop(&mut self, w: &ast::StmtWhile) -> Result<()> {
        if !w.orelse.is_empty() {
            return Err(self.err(w, unsupported("`while ... else`")));
        }
        // A condition on data is computed by states of its own
        // (`pre`). They must run before *every* test, not once
        // before the loop (the loop would never see the body's
        // writes): such a loop becomes `while True:` whose body
        // starts with `pre` and `if not cond: break`.
        let (cond, pre) = self.condition_states(&w.test)?;
        let loop_label = format!("while_l{}_{}", self.line(w), self.fresh(""));
        let (cond, body) = if pre.blocks.is_empty() {
            (cond, self.nested(|l| l.body(&w.body))?)
        } else {
            let exit = Region::new(vec![ControlBlock::new(
                format!("while_exit_l{}_{}", self.line(w), self.fresh("")),
                BlockKind::Break,
            )]);
            let test_label = format!("while_test_l{}_{}", self.line(w), self.fresh(""));
            let body = self.nested(|l| {
                if let Some(r) = l.stack.last_mut() {
                    r.blocks.extend(pre.blocks);
                }
                l.push_block(
                    test_label,
                    BlockKind::Conditional(ConditionalBlock {
                        branches: vec![(cond.not(), exit)],
                        otherwise: None,
                    }),
                );
                l.body(&w.body)
            })?;
            (SymCond::constant(true), body)
        };
        self.push_block(
            loop_label,
            BlockKind::Loop(LoopBlock::while_loop(cond, body)),
        );
        Ok(())
    }

    /// `if` inside a map body: branches become predicated assignments.
    pub(super) fn map_body_if(&mut self, i: &ast::StmtIf) -> Result<()> {
        // Inside a map body, branches become predicated assignments.
        let cond = Elem::Cast(DType::Bool, Box::new(self.elem(&i.test)?));
        let mut taken = vec![cond.clone()];
        self.pred.push(cond);
        let r = self.body(&i.body);
        self.pred.pop();
        r?;
        for clause in &i.elif_else_clauses {
            let not_before = taken
                .iter()
                .map(|c| Elem::Unary(UnaryOp::Not, Box::new(c.clone())))
                .reduce(|a, b| Elem::Binary(BinaryOp::And, Box::new(a), Box::new(b), DType::Bool))
                .unwrap_or(Elem::Lit(Literal::Bool(true)));
            let here = match &clause.test {
                Some(t) => {
                    let c = Elem::Cast(DType::Bool, Box::new(self.elem(t)?));
                    taken.push(c.clone());
                    Elem::Binary(
                        BinaryOp::And,
                        Box::new(not_before),
                        Box::new(c),
                        DType::Bool,
                    )
                }
                None => not_before,
            };
            self.pred.push(here);
            let r = self.body(&clause.body);
            self.pred.pop();
            r?;
        }
        Ok(())
    }

    /// A tail `return` of an inlined program: writes its result.
    pub(super) fn inlined_return(&mut self, r: &ast::StmtReturn) -> Result<()> {
        // A tail return of an inlined program writes its result.
        let v = r
            .value
            .as_deref()
            .ok_or_else(|| self.err(r, unsupported("an inlined program returning nothing")))?;
        if let Expr::Tuple(t) = v {
            if !self.map_ctx.is_empty() || self.inlining.last().is_some_and(|f| f.result.is_some())
            {
                return Err(self.err(
                    r,
                    unsupported("a tuple `return` in a `dace.map` body or after another `return`"),
                ));
            }
            let mut values = Vec::with_capacity(t.elts.len());
            for x in &t.elts {
                let e = self.elem(x)?;
                let shape = e.shape().ok_or_else(|| {
                    self.err(x, ErrorKind::Shape("operands do not broadcast".to_owned()))
                })?;
                // A copy: the caller reads it after the callee's
                // names are gone, and may write the value elsewhere.
                let out = self.new_transient("ret_", e.dtype(), &shape);
                self.assign_region(x, out.clone(), e)?;
                values.push(out);
            }
            if let Some(f) = self.inlining.last_mut() {
                f.result = Some(InlineResult::Tuple(values));
            }
            return Ok(());
        }
        let e = self.elem(v)?;
        if !self.map_ctx.is_empty() && e.shape().is_some_and(|s| s.is_empty()) {
            let frame = self.inlining.last_mut();
            return match frame {
                Some(f) if f.result.is_none() && self.pred.is_empty() => {
                    f.result = Some(InlineResult::Local(e));
                    Ok(())
                }
                _ => Err(self.err(
                    r,
                    unsupported("a conditional or repeated `return` of a program inlined in a `dace.map` body"),
                )),
            };
        }
        let existing = match self.inlining.last().and_then(|f| f.result.as_ref()) {
            Some(InlineResult::Region(t)) => Some(t.clone()),
            Some(InlineResult::Local(_) | InlineResult::Tuple(_)) => {
                return Err(self.err(
                    r,
                    unsupported(
                        "a repeated `return` of a program returning a tuple or inlined in a `dace.map` body",
                    ),
                ));
            }
            None => None,
        };
        let target = match existing {
            Some(t) => t,
            None => {
                let shape = e.shape().ok_or_else(|| {
                    self.err(v, ErrorKind::Shape("operands do not broadcast".to_owned()))
                })?;
                let t = self.new_transient("ret_", e.dtype(), &shape);
                if let Some(f) = self.inlining.last_mut() {
                    f.result = Some(InlineResult::Region(t.clone()));
                }
                t
            }
        };
        self.assign_region(r, target, e)
    }

    /// `return` of the program being compiled: writes `__return` (or
    /// `__return_0`, ... for a tuple) and leaves.
    pub(super) fn program_return(&mut self, r: &ast::StmtReturn) -> Result<()> {
        if let Some(v) = &r.value {
            let values: Vec<&Expr> = match &**v {
                Expr::Tuple(t) => t.elts.iter().collect(),
                one => vec![one],
            };
            let many = values.len() > 1;
            for (k, v) in values.into_iter().enumerate() {
                let e = self.elem(v)?;
                let name = if many {
                    format!("__return_{k}")
                } else {
                    "__return".to_owned()
                };
                let shape = e.shape().ok_or_else(|| {
                    self.err(v, ErrorKind::Shape("operands do not broadcast".to_owned()))
                })?;
                let dtype = e.dtype();
                let desc = if shape.is_empty() {
                    DataDesc::scalar(dtype).into_transient()
                } else {
                    DataDesc::array(dtype, shape.clone()).into_transient()
                };
                // Every `return` writes the same containers: one that
                // returns another type or shape than an earlier one
                // is reported here, not as an invalid SDFG.
                if let Some(old) = self.sdfg.containers.get(&name)
                    && *old != desc
                {
                    return Err(self.err(
                        v,
                        unsupported(format!(
                            "returning a {dtype} value of shape ({}) where an earlier \
                             `return` gives a {} value of another shape or type",
                            join(&shape),
                            old.dtype
                        )),
                    ));
                }
                self.sdfg.containers.insert(name.clone(), desc);
                let target = ArrayRef::whole(&name, dtype, &shape, shape.is_empty());
                self.assign_region(v, target, e)?;
            }
        }
        let label = format!("return_l{}_{}", self.line(r), self.fresh(""));
        self.push_block(label, BlockKind::Return);
        Ok(())
    }

    /// `target = value` for a name, a subscript or an attribute.
    pub(super) fn assign(&mut self, target: &Expr, value: Elem) -> Result<()> {
        // The output connector of an explicit tasklet: its memlet's write.
        if let Expr::Name(n) = target
            && let Some(written) = self.write_output(target, n.id.as_str(), &value)
        {
            written?;
            self.names.insert(n.id.to_string(), Name::Local(value));
            return Ok(());
        }
        match target {
            Expr::Name(n) => {
                let name = n.id.to_string();
                if self.map_ctx.is_empty()
                    && let Some(v) = value.as_sym()
                    && !matches!(self.names.get(&name), Some(Name::Ref(_)))
                    && !self.map_updated.contains(&name)
                {
                    // An integer computed from symbols stays a symbol.
                    let sym = match self.names.get(&name) {
                        Some(Name::Sym(s)) => s.clone(),
                        _ => {
                            let s = self.symbol_name(&name);
                            self.declare_symbol(&s);
                            s
                        }
                    };
                    self.assign_symbol(target, &sym, v);
                    self.names.insert(name, Name::Sym(sym));
                    return Ok(());
                }
                if !self.map_ctx.is_empty() {
                    if let Some((depth, outer)) = self.map_loops.last()
                        && *depth == self.map_ctx.len()
                        && outer.contains(&name)
                    {
                        return Err(self.err(
                            target,
                            unsupported(format!(
                                "assigning `{name}`, a value of the `dace.map` point bound before this loop, inside the loop: a loop in a map body cannot carry a value from one iteration to the next yet (accumulate into an array element instead)"
                            )),
                        ));
                    }
                    // A local of a map body; under a predicate it keeps its
                    // previous value where the predicate is false.
                    let pred = self.pred.iter().cloned().reduce(|a, b| {
                        Elem::Binary(BinaryOp::And, Box::new(a), Box::new(b), DType::Bool)
                    });
                    let value = match (pred, self.names.get(&name)) {
                        (Some(p), Some(Name::Local(old))) => {
                            let t =
                                promote(value.dtype(), value.is_weak(), old.dtype(), old.is_weak());
                            Elem::Select(Box::new(p), Box::new(value), Box::new(old.clone()), t)
                        }
                        _ => value,
                    };
                    self.names.insert(name, Name::Local(value));
                    return Ok(());
                }
                if let Some(Name::Ref(old)) = self.names.get(&name).cloned()
                    && self.declared.contains(&old.data)
                    && value.shape().is_some_and(|s| s.is_empty())
                {
                    let v = Elem::Cast(old.dtype, Box::new(value));
                    return self.assign_region(target, old, v);
                }
                // A basic slice (a region: integer indices of some axes,
                // slices, `...`, new axes, a transpose, a reshape of a
                // whole) is a view, as in NumPy: a name bound to it once
                // reads and writes the viewed array. An element chosen by
                // an integer in every axis is NumPy's scalar: a copy.
                let once = self.bindings.get(&name).is_none_or(|n| *n <= 1);
                if once
                    && let Elem::Ref(r) = &value
                    && !self.is_value(r)
                {
                    self.names.insert(name, Name::Ref(r.clone()));
                    return Ok(());
                }
                // A name bound more than once holds its value in one
                // transient of its shape and type, reused at every binding:
                // a name rebound inside a loop carries its value to the next
                // iteration, one bound in two branches means either after
                // them. (Unless another name refers to that transient too.)
                let line = self.line(target);
                if let Some(Name::Ref(old)) = self.names.get(&name).cloned()
                    && old.is_plain()
                    && self.sdfg.container(&old.data).is_some_and(|d| d.transient)
                    && !self.referenced_elsewhere(&old.data, &name)
                    && Some(old.shape()) == value.shape()
                    && old.dtype == value.dtype()
                {
                    self.note_view_copy(&old.data, &name, &value, line);
                    return self.assign_region(target, old, value);
                }
                // Python rebinds the name to a new value.
                let r = match value {
                    // A fresh array no other name refers to is the value.
                    Elem::Ref(r)
                        if self.sdfg.container(&r.data).is_some_and(|d| d.transient)
                            && r.is_plain()
                            && !r.is_element()
                            && !self.referenced_elsewhere(&r.data, &name) =>
                    {
                        r
                    }
                    v => {
                        let shape = v.shape().ok_or_else(|| {
                            self.err(
                                target,
                                ErrorKind::Shape("operands do not broadcast".to_owned()),
                            )
                        })?;
                        let r = self.new_transient(&format!("{name}_"), v.dtype(), &shape);
                        self.note_view_copy(&r.data, &name, &v, line);
                        self.assign_region(target, r.clone(), v)?;
                        r
                    }
                };
                self.names.insert(name, Name::Ref(r));
                Ok(())
            }
            Expr::Subscript(s) if !matches!(&*s.slice, Expr::Tuple(_) | Expr::Slice(_)) => {
                // `A[mask] = v` with a boolean array of A's shape: a
                // predicated assignment of every element.
                if let Ok(Elem::Ref(base)) = self.elem(&s.value)
                    && let Ok(mask) = self.elem(&s.slice)
                    && mask.dtype() == DType::Bool
                    && mask.shape().is_some_and(|sh| !sh.is_empty())
                {
                    if mask.shape() != Some(base.shape()) {
                        return Err(self.err(
                            &*s.slice,
                            ErrorKind::Shape(
                                "a boolean mask must have the shape of the array it selects from"
                                    .to_owned(),
                            ),
                        ));
                    }
                    let v = Elem::Select(
                        Box::new(mask),
                        Box::new(value),
                        Box::new(Elem::Ref(base.clone())),
                        base.dtype,
                    );
                    return self.assign_region(target, base, v);
                }
                let (r, scatter) = self.write_target(target)?;
                self.write(target, r, scatter, value, None)
            }
            Expr::Subscript(_) => {
                let (r, scatter) = self.write_target(target)?;
                self.write(target, r, scatter, value, None)
            }
            other => Err(self.err(other, unsupported("this assignment target"))),
        }
    }

    /// An assignment target: a region, or an array with the index values of
    /// an indirect write (a scatter).
    pub(super) fn write_target(&mut self, target: &Expr) -> Result<(ArrayRef, Option<Vec<Elem>>)> {
        let (r, scatter) = match self.elem(target)? {
            Elem::Ref(r) => (r, None),
            Elem::Gather(base, index) => (base, Some(index)),
            _ => {
                return Err(self.err(
                    target,
                    unsupported("assignment to something that is not an array region"),
                ));
            }
        };
        // Writing through a name that holds a copy of a view would not
        // reach the viewed array, as NumPy's write would.
        if let Some((name, line)) = self.view_copies.get(&r.data) {
            return Err(self.err(
                target,
                unsupported(format!(
                    "writing through `{name}`, which is bound at line {line} to a view of another array and bound again elsewhere: which array a write reaches would depend on the path taken; give the view a name of its own"
                )),
            ));
        }
        Ok((r, scatter))
    }

    /// Whether region `r` is a Python value rather than a view: NumPy's
    /// scalar (one element chosen by an integer in every axis) or a scalar
    /// container (a scalar parameter or local, a Python number). A name
    /// bound to it, or a parameter of an inlined program called with it,
    /// holds a copy: `v = s; v += 1` rebinds `v` and leaves `s` alone.
    pub(super) fn is_value(&self, r: &ArrayRef) -> bool {
        r.is_element()
            || (r.is_plain() && self.sdfg.container(&r.data).is_some_and(|d| d.is_scalar()))
    }

    /// Whether a name other than `name`, or the caller (for an argument),
    /// can see container `data`.
    pub(super) fn referenced_elsewhere(&self, data: &str, name: &str) -> bool {
        self.sdfg.container(data).is_some_and(|d| !d.transient)
            || self
                .names
                .iter()
                .any(|(n, b)| n != name && matches!(b, Name::Ref(r) if r.data == data))
    }

    /// Records whether transient `data`, the value of `name` (bound more
    /// than once), is now a copy of a view: `value` is a region of an
    /// array something else can see.
    fn note_view_copy(&mut self, data: &str, name: &str, value: &Elem, line: usize) {
        let is_view = matches!(value, Elem::Ref(r) if r.data != data && !self.is_value(r) && self.referenced_elsewhere(&r.data, ""));
        if is_view {
            self.view_copies
                .insert(data.to_owned(), (name.to_owned(), line));
        } else {
            self.view_copies.remove(data);
        }
    }

    /// The locals of the `dace.map` bodies being lowered, with their values.
    fn locals(&self) -> BTreeMap<String, Elem> {
        self.names
            .iter()
            .filter_map(|(k, n)| match n {
                Name::Local(e) => Some((k.clone(), e.clone())),
                _ => None,
            })
            .collect()
    }

    /// Ends the scope of every local bound (or bound anew) since `before`
    /// ([`Lowerer::locals`]): reading one later is refused with `why`.
    fn expire_locals(&mut self, before: &BTreeMap<String, Elem>, why: &str) {
        for (name, binding) in self.names.iter_mut() {
            if let Name::Local(e) = binding
                && before.get(name) != Some(e)
            {
                *binding = Name::Expired(why.to_owned());
            }
        }
    }

    pub(super) fn for_loop(&mut self, f: &ast::StmtFor) -> Result<()> {
        if !f.orelse.is_empty() {
            return Err(self.err(f, unsupported("`for ... else`")));
        }
        // `for i in range(...)`
        if let Expr::Call(c) = &*f.iter
            && matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "range")
        {
            let Expr::Name(var) = &*f.target else {
                return Err(self.err(&*f.target, unsupported("a loop target that is not a name")));
            };
            let args = c
                .arguments
                .args
                .iter()
                .map(|a| self.sym(a))
                .collect::<Result<Vec<_>>>()?;
            let (start, stop, step) = match args.as_slice() {
                [stop] => (SymExpr::int(0), stop.clone(), 1),
                [start, stop] => (start.clone(), stop.clone(), 1),
                [start, stop, step] => {
                    let s = step.as_int().filter(|s| *s != 0).ok_or_else(|| {
                        self.err(
                            c,
                            unsupported("a `range` step that is not a non-zero constant"),
                        )
                    })?;
                    (start.clone(), stop.clone(), s)
                }
                _ => return Err(self.err(c, unsupported("`range` with this many arguments"))),
            };
            // Each statement of a map body is a map of its own, and a loop
            // in the body a loop around them: its range cannot depend on
            // the point.
            if let Some((p, _)) = self
                .map_ctx
                .iter()
                .find(|(p, _)| start.has_symbol(p) || stop.has_symbol(p))
            {
                return Err(self.err(
                    c,
                    unsupported(format!(
                        "a loop inside a `dace.map` body whose range depends on the map's parameter `{p}`"
                    )),
                ));
            }
            let name = var.id.to_string();
            let sym = self.symbol_name(&name);
            self.declare_symbol(&sym);
            let saved = self.names.insert(name.clone(), Name::Sym(sym.clone()));
            let before = self.locals();
            if !self.map_ctx.is_empty() {
                self.map_loops
                    .push((self.map_ctx.len(), before.keys().cloned().collect()));
            }
            let body = self.nested(|l| l.body(&f.body));
            if !self.map_ctx.is_empty() {
                self.map_loops.pop();
            }
            let body = body?;
            self.expire_locals(
                &before,
                &format!(
                    "is assigned in the body of the loop at line {} inside a `dace.map` body: after the loop it has no value (write it into an array element)",
                    self.line(f)
                ),
            );
            match saved {
                Some(s) => self.names.insert(name, s),
                None => self.names.remove(&name),
            };
            let label = format!("for_l{}_{}", self.line(f), self.fresh(""));
            self.push_block(
                label,
                BlockKind::Loop(LoopBlock::for_range(sym, start, stop, step, body)),
            );
            return Ok(());
        }
        // `for i, j in dace.map[0:N, 0:M]`
        if let Expr::Subscript(s) = &*f.iter
            && matches!(&*s.value, Expr::Attribute(a) if a.attr.id.as_str() == "map")
        {
            let vars: Vec<String> = match &*f.target {
                Expr::Name(n) => vec![n.id.to_string()],
                Expr::Tuple(t) => t
                    .elts
                    .iter()
                    .map(|e| match e {
                        Expr::Name(n) => Ok(n.id.to_string()),
                        other => {
                            Err(self.err(other, unsupported("a map target that is not a name")))
                        }
                    })
                    .collect::<Result<_>>()?,
                other => return Err(self.err(other, unsupported("this map target"))),
            };
            let items: Vec<&Expr> = match &*s.slice {
                Expr::Tuple(t) => t.elts.iter().collect(),
                one => vec![one],
            };
            if items.len() != vars.len() {
                return Err(self.err(
                    s,
                    unsupported("a map with a different number of ranges and variables"),
                ));
            }
            return self.map_scope(f, &vars, &items, |l| l.body(&f.body));
        }
        Err(self.err(
            &*f.iter,
            unsupported("a loop over something other than `range(...)` or `dace.map[...]`"),
        ))
    }

    /// A `dace.map` scope over `vars` with the ranges `items`
    /// (`begin:end[:step]` each) whose body `lower_body` lowers: each
    /// statement of the body is one map over the scope's parameters.
    pub(super) fn map_scope(
        &mut self,
        node: &impl Ranged,
        vars: &[String],
        items: &[&Expr],
        lower_body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let depth = self.map_ctx.len();
        // Every parameter of this statement belongs to one map scope.
        let statement_level = self.map_level_counter;
        self.map_level_counter += 1;
        let mut saved = Vec::new();
        for (var, item) in vars.iter().zip(items) {
            let Expr::Slice(sl) = item else {
                return Err(self.err(
                    item,
                    unsupported("a map range that is not `begin:end[:step]`"),
                ));
            };
            let begin = match &sl.lower {
                Some(e) => self.sym(e)?,
                None => SymExpr::int(0),
            };
            let stop = match &sl.upper {
                Some(e) => self.sym(e)?,
                None => return Err(self.err(item, unsupported("a map range without an end"))),
            };
            let step = match &sl.step {
                Some(e) => self.sym(e)?,
                None => SymExpr::int(1),
            };
            if step.as_int().is_none_or(|s| s <= 0) {
                return Err(self.err(
                    item,
                    unsupported("a map step that is not a positive constant"),
                ));
            }
            let param = if self.sdfg.symbols.contains_key(var)
                || self.m.symbols.contains_key(var)
                || self.sdfg.containers.contains_key(var)
            {
                self.fresh(&format!("{var}_"))
            } else {
                var.clone()
            };
            self.map_params.insert(param.clone());
            self.map_ctx.push((
                param.clone(),
                Range {
                    begin,
                    end: stop - 1,
                    step,
                },
            ));
            self.map_level.push(statement_level);
            saved.push((
                var.clone(),
                self.names.insert(var.clone(), Name::Sym(param)),
            ));
        }
        // Locals the body binds are values of one point: after the map
        // (whose points run in parallel) they have none.
        let before = self.locals();
        let r = lower_body(self);
        self.map_ctx.truncate(depth);
        self.map_level.truncate(depth);
        for (var, old) in saved {
            match old {
                Some(o) => self.names.insert(var, o),
                None => self.names.remove(&var),
            };
        }
        self.expire_locals(
            &before,
            &format!(
                "is assigned in the body of the `dace.map` at line {}, whose points run in parallel: after the map it has no value (write each point's value into an array element, or reduce them)",
                self.line(node)
            ),
        );
        r
    }

    /// An `if` whose first condition is computed, with its `elif` and
    /// `else` clauses. An `elif` condition on data is computed in the `else`
    /// region of the branches before it, where Python evaluates it (only when
    /// they are not taken: it may read out of bounds when they are, as in
    /// `if i == 0: ... elif A[i - 1] > 0: ...`).
    pub(super) fn if_chain(
        &mut self,
        node: &impl Ranged,
        cond: SymCond,
        body: &[Stmt],
        rest: &[(Option<&Expr>, &[Stmt])],
    ) -> Result<()> {
        let mut branches = vec![(cond, self.nested(|l| l.body(body))?)];
        let mut otherwise = None;
        for (k, (test, body)) in rest.iter().enumerate() {
            let Some(test) = test else {
                otherwise = Some(self.nested(|l| l.body(body))?);
                break;
            };
            let (cond, pre) = self.condition_states(test)?;
            if pre.blocks.is_empty() {
                branches.push((cond, self.nested(|l| l.body(body))?));
                continue;
            }
            otherwise = Some(self.nested(|l| {
                if let Some(r) = l.stack.last_mut() {
                    r.blocks.extend(pre.blocks);
                }
                l.if_chain(*test, cond, body, &rest[k + 1..])
            })?);
            break;
        }
        let label = format!("if_l{}_{}", self.line(node), self.fresh(""));
        self.push_block(
            label,
            BlockKind::Conditional(ConditionalBlock {
                branches,
                otherwise,
            }),
        );
        Ok(())
    }

    /// A condition and the blocks that compute it (none for a condition on
    /// symbols), which the caller places.
    pub(super) fn condition_states(&mut self, e: &Expr) -> Result<(SymCond, Region)> {
        let mut cond = SymCond::constant(false);
        let pre = self.nested(|l| {
            cond = l.condition(e)?;
            Ok(())
        })?;
        Ok((cond, pre))
    }

    /// A branch or loop condition.
    pub(super) fn condition(&mut self, e: &Expr) -> Result<SymCond> {
        // Trying the condition as one over symbols evaluates its operands,
        // which may add states (an inlined call, a reduction) and containers.
        // When it is not one, the attempt is undone, so that the condition
        // is evaluated once (an inlined call's side effects must not happen twice).
        let (containers, symbols) = (self.sdfg.containers.clone(), self.sdfg.symbols.clone());
        let mut sym = None;
        let attempt = self.nested(|l| {
            sym = l.sym_cond(e)?;
            Ok(())
        })?;
        if let Some(c) = sym {
            if let Some(r) = self.stack.last_mut() {
                r.blocks.extend(attempt.blocks);
            }
            return Ok(c);
        }
        self.sdfg.containers = containers;
        self.sdfg.symbols = symbols;
        if !self.map_ctx.is_empty() {
            return Err(self.err(
                e,
                unsupported("a data-dependent condition inside a `dace.map` body"),
            ));
        }
        // A condition on data: compute it into a boolean scalar the host reads.
        let v = self.elem(e)?;
        if v.shape().is_none_or(|s| !s.is_empty()) {
            return Err(self.err(
                e,
                ErrorKind::Shape("a condition must be a scalar".to_owned()),
            ));
        }
        let flag = self.new_transient("cond_", DType::Bool, &[]);
        self.assign_region(e, flag.clone(), Elem::Cast(DType::Bool, Box::new(v)))?;
        Ok(SymCond::cmp(
            SymExpr::read(flag.data, vec![SymExpr::int(0)]),
            sdfg_ir::CmpOp::Ne,
            SymExpr::int(0),
        ))
    }

    /// A condition over symbols only, if `e` is one.
    pub(super) fn sym_cond(&mut self, e: &Expr) -> Result<Option<SymCond>> {
        self.deeper(e, |l| l.sym_cond_inner(e))
    }

    pub(super) fn sym_cond_inner(&mut self, e: &Expr) -> Result<Option<SymCond>> {
        Ok(match e {
            Expr::Compare(c) if c.ops.len() == 1 => {
                let (Some(a), Some(b)) = (
                    self.elem(&c.left)?.as_sym(),
                    self.elem(&c.comparators[0])?.as_sym(),
                ) else {
                    return Ok(None);
                };
                let op = match c.ops[0] {
                    ast::CmpOp::Eq => sdfg_ir::CmpOp::Eq,
                    ast::CmpOp::NotEq => sdfg_ir::CmpOp::Ne,
                    ast::CmpOp::Lt => sdfg_ir::CmpOp::Lt,
                    ast::CmpOp::LtE => sdfg_ir::CmpOp::Le,
                    ast::CmpOp::Gt => sdfg_ir::CmpOp::Gt,
                    ast::CmpOp::GtE => sdfg_ir::CmpOp::Ge,
                    _ => return Ok(None),
                };
                Some(SymCond::cmp(a, op, b))
            }
            Expr::BoolOp(b) => {
                let mut acc: Option<SymCond> = None;
                for v in &b.values {
                    let Some(c) = self.sym_cond(v)? else {
                        return Ok(None);
                    };
                    acc = Some(match (acc, b.op) {
                        (None, _) => c,
                        (Some(a), ast::BoolOp::And) => a.and(c),
                        (Some(a), ast::BoolOp::Or) => a.or(c),
                    });
                }
                acc
            }
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Not) => {
                self.sym_cond(&u.operand)?.map(SymCond::not)
            }
            Expr::BooleanLiteral(b) => Some(SymCond::constant(b.value)),
            _ => None,
        })
    }
}

/// The write-conflict resolution of an augmented assignment's operator.
fn wcr_of(op: BinaryOp) -> Option<Wcr> {
    match op {
        BinaryOp::Add => Some(Wcr::Sum),
        BinaryOp::Mul => Some(Wcr::Product),
        _ => None,
    }
}
