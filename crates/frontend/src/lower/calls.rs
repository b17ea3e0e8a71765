//! Calls: NumPy functions and methods, casts, inlined programs.

use super::library::Fold;
use super::numpy::{accumulator, float_of_operands};
use super::*;
use crate::functions::Lowering;

impl<'m> Lowerer<'m> {
    /// The keyword argument `name` of call `c`, marked as read: a keyword
    /// nothing reads is refused when the call is done ([`Self::call`]).
    pub(super) fn kwarg<'e>(&self, c: &'e ast::ExprCall, name: &str) -> Option<&'e Expr> {
        let k = c
            .arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == name))?;
        self.keywords_read.borrow_mut().insert(k.range().start());
        Some(&k.value)
    }

    /// A call. A keyword argument the lowering of a NumPy function, method
    /// or builtin did not read is an error naming it, never silently
    /// dropped (`np.max(x, initial=v)` would change the result).
    pub(super) fn call(&mut self, c: &ast::ExprCall) -> Result<Elem> {
        let value = self.call_reading_keywords(c)?;
        let program =
            matches!(&*c.func, Expr::Name(n) if self.m.programs.contains_key(n.id.as_str()));
        let read = self.keywords_read.borrow();
        if let Some(k) = c
            .arguments
            .keywords
            .iter()
            .find(|k| !program && !read.contains(&k.range().start()))
        {
            let name = k.arg.as_ref().map_or("**", |a| a.id.as_str());
            return Err(self.err(
                k,
                unsupported(format!(
                    "the keyword `{name}` of {}",
                    self.m.source.quoted(c.func.range())
                )),
            ));
        }
        Ok(value)
    }

    fn call_reading_keywords(&mut self, c: &ast::ExprCall) -> Result<Elem> {
        // `np.ufunc(..., out=X)`: compute, then assign into X; with
        // `where=mask`, only where the mask holds (X keeps its values elsewhere).
        if let Some(out) = self.kwarg(c, "out")
            && self.module_func(&c.func).is_some_and(|(m, _)| m == "np")
        {
            let (target, None) = self.write_target(out)? else {
                return Err(self.err(out, unsupported("an indirect `out=` argument")));
            };
            let value = self.call_value(c)?;
            let value = match self.kwarg(c, "where") {
                Some(w) => {
                    let mask = Elem::Cast(DType::Bool, Box::new(self.elem(w)?));
                    Elem::Select(
                        Box::new(mask),
                        Box::new(value),
                        Box::new(Elem::Ref(target.clone())),
                        target.dtype,
                    )
                }
                None => value,
            };
            self.assign_region(c, target.clone(), value)?;
            return Ok(Elem::Ref(target));
        }
        // `np.add.outer(a, b)`, `np.maximum.reduce(x, axis=...)`,
        // `np.add.accumulate(x)` and friends.
        if let Expr::Attribute(a) = &*c.func
            && let Some(("np", ufunc)) = self.module_func(&a.value)
        {
            match a.attr.id.as_str() {
                "outer" => return self.outer(c, ufunc),
                "reduce" => return self.ufunc_reduce(c, ufunc),
                "accumulate" => return self.ufunc_accumulate(c, ufunc),
                _ => {}
            }
        }
        // `np.ufunc(..., where=mask)` without `out=`: NumPy leaves the
        // other elements of the new array uninitialized; here they are 0.
        if let Some(w) = self.kwarg(c, "where")
            && self.module_func(&c.func).is_some_and(|(m, _)| m == "np")
        {
            let value = self.call_value(c)?;
            let mask = Elem::Cast(DType::Bool, Box::new(self.elem(w)?));
            let t = value.dtype();
            let zero = Elem::Lit(Literal::i64(0)).cast(t);
            let e = Elem::Select(Box::new(mask), Box::new(value), Box::new(zero), t);
            return Ok(Elem::Ref(self.materialize(c, e)?));
        }
        // Array methods: `x.reshape(...)`, `x.copy()`, `x.sum(axis=...)`, ...
        if let Expr::Attribute(a) = &*c.func
            && !self.is_module(&a.value, &self.m.numpy_alias)
            && !self.is_module(&a.value, &self.m.dace_alias)
            && self.module_func(&c.func).is_none()
        {
            return self.method(c, &a.value, a.attr.id.as_str());
        }
        self.call_value(c)
    }

    /// `np.<ufunc>.outer(a, b)`: `a` indexed with new axes after its own,
    /// `b` with new axes before its own, combined elementwise.
    pub(super) fn outer(&mut self, c: &ast::ExprCall, ufunc: &str) -> Result<Elem> {
        let op = match crate::functions::elementwise(ufunc).map(|f| f.lowering) {
            Some(Lowering::Operator(op)) => op,
            _ => return Err(self.err(c, unsupported(format!("`np.{ufunc}.outer`")))),
        };
        let [x, y] = &c.arguments.args[..] else {
            return Err(self.err(c, unsupported("`outer` with other than two arguments")));
        };
        let (x, y) = (self.elem(x)?, self.elem(y)?);
        self.outer_of(c, op, x, y)
    }

    /// The write-conflict resolution a ufunc's reduction or scan combines
    /// with, and the array it is applied to (the first argument).
    fn ufunc_method<'c>(
        &self,
        c: &'c ast::ExprCall,
        ufunc: &str,
        method: &str,
    ) -> Result<(Wcr, &'c Expr)> {
        let w = match ufunc {
            "add" => Wcr::Sum,
            "multiply" => Wcr::Product,
            "maximum" => Wcr::Max,
            "minimum" => Wcr::Min,
            "bitwise_and" | "logical_and" => Wcr::BitAnd,
            "bitwise_or" | "logical_or" => Wcr::BitOr,
            "bitwise_xor" | "logical_xor" => Wcr::BitXor,
            other => {
                return Err(self.err(
                    &*c.func,
                    unsupported(format!(
                        "`np.{other}.{method}` (reductions and scans combine with add, multiply, maximum, minimum or a bitwise or logical operator)"
                    )),
                ));
            }
        };
        match c.arguments.args.first() {
            Some(first) => Ok((w, first)),
            None => Err(self.err(
                c,
                unsupported(format!("`np.{ufunc}.{method}` without an array")),
            )),
        }
    }

    /// `a` combined with `b` as `w` does.
    pub(super) fn combine(&mut self, node: &impl Ranged, w: Wcr, a: Elem, b: Elem) -> Result<Elem> {
        match w {
            Wcr::Sum => self.binary(node, BinaryOp::Add, a, b),
            Wcr::Product => self.binary(node, BinaryOp::Mul, a, b),
            Wcr::BitAnd => self.binary(node, BinaryOp::BitAnd, a, b),
            Wcr::BitOr => self.binary(node, BinaryOp::BitOr, a, b),
            Wcr::BitXor => self.binary(node, BinaryOp::BitXor, a, b),
            Wcr::Max | Wcr::Min => {
                let f = if w == Wcr::Max {
                    Intrinsic::Max
                } else {
                    Intrinsic::Min
                };
                let t = promote(a.dtype(), a.is_weak(), b.dtype(), b.is_weak());
                Ok(Elem::Call(f, vec![a, b], t))
            }
        }
    }

    /// `np.<ufunc>.reduce(x, axis=0, keepdims=False, initial=...)`: the
    /// reduction along `axis` (NumPy's default for ufuncs is 0, `None`
    /// reduces everything), `initial` combined into the result.
    pub(super) fn ufunc_reduce(&mut self, c: &ast::ExprCall, ufunc: &str) -> Result<Elem> {
        let (w, first) = self.ufunc_method(c, ufunc, "reduce")?;
        let args = &c.arguments.args;
        let x = self.elem(first)?;
        // A logical operator combines truth values.
        let x = if ufunc.starts_with("logical_") {
            x.cast(DType::Bool)
        } else {
            x
        };
        // A ufunc reduces axis 0 unless told otherwise.
        let axis = match self.kwarg(c, "axis").or(args.get(1)) {
            None => Some(vec![SymExpr::int(0)]),
            given => self.axis_list(given)?,
        };
        let keepdims = self.keepdims(c)?;
        let initial = self.kwarg(c, "initial").map(|e| self.elem(e)).transpose()?;
        if let Some(w) = self.kwarg(c, "where") {
            return Err(self.err(w, unsupported(format!("`where=` in `np.{ufunc}.reduce`"))));
        }
        // A Python number is where the reduction starts, as in NumPy (which
        // folds `initial` first: `initial + x0 + x1 + ...`), so it becomes
        // the Reduce node's identity; anything else is combined afterwards.
        let start = initial.as_ref().and_then(|i| {
            let lit = weak_constant(i)?;
            lit.with_dtype(x.dtype())
        });
        let fold = Fold {
            op: w,
            initial: start,
        };
        let r = self.reduce(c, x, fold, axis, keepdims, false)?;
        match initial {
            Some(init) if start.is_none() => self.combine(c, w, r, init),
            _ => Ok(r),
        }
    }

    /// `np.<ufunc>.accumulate(x, axis=0)`: running combinations along the
    /// axis, `out[0] = x[0]`, `out[k] = out[k - 1] op x[k]`, as a loop over
    /// the axis whose body combines the other axes elementwise.
    pub(super) fn ufunc_accumulate(&mut self, c: &ast::ExprCall, ufunc: &str) -> Result<Elem> {
        let (w, first) = self.ufunc_method(c, ufunc, "accumulate")?;
        let x = self.elem(first)?;
        let x = if ufunc.starts_with("logical_") {
            x.cast(DType::Bool)
        } else {
            x
        };
        let axis = match self.kwarg(c, "axis").or(c.arguments.args.get(1)) {
            None => 0,
            Some(a) => self
                .sym(a)?
                .as_int()
                .ok_or_else(|| self.err(a, unsupported("a scan axis that is not a constant")))?,
        };
        // Sums and products of small integers accumulate in the default
        // integer, as NumPy's `add.accumulate` does.
        let x = match w {
            Wcr::Sum | Wcr::Product => {
                let t = accumulator(x.dtype());
                x.cast(t)
            }
            _ => x,
        };
        self.scan(c, w, x, axis)
    }

    /// Methods of arrays.
    pub(super) fn method(
        &mut self,
        c: &ast::ExprCall,
        receiver: &Expr,
        name: &str,
    ) -> Result<Elem> {
        // Methods that are NumPy functions of the receiver.
        let function = match name {
            "any" | "all" | "argmax" | "argmin" | "cumsum" | "cumprod" | "clip" | "trace"
            | "diagonal" | "ravel" => Some(name),
            "conj" | "conjugate" => Some("conj"),
            _ => None,
        };
        if let Some(f) = function {
            let mut args = vec![receiver];
            args.extend(c.arguments.args.iter());
            if f == "clip" || f == "conj" {
                let x = self.elem(receiver)?;
                return match f {
                    "conj" => self.ufunc_of(c, Intrinsic::Conj, vec![x]),
                    _ => {
                        let lo = args.get(1).map(|e| self.elem(e)).transpose()?;
                        let hi = args.get(2).map(|e| self.elem(e)).transpose()?;
                        self.clip(c, x, lo, hi)
                    }
                };
            }
            return self
                .numpy_function(c, "np", f, &args)?
                .ok_or_else(|| self.err(c, unsupported(format!("the array method `{name}`"))));
        }
        if name == "fill" {
            let [v] = &c.arguments.args[..] else {
                return Err(self.err(c, unsupported("`fill` with other than one value")));
            };
            let (target, None) = self.write_target(receiver)? else {
                return Err(self.err(c, unsupported("`fill` of an indirect region")));
            };
            let v = self.elem(v)?;
            self.assign_region(c, target, v)?;
            return Ok(Elem::Lit(Literal::Bool(false)));
        }
        let x = self.elem(receiver)?;
        let args = &c.arguments.args;
        match name {
            "transpose" => {
                let axes: Option<(&Expr, Vec<&Expr>)> = match &args[..] {
                    [] => None,
                    [e @ Expr::Tuple(t)] => Some((e, t.elts.iter().collect())),
                    [e @ Expr::List(l)] => Some((e, l.elts.iter().collect())),
                    [first, ..] => Some((first, args.iter().collect())),
                };
                self.transposed(c, x, axes)
            }
            "flatten" => {
                let flat = self.flat(c, x)?;
                let r = self.plain(c, flat.clone())?;
                if Elem::Ref(r.clone()) != flat {
                    return Ok(Elem::Ref(r));
                }
                let out = self.new_transient("flat_", r.dtype, &r.shape());
                self.assign_region(c, out.clone(), Elem::Ref(r))?;
                Ok(Elem::Ref(out))
            }
            "astype" => {
                let [d] = &args[..] else {
                    return Err(self.err(c, unsupported("`astype` with other than one dtype")));
                };
                let t = self.dtype_arg(d)?;
                Ok(Elem::Cast(t, Box::new(x)))
            }
            "reshape" => {
                let shape_exprs: Vec<&Expr> = match &args[..] {
                    [Expr::Tuple(t)] => t.elts.iter().collect(),
                    many => many.iter().collect(),
                };
                let shape = shape_exprs
                    .iter()
                    .map(|e| self.sym(e))
                    .collect::<Result<Vec<_>>>()?;
                self.reshape(c, x, shape)
            }
            "copy" => {
                let r = self.plain(c, x.clone())?;
                let shape = r.shape();
                let out = self.new_transient("copy_", r.dtype, &shape);
                self.assign_region(c, out.clone(), Elem::Ref(r))?;
                Ok(Elem::Ref(out))
            }
            "sum" | "max" | "min" | "mean" | "prod" => self.reduction(c, x, name, args.first()),
            other => Err(self.err(c, unsupported(format!("the array method `{other}`")))),
        }
    }

    /// A NumPy reduction (`np.sum(x, axis, keepdims=...)`, `x.sum(...)`,
    /// `mean` as a sum over the count); `positional_axis` is the axis when
    /// given without its keyword.
    pub(super) fn reduction(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        name: &str,
        positional_axis: Option<&Expr>,
    ) -> Result<Elem> {
        let axis = self.axis_list(self.kwarg(c, "axis").or(positional_axis))?;
        let keepdims =
            matches!(self.kwarg(c, "keepdims"), Some(Expr::BooleanLiteral(b)) if b.value);
        let op = match name {
            "sum" | "mean" => Wcr::Sum,
            "prod" => Wcr::Product,
            "max" | "amax" => Wcr::Max,
            _ => Wcr::Min,
        };
        // NumPy sums and multiplies booleans and small integers in the
        // default integer (`np.sum(mask)` counts).
        let x = match op {
            Wcr::Sum | Wcr::Product if name != "mean" => {
                let t = accumulator(x.dtype());
                x.cast(t)
            }
            _ => x,
        };
        self.reduce(c, x, op.into(), axis, keepdims, name == "mean")
    }

    /// The axes a reduction's `axis` argument names: one, a tuple, or
    /// every axis (`None`, or no argument).
    pub(super) fn axis_list(&mut self, e: Option<&Expr>) -> Result<Option<Vec<SymExpr>>> {
        Ok(match e {
            None | Some(Expr::NoneLiteral(_)) => None,
            Some(Expr::Tuple(t)) => Some(
                t.elts
                    .iter()
                    .map(|a| self.sym(a))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Some(a) => Some(vec![self.sym(a)?]),
        })
    }

    /// A contiguous reshape, evaluated into a new array (element `k` of the
    /// result in row-major order is element `k` of the source). The result
    /// is a copy, so writing into it later is refused rather than lost.
    pub(super) fn reshape(
        &mut self,
        node: &impl Ranged,
        x: Elem,
        shape: Vec<SymExpr>,
    ) -> Result<Elem> {
        if !self.map_ctx.is_empty() {
            return Err(self.err(node, unsupported("a reshape inside a `dace.map` body")));
        }
        // A whole array (or a whole reshaped view) is contiguous: NumPy's
        // reshape is a view of it, and so is ours.
        if let Elem::Ref(r) = &x
            && let Some(source) = self.whole_source(r)
        {
            let count = |s: &[SymExpr]| s.iter().fold(SymExpr::int(1), |a, b| a * b.clone());
            if (count(&source.shape()) - count(&shape))
                .as_int()
                .is_some_and(|d| d != 0)
            {
                return Err(self.err(
                    node,
                    ErrorKind::Shape("reshape must keep the number of elements".to_owned()),
                ));
            }
            let mut view = ArrayRef::whole(&source.data, source.dtype, &shape, false);
            view.reshaped = Some(Box::new((source, shape)));
            return Ok(Elem::Ref(view));
        }
        let src = self.plain(node, x)?;
        let old = src.shape();
        let count = |s: &[SymExpr]| s.iter().fold(SymExpr::int(1), |a, b| a * b.clone());
        // Counts that differ by a constant are an error. Counts the symbolic
        // algebra cannot compare (LeNet's flattened size is a symbol of its
        // own) are trusted, as DaCe trusts them: a larger new shape then
        // indexes past the source's first axis, which bounds checks catch.
        if (count(&old) - count(&shape))
            .as_int()
            .is_some_and(|d| d != 0)
        {
            return Err(self.err(
                node,
                ErrorKind::Shape("reshape must keep the number of elements".to_owned()),
            ));
        }
        let out = self.new_transient("reshape_", src.dtype, &shape);
        self.reshaped.insert(out.data.clone());
        // A 0-d result (one element into a scalar target) is a scalar
        // container, which memlets address as `[0]`: filled as shape `[1]`.
        let shape = if shape.is_empty() {
            vec![SymExpr::int(1)]
        } else {
            shape
        };
        let params: Vec<String> = shape.iter().map(|_| self.fresh("__r")).collect();
        let point: Vec<SymExpr> = params.iter().map(|p| SymExpr::symbol(p.clone())).collect();
        let at = reindex(&point, &shape, &old);
        let in_memlet = Memlet::new(&src.data, Subset::at(src.index(&at)));
        let out_memlet = Memlet::new(
            &out.data,
            Subset::at(params.iter().map(|p| SymExpr::symbol(p.clone())).collect()),
        );
        let map = Map {
            label: format!("{}_fill", out.data),
            params: params.clone(),
            ranges: shape
                .iter()
                .map(|l| Range::slice(SymExpr::int(0), l.clone()))
                .collect(),
            schedule: Schedule::Default,
        };
        let dtype = src.dtype;
        self.state(node, "reshape", move |s| {
            let (a, o) = (s.access(&in_memlet.data), s.access(&out_memlet.data));
            let (entry, exit) = s.map_with(map);
            let t = s.tasklet(
                "copy",
                vec![Connector::scalar("__in", dtype)],
                vec![Connector::scalar("__out", dtype)],
                vec![code::Stmt::assign("__out", code::Expr::var("__in"))],
            );
            s.path(&[a, entry, t], None, Some("__in"), in_memlet);
            s.path(&[t, exit, o], Some("__out"), None, out_memlet);
        })?;
        Ok(Elem::Ref(out))
    }

    pub(super) fn call_value(&mut self, c: &ast::ExprCall) -> Result<Elem> {
        let args = &c.arguments.args;
        let missing = self.err(c, unsupported("a call with missing arguments"));
        let arg = |k: usize| args.get(k).ok_or_else(|| missing.clone());
        // Casts: dace.int64(x), np.float64(x), int(x), float(x).
        if let Some(dtype) = self.m.dtype_of(&c.func) {
            let x = self.elem(arg(0)?)?;
            return Ok(Elem::Cast(dtype, Box::new(x)));
        }
        if let Expr::Name(n) = &*c.func {
            let f = n.id.as_str();
            match f {
                "int" | "float" | "bool" | "complex" => {
                    let x = self.elem(arg(0)?)?;
                    if f == "int" && x.as_sym().is_some() {
                        return Ok(x);
                    }
                    let t = match f {
                        "int" => DType::Int64,
                        "float" => DType::Float64,
                        "bool" => DType::Bool,
                        _ => DType::Complex128,
                    };
                    return Ok(Elem::Cast(t, Box::new(x)));
                }
                "abs" => return self.ufunc(c, Intrinsic::Abs),
                "min" | "max" => {
                    let f = if f == "min" {
                        Intrinsic::Min
                    } else {
                        Intrinsic::Max
                    };
                    return self.ufunc(c, f);
                }
                _ => {}
            }
        }
        if let Expr::Name(n) = &*c.func
            && let Some(f) = self.m.programs.get(n.id.as_str())
        {
            return self.inline(c, f);
        }
        let Some((module, name)) = self.module_func(&c.func) else {
            return Err(self.err(
                c,
                unsupported(format!("call of {}", self.m.source.quoted(c.func.range()))),
            ));
        };
        if module == "np"
            && let Some(f) = crate::functions::elementwise(name)
        {
            return self.elementwise_function(c, f);
        }
        // `dace.define_local_scalar(dtype)`: an uninitialised scalar; a later
        // `x = value` of that type writes into it.
        if (module, name) == ("dace", "define_local_scalar") {
            let dtype = match args.first() {
                Some(d) => self.dtype_arg(d)?,
                None => DType::Float64,
            };
            if !self.map_ctx.is_empty() {
                return Err(self.err(
                    c,
                    unsupported("`define_local_scalar` inside a `dace.map` body"),
                ));
            }
            let r = self.new_transient("local_", dtype, &[]);
            self.declared.insert(r.data.clone());
            return Ok(Elem::Ref(r));
        }
        if (module, name) == ("dace", "reduce") {
            return self.dace_reduce(c);
        }
        if (module, name) == ("np", "reshape") {
            let x = self.elem(arg(0)?)?;
            let shape = self.shape_arg(arg(1)?)?;
            return self.reshape(c, x, shape);
        }
        match (module, name) {
            ("np", "where") => {
                let cond = Elem::Cast(DType::Bool, Box::new(self.elem(arg(0)?)?));
                let (a, b) = (self.elem(arg(1)?)?, self.elem(arg(2)?)?);
                let t = promote(a.dtype(), a.is_weak(), b.dtype(), b.is_weak());
                let e = Elem::Select(Box::new(cond), Box::new(a), Box::new(b), t);
                if e.shape().is_none() {
                    return Err(
                        self.err(c, ErrorKind::Shape("operands do not broadcast".to_owned()))
                    );
                }
                Ok(e)
            }
            ("np", "sum" | "max" | "amax" | "min" | "amin" | "mean" | "prod") => {
                let x = self.elem(arg(0)?)?;
                self.reduction(c, x, name, args.get(1))
            }
            ("np", "dot") => {
                let (x, y) = (self.elem(arg(0)?)?, self.elem(arg(1)?)?);
                self.matmul(c, x, y)
            }
            ("np", "std") => {
                // sqrt(mean((x - mean(x, keepdims)) ** 2))
                let x = self.elem(arg(0)?)?;
                let axis = match self.kwarg(c, "axis").or(args.get(1)) {
                    None | Some(Expr::NoneLiteral(_)) => None,
                    Some(a) => Some(vec![self.sym(a)?]),
                };
                let mean = self.reduce(c, x.clone(), Wcr::Sum.into(), axis.clone(), true, true)?;
                let d = self.binary(c, BinaryOp::Sub, x, mean)?;
                let sq = self.binary(c, BinaryOp::Mul, d.clone(), d)?;
                let var = self.reduce(c, sq, Wcr::Sum.into(), axis, false, true)?;
                let t = var.dtype();
                Ok(Elem::Call(Intrinsic::Sqrt, vec![var], t))
            }
            ("np", "eye") => {
                let n = self.sym(arg(0)?)?;
                let dtype = match self.kwarg(c, "dtype") {
                    Some(d) => self.dtype_arg(d)?,
                    None => DType::Float64,
                };
                self.eye(c, n, dtype)
            }
            ("np", "transpose") => {
                let x = self.elem(arg(0)?)?;
                let axes = match self.kwarg(c, "axes").or(args.get(1)) {
                    None | Some(Expr::NoneLiteral(_)) => None,
                    Some(e @ Expr::Tuple(t)) => Some((e, t.elts.iter().collect())),
                    Some(e @ Expr::List(l)) => Some((e, l.elts.iter().collect())),
                    Some(one) => Some((one, vec![one])),
                };
                self.transposed(c, x, axes)
            }
            (
                "np",
                "zeros" | "ones" | "empty" | "ndarray" | "zeros_like" | "ones_like" | "empty_like"
                | "copy",
            ) => {
                let like = name.ends_with("_like") || name == "copy";
                // `np.ndarray(shape=(N, M), dtype=...)` names its shape.
                let first = match self.kwarg(c, "shape") {
                    Some(e) if !like => e,
                    _ => arg(0)?,
                };
                let (shape, mut dtype) = if like {
                    let x = self.elem(first)?;
                    (x.shape().unwrap_or_default(), x.dtype())
                } else {
                    (self.shape_arg(first)?, DType::Float64)
                };
                if let Some(d) = self
                    .kwarg(c, "dtype")
                    .or(if like { None } else { args.get(1) })
                {
                    dtype = self.dtype_arg(d)?;
                }
                self.check_dimensions(first, &shape, dtype)?;
                let r = self.new_transient("arr_", dtype, &shape);
                let fill = match name {
                    "zeros" | "zeros_like" => Some(Elem::Lit(Literal::i64(0))),
                    "ones" | "ones_like" => Some(Elem::Lit(Literal::i64(1))),
                    "copy" => Some(self.elem(arg(0)?)?),
                    _ => None,
                };
                if let Some(v) = fill {
                    self.assign_region(c, r.clone(), v)?;
                }
                Ok(Elem::Ref(r))
            }
            ("np", "arange") => {
                let bounds = args
                    .iter()
                    .map(|a| self.sym(a))
                    .collect::<Result<Vec<_>>>()?;
                let (start, stop, step) = match bounds.as_slice() {
                    [stop] => (SymExpr::int(0), stop.clone(), 1),
                    [start, stop] => (start.clone(), stop.clone(), 1),
                    [start, stop, step] => {
                        let k = step.as_int().filter(|k| *k > 0).ok_or_else(|| {
                            self.err(
                                c,
                                unsupported("an `arange` step that is not a positive constant"),
                            )
                        })?;
                        (start.clone(), stop.clone(), k)
                    }
                    _ => return Err(self.err(c, unsupported("`arange` with this many arguments"))),
                };
                let n = (&stop - &start + (step - 1)).floor_div(&SymExpr::int(step));
                let r = self.new_transient("arange_", DType::Int64, std::slice::from_ref(&n));
                let value = start + SymExpr::symbol("__k") * step;
                self.elementwise_fill(c, &r, &value)?;
                Ok(Elem::Ref(r))
            }
            ("linalg", "cholesky") => {
                let x = self.elem(arg(0)?)?;
                self.library(
                    c,
                    LibraryOp::Cholesky { lower: true },
                    &[("_a", x)],
                    "_b",
                    None,
                )
            }
            ("linalg", "solve") => {
                let (a, b) = (self.elem(arg(0)?)?, self.elem(arg(1)?)?);
                let shape = b.shape();
                self.library(c, LibraryOp::Solve, &[("_a", a), ("_b", b)], "_x", shape)
            }
            _ => {
                let list: Vec<&Expr> = args.iter().collect();
                if let Some(v) = self.numpy_function(c, module, name, &list)? {
                    return Ok(v);
                }
                Err(self.err(
                    c,
                    unsupported(format!("call of {}", self.m.source.quoted(c.func.range()))),
                ))
            }
        }
    }

    /// `x` with its visible axes permuted: reversed without `axes`, else
    /// output axis k is input axis `axes[k]` (negative axes count from the
    /// end). A view, as NumPy's.
    pub(super) fn transposed(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        axes: Option<(&Expr, Vec<&Expr>)>,
    ) -> Result<Elem> {
        let mut r = match x {
            Elem::Ref(r) => r,
            other => self.materialize(c, other)?,
        };
        let Some((at, items)) = axes else {
            r.order.reverse();
            return Ok(Elem::Ref(r));
        };
        let rank = r.order.len();
        let mut perm = Vec::with_capacity(items.len());
        for a in items {
            let k = self
                .sym(a)?
                .as_int()
                .ok_or_else(|| self.err(a, unsupported("transpose axes that are not constants")))?;
            let k = if k < 0 { k + rank as i64 } else { k };
            perm.push(usize::try_from(k).unwrap_or(usize::MAX));
        }
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..rank).collect::<Vec<_>>() {
            return Err(self.err(
                at,
                ErrorKind::Shape(format!(
                    "transpose axes {perm:?} are not a permutation of {rank} axes"
                )),
            ));
        }
        r.order = perm.iter().map(|&k| r.order[k]).collect();
        Ok(Elem::Ref(r))
    }

    /// A shape argument: `(N, M)`, `[N, M]`, `N`, or `x.shape`.
    pub(super) fn shape_arg(&mut self, e: &Expr) -> Result<Vec<SymExpr>> {
        match e {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter().map(|a| self.sym(a)).collect()
            }
            Expr::Attribute(a) if a.attr.id.as_str() == "shape" => {
                self.elem(&a.value)?.shape().ok_or_else(|| {
                    self.err(e, ErrorKind::Shape("operands do not broadcast".to_owned()))
                })
            }
            one => Ok(vec![self.sym(one)?]),
        }
    }

    /// A `dtype=` argument: `np.float64`, `dace.int32`, or `x.dtype`.
    pub(super) fn dtype_arg(&mut self, d: &Expr) -> Result<DType> {
        if let Some(t) = self.m.dtype_of(d) {
            return Ok(t);
        }
        if let Expr::Attribute(a) = d
            && a.attr.id.as_str() == "dtype"
        {
            return Ok(self.elem(&a.value)?.dtype());
        }
        Err(self.err(
            d,
            ErrorKind::Annotation(format!(
                "{} is not a dtype",
                self.m.source.quoted(d.range())
            )),
        ))
    }

    /// Inlines a call of another `@dace.program` of the module: its
    /// parameters are bound to the argument regions (views, not copies, as in
    /// Python), the size symbols of its annotations to the arguments'
    /// extents (which may be loop variables of the caller), and its tail
    /// `return` writes the call's value.
    /// Inlines a program call whose value is one value.
    pub(super) fn inline(&mut self, c: &ast::ExprCall, f: &ast::StmtFunctionDef) -> Result<Elem> {
        match self.inline_results(c, f)? {
            InlineValue::One(e) => Ok(e),
            InlineValue::Many(_) => Err(self.err(
                c,
                unsupported(format!(
                    "`{}` returns a tuple: assign it to as many names",
                    f.name.id
                )),
            )),
        }
    }

    /// `a, b = program(...)`: the values of a program returning a tuple.
    pub(super) fn call_results(&mut self, c: &ast::ExprCall) -> Result<Option<Vec<Elem>>> {
        let Expr::Name(n) = &*c.func else {
            return Ok(None);
        };
        let Some(f) = self.m.programs.get(n.id.as_str()) else {
            return Ok(None);
        };
        Ok(match self.inline_results(c, f)? {
            InlineValue::Many(values) => Some(values),
            InlineValue::One(_) => None,
        })
    }

    pub(super) fn inline_results(
        &mut self,
        c: &ast::ExprCall,
        f: &ast::StmtFunctionDef,
    ) -> Result<InlineValue> {
        if self.inlining.len() > 16 {
            return Err(self.err(c, unsupported("recursion between programs")));
        }
        if !tail_returns_only(&f.body) {
            return Err(self.err(
                c,
                unsupported(format!(
                    "inlining `{}`: `return` before the end of the program",
                    f.name.id
                )),
            ));
        }
        let params = &f.parameters.args;
        let callee = f.name.id.as_str();
        if c.arguments.args.len() > params.len() {
            return Err(self.err(
                &c.arguments.args[params.len()],
                unsupported(format!(
                    "calling `{callee}` with {} positional arguments; it takes {}",
                    c.arguments.args.len(),
                    params.len()
                )),
            ));
        }
        let mut args = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let name = p.parameter.name.id.as_str();
            let e = match c.arguments.args.get(k) {
                Some(a) => a,
                None => self.kwarg(c, name).ok_or_else(|| {
                    self.err(
                        c,
                        unsupported(format!("calling `{callee}` without its argument `{name}`")),
                    )
                })?,
            };
            args.push(self.elem(e)?);
        }
        // Keywords that are no parameter name a symbol of the callee (a
        // module-level symbol its body uses), as in DaCe:
        // `pressure_poisson(p, dx, dy, b, nit=nit)` runs the callee's
        // `range(nit)` with the caller's `nit`; `triu(A, k=1)` its
        // `dc.map[i + k:N]` with 1.
        let mut bound: BTreeMap<String, Name> = BTreeMap::new();
        for kw in &c.arguments.keywords {
            let Some(arg) = &kw.arg else {
                return Err(self.err(kw, unsupported("`**` arguments in a program call")));
            };
            let key = arg.id.as_str();
            if params.iter().any(|p| p.parameter.name.id.as_str() == key) {
                if (0..c.arguments.args.len()).any(|k| params[k].parameter.name.id.as_str() == key)
                {
                    return Err(self.err(
                        kw,
                        unsupported(format!("`{key}=` given to `{callee}` positionally too")),
                    ));
                }
                continue;
            }
            if !self.m.symbols.contains_key(key) && !self.m.symbol_exprs.contains_key(key) {
                return Err(self.err(
                    kw,
                    unsupported(format!(
                        "the keyword `{key}=` in a call of `{callee}`: it is no parameter of `{callee}` and no module-level symbol"
                    )),
                ));
            }
            self.keywords_read.borrow_mut().insert(kw.range().start());
            let value = self.sym(&kw.value)?;
            bound.insert(key.to_owned(), Name::Value(value));
        }
        for (p, arg) in params.iter().zip(args) {
            let name = p.parameter.name.id.to_string();
            let ann = p.parameter.annotation.as_deref().ok_or_else(|| {
                self.err(
                    &p.parameter,
                    ErrorKind::Annotation(format!("parameter `{name}` has no annotation")),
                )
            })?;
            // Bind the size symbols of the annotation to the argument's extents.
            if let Expr::Subscript(s) = ann {
                let dims: Vec<&Expr> = match &*s.slice {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    one => vec![one],
                };
                let shape = arg.shape().unwrap_or_default();
                if dims.len() != shape.len() {
                    return Err(self.err(
                        c,
                        ErrorKind::Shape(format!(
                            "argument `{name}` has {} dimensions, the parameter {}",
                            shape.len(),
                            dims.len()
                        )),
                    ));
                }
                for (d, len) in dims.iter().zip(shape) {
                    // `S` binds to the extent; `S + k` and `S - k` (a
                    // constant k) bind `S` to the extent minus / plus k.
                    let (sym, offset) = match d {
                        Expr::Name(n) => (n, 0),
                        Expr::BinOp(b) => match (&*b.left, b.op, &*b.right) {
                            (
                                Expr::Name(n),
                                ast::Operator::Add | ast::Operator::Sub,
                                Expr::NumberLiteral(k),
                            ) => {
                                let Some(k) = k.value.as_int().and_then(ast::Int::as_i64) else {
                                    continue;
                                };
                                (n, if b.op == ast::Operator::Add { k } else { -k })
                            }
                            _ => continue,
                        },
                        _ => continue,
                    };
                    if !bound.contains_key(sym.id.as_str()) {
                        bound.insert(sym.id.to_string(), Name::Value(len - offset));
                    }
                }
            }
            let binding = match arg.as_sym() {
                Some(v) if arg.is_weak() => Name::Value(v),
                // A scalar computed in a map body, or an element read
                // there, stays a value of the iteration.
                _ if !self.map_ctx.is_empty()
                    && !matches!(&arg, Elem::Ref(r) if !self.is_value(r))
                    && arg.shape().is_some_and(|s| s.is_empty()) =>
                {
                    Name::Local(arg)
                }
                _ => {
                    let r = match arg {
                        // An element is NumPy's scalar, a scalar container
                        // a Python number: the callee's parameter is a
                        // copy, as a name bound to it is.
                        Elem::Ref(r) if self.is_value(&r) => {
                            let copy = self.new_transient(&format!("{name}_"), r.dtype, &[]);
                            self.assign_region(c, copy.clone(), Elem::Ref(r))?;
                            copy
                        }
                        Elem::Ref(r) => r,
                        other => self.materialize(c, other)?,
                    };
                    Name::Ref(r)
                }
            };
            bound.insert(name, binding);
        }
        let saved = std::mem::replace(&mut self.names, bound);
        let saved_bindings = std::mem::replace(&mut self.bindings, binding_sites(f));
        map_updated_names(&f.body, !self.map_ctx.is_empty(), &mut self.map_updated);
        self.inlining.push(InlineFrame { result: None });
        let r = self.body(&f.body);
        let frame = self.inlining.pop();
        self.names = saved;
        self.bindings = saved_bindings;
        r?;
        Ok(match frame.and_then(|f| f.result) {
            Some(InlineResult::Region(result)) => InlineValue::One(Elem::Ref(result)),
            Some(InlineResult::Local(value)) => InlineValue::One(value),
            Some(InlineResult::Tuple(values)) => {
                InlineValue::Many(values.into_iter().map(Elem::Ref).collect())
            }
            None => InlineValue::One(Elem::Lit(Literal::Bool(false))),
        })
    }

    /// `r[k] = k` for `np.arange`.
    pub(super) fn elementwise_fill(
        &mut self,
        node: &impl Ranged,
        r: &ArrayRef,
        value: &SymExpr,
    ) -> Result<()> {
        let code_value = sym_code(value)
            .ok_or_else(|| self.err(node, unsupported("a data-dependent `arange`")))?;
        let n = r.shape()[0].clone();
        let map = Map {
            label: format!("{}_fill", r.data),
            params: vec!["__k".to_owned()],
            ranges: vec![Range::slice(SymExpr::int(0), n)],
            schedule: Schedule::Default,
        };
        let data = r.data.clone();
        self.state(node, "arange", move |s| {
            let out = s.access(&data);
            let (entry, exit) = s.map_with(map);
            let t = s.tasklet(
                "index",
                vec![],
                vec![Connector::scalar("__out", DType::Int64)],
                vec![code::Stmt::assign("__out", code_value)],
            );
            s.empty_edge(entry, t);
            s.path(
                &[t, exit, out],
                Some("__out"),
                None,
                Memlet::new(&data, Subset::at(vec![SymExpr::symbol("__k")])),
            );
        })
    }

    pub(super) fn ufunc(&mut self, c: &ast::ExprCall, f: Intrinsic) -> Result<Elem> {
        let args = c
            .arguments
            .args
            .iter()
            .map(|a| self.elem(a))
            .collect::<Result<Vec<_>>>()?;
        self.ufunc_of(c, f, args)
    }

    /// The intrinsic `f` of already lowered arguments, typed as NumPy
    /// types the ufunc.
    pub(super) fn ufunc_of(
        &mut self,
        c: &ast::ExprCall,
        f: Intrinsic,
        args: Vec<Elem>,
    ) -> Result<Elem> {
        if args.len() != f.arity() {
            return Err(self.err(
                c,
                unsupported(format!("`{}` with {} arguments", f.name(), args.len())),
            ));
        }
        let mut t = args[0].dtype();
        let mut weak = args[0].is_weak();
        for a in &args[1..] {
            t = promote(t, weak, a.dtype(), a.is_weak());
            weak = weak && a.is_weak();
        }
        // Where the function is the identity for its operand's type, the
        // operand is the value (NumPy 2 keeps the dtype): the floor or
        // ceiling of integers, the conjugate or real part of reals.
        let identity = match f {
            Intrinsic::Floor | Intrinsic::Ceil => t.is_integer() || t == DType::Bool,
            Intrinsic::Real => !t.is_complex(),
            Intrinsic::Conj => !t.is_complex() && t != DType::Bool,
            // NumPy's absolute value of a boolean is itself.
            Intrinsic::Abs => t == DType::Bool,
            _ => false,
        };
        if identity && let [x] = &args[..] {
            return Ok(x.clone());
        }
        if let (Intrinsic::Conj, [x]) = (f, &args[..])
            && t == DType::Bool
        {
            // NumPy's conjugate has no boolean loop: booleans become int8.
            return Ok(x.clone().cast(DType::Int8));
        }
        if let (Intrinsic::Imag, [x]) = (f, &args[..])
            && !t.is_complex()
        {
            // The imaginary part of a real array: zeros of its type and
            // shape (NumPy's `x.imag`).
            let zero = Elem::Lit(Literal::i64(0)).cast(t);
            return Ok(Elem::Select(
                Box::new(Elem::Lit(Literal::Bool(true))),
                Box::new(zero),
                Box::new(x.clone()),
                t,
            ));
        }
        if let (Intrinsic::IsNan, [x]) = (f, &args[..])
            && t.is_complex()
        {
            // A complex number is NaN where either part is.
            // (A call's type is its operands' type: the part's is the
            // complex type, the test's the real one.)
            let part = |p: Intrinsic| {
                let r = t.real_type();
                Elem::Call(Intrinsic::IsNan, vec![Elem::Call(p, vec![x.clone()], t)], r)
            };
            return Ok(Elem::Binary(
                BinaryOp::Or,
                Box::new(part(Intrinsic::Real)),
                Box::new(part(Intrinsic::Imag)),
                DType::Bool,
            ));
        }
        // The maximum and minimum of booleans are their `or` and `and`.
        if t == DType::Bool
            && let (Intrinsic::Max | Intrinsic::Min, [x, y]) = (f, &args[..])
        {
            let op = if f == Intrinsic::Max {
                BinaryOp::Or
            } else {
                BinaryOp::And
            };
            return Ok(Elem::Binary(
                op,
                Box::new(x.clone()),
                Box::new(y.clone()),
                DType::Bool,
            ));
        }
        // Transcendental functions of integers compute in a float, as in
        // NumPy (float32 for 16-bit integers; NumPy's float16 for 8-bit
        // ones and booleans is float64 here, a type this IR lacks).
        let needs_float = !matches!(
            f,
            Intrinsic::Abs
                | Intrinsic::Min
                | Intrinsic::Max
                | Intrinsic::Real
                | Intrinsic::Imag
                | Intrinsic::Conj
        );
        if needs_float && (t.is_integer() || t == DType::Bool) {
            t = float_of_operands(&args);
        }
        // Every function but these is computed for real arguments only
        // (NumPy orders complex numbers lexicographically in `maximum` and
        // rounds both parts in `rint`; neither is implemented).
        let real_only = !matches!(
            f,
            Intrinsic::Sqrt
                | Intrinsic::Exp
                | Intrinsic::Log
                | Intrinsic::Sin
                | Intrinsic::Cos
                | Intrinsic::Tan
                | Intrinsic::Tanh
                | Intrinsic::Atan
                | Intrinsic::Pow
                | Intrinsic::Abs
                | Intrinsic::Real
                | Intrinsic::Imag
                | Intrinsic::Conj
                | Intrinsic::Complex
        );
        if real_only && t.is_complex() {
            return Err(self.err(
                c,
                unsupported(format!(
                    "`{}` of complex numbers",
                    self.m.source.snippet(c.func.range())
                )),
            ));
        }
        if matches!(f, Intrinsic::Min | Intrinsic::Max) && weak {
            let e = Elem::Call(f, args.clone(), DType::Int64);
            if let Some(s) = e.as_sym() {
                return Ok(Elem::Sym(s));
            }
        }
        let e = Elem::Call(f, args, t);
        if e.shape().is_none() {
            return Err(self.err(c, ErrorKind::Shape("operands do not broadcast".to_owned())));
        }
        Ok(e)
    }
}

/// Whether every `return` of `body` is in tail position (the last statement,
/// or the last statement of every branch of a trailing `if`).
fn tail_returns_only(body: &[Stmt]) -> bool {
    fn has_return(body: &[Stmt]) -> bool {
        body.iter().any(|s| match s {
            Stmt::Return(_) => true,
            Stmt::If(i) => {
                has_return(&i.body) || i.elif_else_clauses.iter().any(|c| has_return(&c.body))
            }
            Stmt::For(f) => has_return(&f.body),
            Stmt::While(w) => has_return(&w.body),
            _ => false,
        })
    }
    body.iter().enumerate().all(|(k, s)| {
        let last = k + 1 == body.len();
        match s {
            Stmt::Return(_) => last,
            Stmt::If(i) if has_return(std::slice::from_ref(s)) => {
                last && tail_returns_only(&i.body)
                    && i.elif_else_clauses
                        .iter()
                        .all(|c| tail_returns_only(&c.body))
            }
            other => !has_return(std::slice::from_ref(other)),
        }
    })
}

/// The value of a Python number literal (`2`, `-9999`, `-1.5`), weak in
/// NumPy's promotion, or `None` for anything else.
fn weak_constant(e: &Elem) -> Option<Literal> {
    match e {
        Elem::Lit(l) => Some(*l),
        Elem::Sym(s) => s.as_int().map(Literal::i64),
        Elem::Unary(UnaryOp::Neg, inner) => weak_constant(inner)?.negated(),
        _ => None,
    }
}
