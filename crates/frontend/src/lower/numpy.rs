//! NumPy functions built from the lowering's own pieces: elementwise
//! compositions (`np.square`, `np.clip`, `np.isclose`), views (`np.flip`,
//! `np.rot90`), arrays made from parts (`np.concatenate`, `np.stack`,
//! `np.array` of a literal), reductions that are sums or extrema of
//! something else (`np.any`, `np.count_nonzero`, `np.argmax`, `np.trace`),
//! scans (`np.cumsum`), contractions (`np.einsum`) and `np.linalg.inv`.
//!
//! Each follows NumPy 2's definition of the function (the dtype rules
//! included), and none needs a node of its own: what they produce is maps,
//! Reduce and MatMul nodes and views that the passes and both backends
//! already handle.

use super::*;
use crate::functions::{Composite, ElementwiseFunction, Lowering};

impl<'m> Lowerer<'m> {
    /// `np.<name>(args...)` for the functions of this file; `None` when
    /// `name` is none of them. `args` are the positional arguments, the
    /// receiver first for a method (`x.cumsum(0)` is `np.cumsum(x, 0)`).
    pub(super) fn numpy_function(
        &mut self,
        c: &ast::ExprCall,
        module: &str,
        name: &str,
        args: &[&Expr],
    ) -> Result<Option<Elem>> {
        let missing = self.err(
            c,
            unsupported(format!("`np.{name}` without its required arguments")),
        );
        let arg = |k: usize| args.get(k).copied().ok_or_else(|| missing.clone());
        let value = match (module, name) {
            ("np", "clip") => {
                let x = self.elem(arg(0)?)?;
                let bound = |l: &mut Self, k: usize, names: [&str; 2]| -> Result<Option<Elem>> {
                    let e = args
                        .get(k)
                        .copied()
                        .or_else(|| l.kwarg(c, names[0]))
                        .or_else(|| l.kwarg(c, names[1]));
                    match e {
                        None | Some(Expr::NoneLiteral(_)) => Ok(None),
                        Some(e) => Ok(Some(l.elem(e)?)),
                    }
                };
                let lo = bound(self, 1, ["a_min", "min"])?;
                let hi = bound(self, 2, ["a_max", "max"])?;
                self.clip(c, x, lo, hi)?
            }
            ("np", "full" | "full_like") => {
                let like = name == "full_like";
                let fill = self.elem(arg(1)?)?;
                let (shape, mut dtype) = if like {
                    let x = self.elem(arg(0)?)?;
                    (x.shape().unwrap_or_default(), x.dtype())
                } else {
                    // NumPy's dtype of a Python number is the default one.
                    (self.shape_arg(arg(0)?)?, fill.dtype())
                };
                if let Some(d) = self.kwarg(c, "dtype").or(args.get(2).copied()) {
                    dtype = self.dtype_arg(d)?;
                }
                self.check_dimensions(arg(0)?, &shape, dtype)?;
                let r = self.new_transient("full_", dtype, &shape);
                self.assign_region(c, r.clone(), fill)?;
                Elem::Ref(r)
            }
            ("np", "flip" | "fliplr" | "flipud") => {
                let r = self.view_of(c, arg(0)?)?;
                let rank = r.order.len();
                let axes = match name {
                    "fliplr" => vec![1],
                    "flipud" => vec![0],
                    _ => match self.kwarg(c, "axis").or(args.get(1).copied()) {
                        None | Some(Expr::NoneLiteral(_)) => (0..rank).collect(),
                        Some(a) => self.axes(a, rank)?,
                    },
                };
                let mut r = r;
                for a in axes {
                    if a >= rank {
                        return Err(self.err(
                            c,
                            ErrorKind::Shape(format!("`np.{name}` of an array of rank {rank}")),
                        ));
                    }
                    r = r.flipped(a);
                }
                Elem::Ref(r)
            }
            ("np", "rot90") => {
                let r = self.view_of(c, arg(0)?)?;
                let rank = r.order.len();
                let k = match self.kwarg(c, "k").or(args.get(1).copied()) {
                    None => 1,
                    Some(e) => self
                        .sym(e)?
                        .as_int()
                        .ok_or_else(|| self.err(e, unsupported("a `k` that is not a constant")))?,
                };
                let (a0, a1) = match self.kwarg(c, "axes").or(args.get(2).copied()) {
                    None => (0, 1),
                    Some(e) => match self.axes(e, rank)?[..] {
                        [a, b] if a != b => (a, b),
                        _ => {
                            return Err(self.err(
                                e,
                                ErrorKind::Shape("`axes` must be two different axes".to_owned()),
                            ));
                        }
                    },
                };
                if rank < 2 || a0 >= rank || a1 >= rank {
                    return Err(self.err(
                        c,
                        ErrorKind::Shape("`np.rot90` needs an array of rank 2 or more".to_owned()),
                    ));
                }
                // NumPy's definition: a flip and a swap of the two axes.
                let swap = |mut r: ArrayRef| {
                    r.order.swap(a0, a1);
                    r
                };
                Elem::Ref(match k.rem_euclid(4) {
                    0 => r,
                    1 => swap(r.flipped(a1)),
                    2 => r.flipped(a0).flipped(a1),
                    _ => swap(r).flipped(a1),
                })
            }
            ("np", "linspace") => self.linspace(c, args)?,
            ("np", "tril" | "triu") => {
                let x = self.elem(arg(0)?)?;
                let shape = x.shape().unwrap_or_default();
                let rank = shape.len();
                if rank < 2 {
                    return Err(self.err(
                        c,
                        ErrorKind::Shape(format!("`np.{name}` of an array of rank {rank}")),
                    ));
                }
                let k = match self.kwarg(c, "k").or(args.get(1).copied()) {
                    None => Elem::Lit(Literal::i64(0)),
                    Some(e) => self.elem(e)?,
                };
                let rows = self.iota(c, shape[rank - 2].clone())?;
                let i = along(&rows, rank, rank - 2);
                let j = if shape[rank - 1] == shape[rank - 2] {
                    along(&rows, rank, rank - 1)
                } else {
                    self.axis_index(c, &shape, rank - 1)?
                };
                let d = self.binary(c, BinaryOp::Sub, j, i)?;
                let op = if name == "tril" {
                    BinaryOp::Le
                } else {
                    BinaryOp::Ge
                };
                let keep = self.binary(c, op, d, k)?;
                let t = x.dtype();
                let zero = Elem::Cast(t, Box::new(Elem::Lit(Literal::i64(0))));
                let out = self.new_transient(&format!("{name}_"), t, &shape);
                let v = Elem::Select(Box::new(keep), Box::new(x), Box::new(zero), t);
                self.assign_region(c, out.clone(), v)?;
                Elem::Ref(out)
            }
            ("np", "diag" | "diagonal" | "trace") => {
                let x = self.elem(arg(0)?)?;
                let key = if name == "diag" { "k" } else { "offset" };
                let k = match self.kwarg(c, key).or(args.get(1).copied()) {
                    None => 0,
                    Some(e) => self.sym(e)?.as_int().ok_or_else(|| {
                        self.err(e, unsupported(format!("an `{key}` that is not a constant")))
                    })?,
                };
                let rank = x.shape().map_or(0, |s| s.len());
                match (name, rank) {
                    ("diag", 1) => self.diag_matrix(c, x, k)?,
                    (_, 2) => {
                        let d = self.diagonal(c, x, k)?;
                        if name == "trace" {
                            let t = accumulator(d.dtype);
                            self.reduce(
                                c,
                                Elem::Ref(d).cast(t),
                                Wcr::Sum.into(),
                                None,
                                false,
                                false,
                            )?
                        } else {
                            Elem::Ref(d)
                        }
                    }
                    _ => {
                        return Err(self.err(
                            c,
                            unsupported(format!("`np.{name}` of an array of rank {rank}")),
                        ));
                    }
                }
            }
            ("np", "outer") => {
                let (x, y) = (self.elem(arg(0)?)?, self.elem(arg(1)?)?);
                let (x, y) = (self.flat(c, x)?, self.flat(c, y)?);
                self.outer_of(c, BinaryOp::Mul, x, y)?
            }
            ("np", "concatenate" | "stack" | "hstack" | "vstack" | "column_stack") => {
                self.join(c, name, args)?
            }
            ("np", "array" | "asarray") => {
                let e = arg(0)?;
                let dtype = match self.kwarg(c, "dtype").or(args.get(1).copied()) {
                    Some(d) => Some(self.dtype_arg(d)?),
                    None => None,
                };
                if let Some(k) = self.kwarg(c, "copy") {
                    return Err(self.err(k, unsupported("`copy=` of `np.array`")));
                }
                match e {
                    Expr::List(_) | Expr::Tuple(_) => self.array_literal(c, e, dtype)?,
                    e => {
                        let x = self.elem(e)?;
                        match (name, dtype) {
                            ("asarray", None) => x,
                            (_, dtype) => {
                                let shape = x.shape().unwrap_or_default();
                                let t = dtype.unwrap_or(x.dtype());
                                let r = self.new_transient("array_", t, &shape);
                                self.assign_region(c, r.clone(), x)?;
                                Elem::Ref(r)
                            }
                        }
                    }
                }
            }
            ("np", "ravel") => {
                let x = self.elem(arg(0)?)?;
                self.flat(c, x)?
            }
            ("np", "any" | "all" | "count_nonzero") => {
                let x = self.elem(arg(0)?)?;
                let axis = self.axis_kwarg(c, args.get(1).copied())?;
                let keepdims = self.keepdims(c)?;
                self.count_test(c, name, x, axis, keepdims)?
            }
            ("np", "argmax" | "argmin") => {
                let x = self.elem(arg(0)?)?;
                let axis = self.axis_kwarg(c, args.get(1).copied())?;
                let keepdims = self.keepdims(c)?;
                self.arg_extremum(c, name == "argmax", x, axis, keepdims)?
            }
            ("np", "cumsum" | "cumprod") => {
                let x = self.elem(arg(0)?)?;
                let w = if name == "cumsum" {
                    Wcr::Sum
                } else {
                    Wcr::Product
                };
                let axis = self.axis_kwarg(c, args.get(1).copied())?;
                // NumPy accumulates small integers in the default integer.
                let t = accumulator(x.dtype());
                let x = x.cast(t);
                let (x, axis) = match axis {
                    None => (self.flat(c, x)?, 0),
                    Some(a) => (x, a),
                };
                self.scan(c, w, x, axis)?
            }
            ("np", "allclose") => {
                let (x, y) = (self.elem(arg(0)?)?, self.elem(arg(1)?)?);
                let close = self.isclose_call(c, x, y, &args[2.min(args.len())..])?;
                self.count_test(c, "all", close, None, false)?
            }
            ("np", "einsum") => self.einsum(c, args)?,
            ("dace", "define_local" | "ndarray") => {
                // An uninitialized transient, as `np.empty`.
                let shape = match self.kwarg(c, "shape") {
                    Some(e) => self.shape_arg(e)?,
                    None => self.shape_arg(arg(0)?)?,
                };
                let dtype = match self.kwarg(c, "dtype").or(args.get(1).copied()) {
                    Some(d) => self.dtype_arg(d)?,
                    None => DType::Float64,
                };
                // A storage is a placement the offload pass decides; the
                // values are the same wherever the array lives.
                let _ = self.kwarg(c, "storage");
                let r = self.new_transient("local_", dtype, &shape);
                Elem::Ref(r)
            }
            ("linalg", "inv") => {
                let a = self.elem(arg(0)?)?;
                let shape = a.shape().unwrap_or_default();
                let [n, m] = &shape[..] else {
                    return Err(self.err(
                        c,
                        unsupported("`np.linalg.inv` of other than one square matrix"),
                    ));
                };
                if (n - m).as_int().is_some_and(|d| d != 0) {
                    return Err(self.err(
                        c,
                        ErrorKind::Shape(
                            "`np.linalg.inv` of a matrix that is not square".to_owned(),
                        ),
                    ));
                }
                // The inverse solves A X = I: one getrf/getrs on the vendor
                // library, as LAPACK's own `gesv` inverse does.
                let t = float_of(a.dtype());
                let eye = self.eye(c, n.clone(), t)?;
                let a = a.cast(t);
                self.library(
                    c,
                    LibraryOp::Solve,
                    &[("_a", a), ("_b", eye)],
                    "_x",
                    Some(shape),
                )?
            }
            _ => return Ok(None),
        };
        Ok(Some(value))
    }

    /// `np.<f.name>(...)` for a function of the elementwise table
    /// ([`crate::functions::ELEMENTWISE`]): its operands are the first
    /// positional arguments; what follows them are options the function
    /// reads (`decimals`, tolerances).
    pub(super) fn elementwise_function(
        &mut self,
        c: &ast::ExprCall,
        f: &ElementwiseFunction,
    ) -> Result<Elem> {
        let args = &c.arguments.args;
        let options = matches!(
            f.lowering,
            Lowering::Composite(Composite::Round | Composite::IsClose)
        );
        if args.len() < f.operands || (args.len() > f.operands && !options) {
            let what = if f.operands == 1 {
                "one operand"
            } else {
                "two operands"
            };
            return Err(self.err(
                c,
                unsupported(format!(
                    "`np.{}` with {} positional arguments (it takes {what})",
                    f.name,
                    args.len()
                )),
            ));
        }
        let mut operands = args[..f.operands]
            .iter()
            .map(|a| self.elem(a))
            .collect::<Result<Vec<_>>>()?;
        let rest: Vec<&Expr> = args[f.operands..].iter().collect();
        match f.lowering {
            Lowering::Intrinsic(i) => self.ufunc_of(c, i, operands),
            Lowering::Operator(op) => {
                let y = operands.pop();
                let x = operands.pop();
                match (x, y) {
                    (Some(x), Some(y)) => self.binary(c, op, x, y),
                    _ => Err(self.err(c, unsupported(format!("`np.{}` of one operand", f.name)))),
                }
            }
            Lowering::Composite(k) => self.composite(c, f.name, k, operands, &rest),
        }
    }

    /// A function of the elementwise table composed from other pieces,
    /// each by NumPy's definition, dtype rules included.
    fn composite(
        &mut self,
        c: &ast::ExprCall,
        name: &str,
        k: Composite,
        operands: Vec<Elem>,
        options: &[&Expr],
    ) -> Result<Elem> {
        let mut operands = operands.into_iter();
        let missing = self.err(c, unsupported(format!("`np.{name}` without its operands")));
        let mut next = || operands.next().ok_or_else(|| missing.clone());
        let x = next()?;
        Ok(match k {
            Composite::Square => {
                // NumPy squares booleans as int8 (the ufunc has no bool loop).
                let x = if x.dtype() == DType::Bool {
                    x.cast(DType::Int8)
                } else {
                    x
                };
                self.binary(c, BinaryOp::Mul, x.clone(), x)?
            }
            Composite::LogicalXor => {
                let y = next()?;
                let (x, y) = (x.cast(DType::Bool), y.cast(DType::Bool));
                let e = Elem::Binary(BinaryOp::Ne, Box::new(x), Box::new(y), DType::Bool);
                if e.shape().is_none() {
                    return Err(
                        self.err(c, ErrorKind::Shape("operands do not broadcast".to_owned()))
                    );
                }
                e
            }
            Composite::LogicalNot => Elem::Unary(UnaryOp::Not, Box::new(x.cast(DType::Bool))),
            Composite::Negative => Elem::Unary(UnaryOp::Neg, Box::new(x)),
            Composite::Positive => {
                if x.dtype() == DType::Bool {
                    // NumPy has no boolean loop for `positive`.
                    return Err(self.err(c, unsupported("`np.positive` of booleans")));
                }
                x
            }
            Composite::Reciprocal => {
                if !x.dtype().is_float() && !x.dtype().is_complex() {
                    return Err(self.err(
                        c,
                        unsupported(format!(
                            "`np.reciprocal` of {} (NumPy's integer reciprocal truncates; write `1 / x`)",
                            x.dtype()
                        )),
                    ));
                }
                let one = Elem::Cast(x.dtype(), Box::new(Elem::Lit(Literal::i64(1))));
                Elem::Binary(BinaryOp::Div, Box::new(one), Box::new(x.clone()), x.dtype())
            }
            Composite::Fabs => {
                if x.dtype().is_complex() {
                    return Err(self.err(c, unsupported("`np.fabs` of complex numbers")));
                }
                let t = float_of(x.dtype());
                Elem::Call(Intrinsic::Abs, vec![x.cast(t)], t)
            }
            Composite::DegreesToRadians | Composite::RadiansToDegrees => {
                if x.dtype().is_complex() {
                    return Err(self.err(c, unsupported(format!("`np.{name}` of complex numbers"))));
                }
                let t = float_of(x.dtype());
                let factor = if k == Composite::DegreesToRadians {
                    std::f64::consts::PI / 180.0
                } else {
                    180.0 / std::f64::consts::PI
                };
                self.binary(c, BinaryOp::Mul, x.cast(t), Elem::Lit(Literal::f64(factor)))?
            }
            Composite::Sign => {
                let t = x.dtype();
                if t.is_complex() {
                    return Err(self.err(c, unsupported("`np.sign` of complex numbers")));
                }
                let zero = Elem::Lit(Literal::i64(0));
                let lit = |v: i64| Elem::Cast(t, Box::new(Elem::Lit(Literal::i64(v))));
                let pos =
                    Elem::Binary(BinaryOp::Gt, Box::new(x.clone()), Box::new(zero.clone()), t);
                let neg = Elem::Binary(BinaryOp::Lt, Box::new(x.clone()), Box::new(zero), t);
                // Zero and NaN are their own sign.
                let rest = Elem::Select(Box::new(neg), Box::new(lit(-1)), Box::new(x), t);
                Elem::Select(Box::new(pos), Box::new(lit(1)), Box::new(rest), t)
            }
            Composite::Trunc | Composite::Rint => {
                let t = x.dtype();
                if !t.is_float() && k == Composite::Trunc && !t.is_complex() {
                    // NumPy keeps integers as they are.
                    x
                } else {
                    let f = if k == Composite::Rint {
                        Intrinsic::Rint
                    } else {
                        Intrinsic::Trunc
                    };
                    self.ufunc_of(c, f, vec![x])?
                }
            }
            Composite::Round => {
                let d = match self.kwarg(c, "decimals").or(options.first().copied()) {
                    None => 0,
                    Some(e) => self.sym(e)?.as_int().ok_or_else(|| {
                        self.err(e, unsupported("`decimals` that is not a constant"))
                    })?,
                };
                self.round(c, name, x, d)?
            }
            Composite::IsClose => {
                let y = next()?;
                self.isclose_call(c, x, y, options)?
            }
        })
    }

    /// `np.round(x, d)`: NumPy's `rint(x * 10**d) / 10**d`, or for negative
    /// decimals `rint(x / 10**-d) * 10**-d`; integers to `d >= 0` decimals
    /// unchanged.
    fn round(&mut self, c: &ast::ExprCall, name: &str, x: Elem, d: i64) -> Result<Elem> {
        let t = x.dtype();
        if t.is_integer() && d >= 0 {
            return Ok(x);
        }
        if !t.is_float() {
            return Err(self.err(
                c,
                unsupported(format!("`np.{name}` of {t} to {d} decimals")),
            ));
        }
        let f = Elem::Lit(Literal::f64(10f64.powi(d.unsigned_abs() as i32)));
        let (there, back) = if d >= 0 {
            (BinaryOp::Mul, BinaryOp::Div)
        } else {
            (BinaryOp::Div, BinaryOp::Mul)
        };
        let y = if d == 0 {
            x
        } else {
            self.binary(c, there, x, f.clone())?
        };
        let r = Elem::Call(Intrinsic::Rint, vec![y], t);
        if d == 0 {
            Ok(r)
        } else {
            self.binary(c, back, r, f)
        }
    }

    /// `np.isclose(x, y, rtol, atol, equal_nan)` with the options given
    /// after the operands (`options`) or by keyword.
    fn isclose_call(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        y: Elem,
        options: &[&Expr],
    ) -> Result<Elem> {
        let tol = |l: &mut Self, key: &str, k: usize, default: f64| -> Result<Elem> {
            match l.kwarg(c, key).or(options.get(k).copied()) {
                Some(e) => l.elem(e),
                None => Ok(Elem::Lit(Literal::f64(default))),
            }
        };
        let rtol = tol(self, "rtol", 0, 1e-5)?;
        let atol = tol(self, "atol", 1, 1e-8)?;
        let equal_nan = match self.kwarg(c, "equal_nan").or(options.get(2).copied()) {
            None => false,
            Some(Expr::BooleanLiteral(b)) => b.value,
            Some(e) => {
                return Err(self.err(e, unsupported("an `equal_nan` that is not True or False")));
            }
        };
        self.isclose(c, x, y, rtol, atol, equal_nan)
    }

    /// The values of a NumPy function that returns a tuple (`divmod`,
    /// `np.divmod`, `np.modf`, `np.frexp`, `np.split`, `np.array_split`)
    /// for `a, b = f(...)`; `None` for any other call. Each value is
    /// evaluated before any target is assigned, as Python does.
    pub(super) fn numpy_results(
        &mut self,
        c: &ast::ExprCall,
        targets: usize,
    ) -> Result<Option<Vec<Elem>>> {
        let name = match (&*c.func, self.module_func(&c.func)) {
            (Expr::Name(n), _) if n.id.as_str() == "divmod" => "divmod",
            (_, Some(("np", f @ ("divmod" | "modf" | "frexp" | "split" | "array_split")))) => f,
            _ => return Ok(None),
        };
        let args = &c.arguments.args;
        let arg = |l: &Self, k: usize| {
            args.get(k).ok_or_else(|| {
                l.err(
                    c,
                    unsupported(format!("`{name}` without its required arguments")),
                )
            })
        };
        let x = self.elem(arg(self, 0)?)?;
        let values = match name {
            "divmod" => {
                let y = self.elem(arg(self, 1)?)?;
                vec![
                    self.binary(c, BinaryOp::FloorDiv, x.clone(), y.clone())?,
                    self.binary(c, BinaryOp::Mod, x, y)?,
                ]
            }
            "modf" => {
                let x = x.clone().cast(float_of(x.dtype()));
                let t = x.dtype();
                let whole = self.ufunc_of(c, Intrinsic::Trunc, vec![x.clone()])?;
                let frac = self.binary(c, BinaryOp::Sub, x.clone(), whole.clone())?;
                // The fraction of an infinity is zero (C's modf).
                let inf = Elem::Binary(
                    BinaryOp::Eq,
                    Box::new(Elem::Call(Intrinsic::Abs, vec![x], t)),
                    Box::new(Elem::Lit(Literal::f64(f64::INFINITY))),
                    t,
                );
                let zero = Elem::Lit(Literal::f64(0.0)).cast(t);
                vec![
                    Elem::Select(Box::new(inf), Box::new(zero), Box::new(frac), t),
                    whole,
                ]
            }
            "frexp" => {
                let x = x.clone().cast(float_of(x.dtype()));
                vec![
                    self.ufunc_of(c, Intrinsic::FrexpMantissa, vec![x.clone()])?,
                    self.ufunc_of(c, Intrinsic::FrexpExponent, vec![x])?,
                ]
            }
            _ => return self.split(c, name, x, targets).map(Some),
        };
        let values = values
            .into_iter()
            .map(|v| self.materialize(c, v).map(Elem::Ref))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(values))
    }

    /// `np.split(x, k)` / `np.array_split(x, k)` into `k` equal (or, for
    /// `array_split`, nearly equal: the first `len % k` one longer) parts,
    /// or `np.split(x, [i, j, ...])` at the indices: views of `x` along
    /// `axis`, as NumPy's.
    fn split(
        &mut self,
        c: &ast::ExprCall,
        name: &str,
        x: Elem,
        targets: usize,
    ) -> Result<Vec<Elem>> {
        let args = &c.arguments.args;
        let r = match x {
            Elem::Ref(r) => r,
            other => self.materialize(c, other)?,
        };
        let rank = r.order.len();
        let axis = match self.kwarg(c, "axis").or(args.get(2)) {
            None => 0,
            Some(e) => self.axes(e, rank)?.first().copied().unwrap_or(0),
        };
        if rank == 0 {
            return Err(self.err(c, ErrorKind::Shape("a split of a scalar".to_owned())));
        }
        let len = r.shape()[axis].clone();
        let Some(how) = args.get(1).or(self.kwarg(c, "indices_or_sections")) else {
            return Err(self.err(c, unsupported(format!("`np.{name}` without sections"))));
        };
        // The bounds of the parts along the axis.
        let bounds: Vec<(SymExpr, SymExpr)> = match how {
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                let mut cuts = vec![SymExpr::int(0)];
                for e in elts {
                    cuts.push(self.sym(e)?);
                }
                cuts.push(len.clone());
                cuts.windows(2)
                    .map(|w| (w[0].clone(), w[1].clone()))
                    .collect()
            }
            e => {
                let k = self.sym(e)?.as_int().filter(|k| *k > 0).ok_or_else(|| {
                    self.err(
                        e,
                        unsupported("a number of sections that is not a positive constant"),
                    )
                })?;
                let each = len.floor_div(&SymExpr::int(k));
                let extra = &len - &(&each * k);
                if name == "split" && extra.as_int().is_some_and(|e| e != 0) {
                    return Err(self.err(
                        e,
                        ErrorKind::Shape(
                            "array split does not result in an equal division".to_owned(),
                        ),
                    ));
                }
                let start = |i: i64| -> SymExpr {
                    if name == "split" {
                        &each * i
                    } else {
                        &each * i + extra.clone().min(SymExpr::int(i))
                    }
                };
                (0..k).map(|i| (start(i), start(i + 1))).collect()
            }
        };
        if bounds.len() != targets {
            return Err(self.err(
                c,
                ErrorKind::Shape(format!("{targets} names for {} parts", bounds.len())),
            ));
        }
        Ok(bounds
            .into_iter()
            .map(|(lo, hi)| {
                let mut part = r.clone();
                let d = part.order[axis];
                if let Dim::Range { start, step, .. } = &r.dims[d] {
                    part.dims[d] = Dim::Range {
                        start: start + &(step * &lo),
                        step: step.clone(),
                        len: &hi - &lo,
                    };
                }
                Elem::Ref(part)
            })
            .collect())
    }

    /// `np.clip(x, lo, hi)`: NumPy's `minimum(maximum(x, lo), hi)`, NaN
    /// propagating, the dtype promoted over all three.
    pub(super) fn clip(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        lo: Option<Elem>,
        hi: Option<Elem>,
    ) -> Result<Elem> {
        if lo.is_none() && hi.is_none() {
            return Err(self.err(
                c,
                unsupported("`np.clip` without a lower or an upper bound"),
            ));
        }
        let mut weak = x.is_weak();
        let mut t = x.dtype();
        for b in lo.iter().chain(&hi) {
            t = promote(t, weak, b.dtype(), b.is_weak());
            weak = weak && b.is_weak();
        }
        if t.is_complex() || t == DType::Bool {
            return Err(self.err(c, unsupported(format!("`np.clip` of {t}"))));
        }
        let cast = |e: Elem| e.cast(t);
        let mut v = cast(x);
        if let Some(lo) = lo {
            v = Elem::Call(Intrinsic::Max, vec![v, cast(lo)], t);
        }
        if let Some(hi) = hi {
            v = Elem::Call(Intrinsic::Min, vec![v, cast(hi)], t);
        }
        if v.shape().is_none() {
            return Err(self.err(c, ErrorKind::Shape("operands do not broadcast".to_owned())));
        }
        Ok(v)
    }

    /// The region `e` names, for functions whose result is a view of it
    /// (`np.flip`); a value that is no region is evaluated into one first.
    fn view_of(&mut self, node: &impl Ranged, e: &Expr) -> Result<ArrayRef> {
        match self.elem(e)? {
            Elem::Ref(r) => Ok(r),
            other => self.materialize(node, other),
        }
    }

    /// Constant axes (`1`, `-1`, `(0, 2)`), normalized against `rank`.
    pub(super) fn axes(&mut self, e: &Expr, rank: usize) -> Result<Vec<usize>> {
        let items: Vec<&Expr> = match e {
            Expr::Tuple(t) => t.elts.iter().collect(),
            Expr::List(l) => l.elts.iter().collect(),
            one => vec![one],
        };
        items
            .into_iter()
            .map(|a| {
                let k = self
                    .sym(a)?
                    .as_int()
                    .ok_or_else(|| self.err(a, unsupported("an axis that is not a constant")))?;
                let k = if k < 0 { k + rank as i64 } else { k };
                usize::try_from(k)
                    .ok()
                    .filter(|k| *k < rank)
                    .ok_or_else(|| {
                        self.err(
                            a,
                            ErrorKind::Shape(format!("axis {k} out of range for rank {rank}")),
                        )
                    })
            })
            .collect()
    }

    /// An `axis=` argument (keyword or positional) of one constant axis,
    /// kept as written (`None` for all axes).
    fn axis_kwarg(&mut self, c: &ast::ExprCall, positional: Option<&Expr>) -> Result<Option<i64>> {
        match self.kwarg(c, "axis").or(positional) {
            None | Some(Expr::NoneLiteral(_)) => Ok(None),
            Some(a) => match self.sym(a)?.as_int() {
                Some(k) => Ok(Some(k)),
                None => Err(self.err(a, unsupported("an axis that is not one constant"))),
            },
        }
    }

    /// A `keepdims=` argument (False by default).
    pub(super) fn keepdims(&mut self, c: &ast::ExprCall) -> Result<bool> {
        match self.kwarg(c, "keepdims") {
            None => Ok(false),
            Some(Expr::BooleanLiteral(b)) => Ok(b.value),
            Some(other) => {
                Err(self.err(other, unsupported("a `keepdims` that is not True or False")))
            }
        }
    }

    /// A 1-D `int64` array `0, 1, ..., n - 1`.
    fn iota(&mut self, node: &impl Ranged, n: SymExpr) -> Result<ArrayRef> {
        let r = self.new_transient("iota_", DType::Int64, std::slice::from_ref(&n));
        self.elementwise_fill(node, &r, &SymExpr::symbol("__k"))?;
        Ok(r)
    }

    /// The index along `axis` of each element of an array of `shape`, as a
    /// value that broadcasts against it.
    fn axis_index(&mut self, node: &impl Ranged, shape: &[SymExpr], axis: usize) -> Result<Elem> {
        let iota = self.iota(node, shape[axis].clone())?;
        Ok(along(&iota, shape.len(), axis))
    }

    /// The `n x n` identity of `dtype` (`np.eye`).
    pub(super) fn eye(&mut self, node: &impl Ranged, n: SymExpr, dtype: DType) -> Result<Elem> {
        let shape = [n.clone(), n.clone()];
        let r = self.new_transient("eye_", dtype, &shape);
        let iota = self.iota(node, n)?;
        let (i, j) = (along(&iota, 2, 0), along(&iota, 2, 1));
        let eq = Elem::Binary(BinaryOp::Eq, Box::new(i), Box::new(j), DType::Int64);
        let v = Elem::Select(
            Box::new(eq),
            Box::new(Elem::Lit(Literal::i64(1))),
            Box::new(Elem::Lit(Literal::i64(0))),
            dtype,
        );
        self.assign_region(node, r.clone(), v)?;
        Ok(Elem::Ref(r))
    }

    /// `x` as a 1-D array in row-major order (`np.ravel`, `x.flatten()`):
    /// a view of a whole array, else a copy.
    pub(super) fn flat(&mut self, node: &impl Ranged, x: Elem) -> Result<Elem> {
        let shape = x.shape().unwrap_or_default();
        if shape.len() == 1 {
            return Ok(x);
        }
        let count = shape.iter().fold(SymExpr::int(1), |a, b| a * b.clone());
        self.reshape(node, x, vec![count])
    }

    /// `np.<ufunc>.outer` of two values: `x` indexed with new axes after
    /// its own, `y` with new axes before its own, combined by `op`.
    pub(super) fn outer_of(
        &mut self,
        node: &impl Ranged,
        op: BinaryOp,
        x: Elem,
        y: Elem,
    ) -> Result<Elem> {
        let (mut a, mut b) = (self.plain(node, x)?, self.plain(node, y)?);
        let (ra, rb) = (a.order.len(), b.order.len());
        for _ in 0..rb {
            a.dims.push(Dim::NewAxis);
            a.order.push(a.dims.len() - 1);
        }
        let mut front = Vec::new();
        for _ in 0..ra {
            b.dims.push(Dim::NewAxis);
            front.push(b.dims.len() - 1);
        }
        front.extend(b.order.iter().copied());
        b.order = front;
        self.binary(node, op, Elem::Ref(a), Elem::Ref(b))
    }

    /// `np.linspace(start, stop, num=50, endpoint=True, dtype=None)`:
    /// NumPy's `arange(num) * step + start` with the last element `stop`
    /// exactly, floored for an integer dtype.
    fn linspace(&mut self, c: &ast::ExprCall, args: &[&Expr]) -> Result<Elem> {
        let get = |l: &Self, k: usize, key: &str| l.kwarg(c, key).or(args.get(k).copied());
        let (Some(start), Some(stop)) = (get(self, 0, "start"), get(self, 1, "stop")) else {
            return Err(self.err(c, unsupported("`np.linspace` without start and stop")));
        };
        let (start, stop) = (self.elem(start)?, self.elem(stop)?);
        if start.shape().is_some_and(|s| !s.is_empty())
            || stop.shape().is_some_and(|s| !s.is_empty())
        {
            return Err(self.err(c, unsupported("`np.linspace` between arrays")));
        }
        let num = match get(self, 2, "num") {
            Some(e) => self.sym(e)?,
            None => SymExpr::int(50),
        };
        let endpoint = match get(self, 3, "endpoint") {
            None => true,
            Some(Expr::BooleanLiteral(b)) => b.value,
            Some(e) => {
                return Err(self.err(e, unsupported("an `endpoint` that is not True or False")));
            }
        };
        let dtype = match get(self, 5, "dtype") {
            Some(d) => Some(self.dtype_arg(d)?),
            None => None,
        };
        if let Some(e) = get(self, 4, "retstep").or(self.kwarg(c, "axis")) {
            return Err(self.err(e, unsupported("`retstep` and `axis` of `np.linspace`")));
        }
        let t = float_of(promote(start.dtype(), false, stop.dtype(), false));
        let f = |e: Elem| e.cast(t);
        let div = if endpoint { &num - 1 } else { num.clone() };
        let delta = self.binary(c, BinaryOp::Sub, f(stop.clone()), f(start.clone()))?;
        let step = self.binary(c, BinaryOp::Div, delta, f(Elem::Sym(div)))?;
        let k = self.iota(c, num.clone())?;
        let scaled = self.binary(c, BinaryOp::Mul, f(Elem::Ref(k.clone())), step)?;
        let y = self.binary(c, BinaryOp::Add, scaled, f(start.clone()))?;
        // The first element is `start` itself (with `num == 1` and an
        // endpoint the step is 0 / 0, and NumPy's result is `[start]`);
        // the last is `stop` where there are two or more.
        let at = |k: &ArrayRef, v: SymExpr| {
            Elem::Binary(
                BinaryOp::Eq,
                Box::new(Elem::Ref(k.clone())),
                Box::new(Elem::Sym(v)),
                DType::Int64,
            )
        };
        let mut y = Elem::Select(
            Box::new(at(&k, SymExpr::int(0))),
            Box::new(f(start)),
            Box::new(y),
            t,
        );
        if endpoint {
            let last = Elem::Binary(
                BinaryOp::And,
                Box::new(at(&k, &num - 1)),
                Box::new(Elem::Binary(
                    BinaryOp::Gt,
                    Box::new(Elem::Sym(num.clone())),
                    Box::new(Elem::Lit(Literal::i64(1))),
                    DType::Int64,
                )),
                DType::Bool,
            );
            y = Elem::Select(Box::new(last), Box::new(f(stop)), Box::new(y), t);
        }
        let out_t = dtype.unwrap_or(t);
        if out_t.is_integer() {
            y = Elem::Call(Intrinsic::Floor, vec![y], t);
        }
        let out = self.new_transient("linspace_", out_t, &[num]);
        self.assign_region(c, out.clone(), y)?;
        Ok(Elem::Ref(out))
    }

    /// The diagonal `k` of a matrix, as a new 1-D array: the matrix (a
    /// whole container, copied into one if it is a part of another) seen
    /// in row-major order with a stride of one row plus one.
    fn diagonal(&mut self, node: &impl Ranged, x: Elem, k: i64) -> Result<ArrayRef> {
        let src = match &x {
            Elem::Ref(r) => self.whole_source(r),
            _ => None,
        };
        let src = match src {
            Some(s) if s.shape().len() == 2 => s,
            _ => {
                let shape = x.shape().unwrap_or_default();
                let r = self.new_transient("diag_src_", x.dtype(), &shape);
                self.assign_region(node, r.clone(), x)?;
                r
            }
        };
        let shape = src.shape();
        let (n, m) = (shape[0].clone(), shape[1].clone());
        let (start, len) = if k >= 0 {
            (SymExpr::int(k), n.clone().min(&m - k))
        } else {
            (&m * -k, (&n + k).min(m.clone()))
        };
        // An offset diagonal of a matrix too narrow for it is empty.
        let len = if k == 0 {
            len
        } else {
            len.max(SymExpr::int(0))
        };
        let count = &n * &m;
        let mut view = ArrayRef::whole(&src.data, src.dtype, std::slice::from_ref(&count), false);
        view.dims[0] = Dim::Range {
            start,
            step: &m + 1,
            len: len.clone(),
        };
        view.reshaped = Some(Box::new((src.clone(), vec![count])));
        let out = self.new_transient("diag_", src.dtype, &[len]);
        self.assign_region(node, out.clone(), Elem::Ref(view))?;
        Ok(out)
    }

    /// `np.diag(v, k)` of a vector: the square matrix with `v` on its
    /// diagonal `k` and zeros elsewhere.
    fn diag_matrix(&mut self, node: &impl Ranged, v: Elem, k: i64) -> Result<Elem> {
        let n = v.shape().unwrap_or_default()[0].clone();
        let m = &n + k.abs();
        let t = v.dtype();
        let out = self.new_transient("diag_", t, &[m.clone(), m.clone()]);
        let zero = Elem::Cast(t, Box::new(Elem::Lit(Literal::i64(0))));
        self.assign_region(node, out.clone(), zero)?;
        let count = &m * &m;
        let mut view = ArrayRef::whole(&out.data, t, std::slice::from_ref(&count), false);
        view.dims[0] = Dim::Range {
            start: if k >= 0 { SymExpr::int(k) } else { &m * -k },
            step: &m + 1,
            len: n,
        };
        view.reshaped = Some(Box::new((out.clone(), vec![count])));
        self.assign_region(node, view, v)?;
        Ok(Elem::Ref(out))
    }

    /// `np.concatenate`, `np.stack`, `np.hstack`, `np.vstack` and
    /// `np.column_stack` of a tuple or list of arrays: a new array, each
    /// part assigned into its slice.
    fn join(&mut self, c: &ast::ExprCall, name: &str, args: &[&Expr]) -> Result<Elem> {
        let Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) =
            args.first().copied()
        else {
            return Err(self.err(
                c,
                unsupported(format!(
                    "`np.{name}` of other than a tuple or list of arrays"
                )),
            ));
        };
        let mut parts = Vec::new();
        for e in elts {
            parts.push(self.elem(e)?);
        }
        if parts.is_empty() {
            return Err(self.err(
                c,
                ErrorKind::Shape("need at least one array to join".to_owned()),
            ));
        }
        let rank1 = parts
            .iter()
            .all(|p| p.shape().is_some_and(|s| s.len() == 1));
        // Which axis, and whether the parts gain it (stack) or meet along
        // it (concatenate).
        let (stack, axis) = match name {
            "hstack" => (false, Some(if rank1 { 0 } else { 1 })),
            "vstack" => (rank1, Some(0)),
            "column_stack" => (rank1, Some(1)),
            _ => {
                // The axis is 0 unless given; `None` flattens the parts.
                let given = self.kwarg(c, "axis").or(args.get(1).copied());
                let a = match given {
                    None => Some(0),
                    Some(_) => self.axis_kwarg(c, given)?,
                };
                match (name, a) {
                    ("concatenate", None) => {
                        parts = parts
                            .into_iter()
                            .map(|p| self.flat(c, p))
                            .collect::<Result<_>>()?;
                        (false, Some(0))
                    }
                    (_, a) => (name == "stack", Some(a.unwrap_or(0))),
                }
            }
        };
        let first = parts[0].shape().unwrap_or_default();
        if !stack
            && parts
                .iter()
                .any(|p| p.shape().is_some_and(|s| s.is_empty()))
        {
            // NumPy's words. (A slice written with length one, `x[0:1]`, is
            // a scalar in DaCe: see "Where DaCe and NumPy differ".)
            return Err(self.err(
                c,
                ErrorKind::Shape("zero-dimensional arrays cannot be concatenated".to_owned()),
            ));
        }
        let rank = first.len() + usize::from(stack);
        let axis = axis.unwrap_or(0);
        let axis = if axis < 0 { axis + rank as i64 } else { axis };
        let axis = usize::try_from(axis)
            .ok()
            .filter(|a| *a < rank)
            .ok_or_else(|| self.err(c, ErrorKind::Shape(format!("axis {axis} out of range"))))?;
        let dtype = parts
            .iter()
            .map(Elem::dtype)
            .reduce(|a, b| promote(a, false, b, false))
            .unwrap_or(DType::Float64);
        let mut offsets = Vec::new();
        let mut total = SymExpr::int(0);
        for p in &parts {
            let s = p.shape().unwrap_or_default();
            let other: Vec<_> = if stack {
                s.clone()
            } else {
                s.iter()
                    .enumerate()
                    .filter(|(d, _)| *d != axis)
                    .map(|(_, l)| l.clone())
                    .collect()
            };
            let want: Vec<_> = if stack {
                first.clone()
            } else {
                first
                    .iter()
                    .enumerate()
                    .filter(|(d, _)| *d != axis)
                    .map(|(_, l)| l.clone())
                    .collect()
            };
            let differ = other.len() != want.len()
                || other
                    .iter()
                    .zip(&want)
                    .any(|(a, b)| (a - b).as_int().is_some_and(|d| d != 0));
            if differ || (!stack && s.len() != rank) {
                return Err(self.err(
                    c,
                    ErrorKind::Shape(format!(
                        "the arrays joined by `np.{name}` differ in shape outside axis {axis}"
                    )),
                ));
            }
            offsets.push(total.clone());
            total = if stack {
                total + 1
            } else {
                total + s[axis].clone()
            };
        }
        let mut shape = first.clone();
        if stack {
            shape.insert(axis, total);
        } else {
            shape[axis] = total;
        }
        let out = self.new_transient(&format!("{name}_"), dtype, &shape);
        for (p, off) in parts.into_iter().zip(offsets) {
            let mut target = out.clone();
            let d = target.order[axis];
            if stack {
                target.dims[d] = Dim::Index(off);
                target.order.remove(axis);
            } else {
                let len = p.shape().unwrap_or_default()[axis].clone();
                target.dims[d] = Dim::Range {
                    start: off,
                    step: SymExpr::int(1),
                    len,
                };
            }
            self.assign_region(c, target, p)?;
        }
        Ok(Elem::Ref(out))
    }

    /// `np.array` of a (nested) list or tuple literal: its elements in a
    /// new array, the dtype NumPy discovers from them (Python numbers as
    /// the default types) unless `dtype=` is given.
    fn array_literal(&mut self, c: &ast::ExprCall, e: &Expr, dtype: Option<DType>) -> Result<Elem> {
        fn walk<'e>(
            e: &'e Expr,
            depth: usize,
            shape: &mut Vec<usize>,
            out: &mut Vec<&'e Expr>,
        ) -> bool {
            match e {
                Expr::List(ast::ExprList { elts, .. })
                | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                    if shape.len() == depth {
                        shape.push(elts.len());
                    } else if shape.get(depth) != Some(&elts.len()) {
                        return false;
                    }
                    elts.iter().all(|x| walk(x, depth + 1, shape, out))
                }
                leaf => {
                    out.push(leaf);
                    shape.len() == depth
                }
            }
        }
        let (mut shape, mut leaves) = (Vec::new(), Vec::new());
        if !walk(e, 0, &mut shape, &mut leaves) || leaves.len() != shape.iter().product::<usize>() {
            return Err(self.err(
                e,
                ErrorKind::Shape(
                    "a ragged nested sequence (NumPy: \"inhomogeneous shape\")".to_owned(),
                ),
            ));
        }
        let mut values = Vec::new();
        for leaf in &leaves {
            let v = self.elem(leaf)?;
            if v.shape().is_some_and(|s| !s.is_empty()) {
                return Err(self.err(*leaf, unsupported("`np.array` of a list of arrays")));
            }
            values.push(v);
        }
        let t = dtype.unwrap_or_else(|| {
            values
                .iter()
                .map(Elem::dtype)
                .reduce(|a, b| promote(a, false, b, false))
                .unwrap_or(DType::Float64)
        });
        let sym_shape: Vec<SymExpr> = shape.iter().map(|&n| SymExpr::int(n as i64)).collect();
        let out = self.new_transient("array_", t, &sym_shape);
        for (flat, v) in values.into_iter().enumerate() {
            let mut rest = flat;
            let mut at = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                at[d] = rest % shape[d];
                rest /= shape[d];
            }
            let mut target = out.clone();
            for (d, &i) in at.iter().enumerate() {
                target.dims[d] = Dim::Index(SymExpr::int(i as i64));
            }
            target.order.clear();
            self.assign_region(c, target, v)?;
        }
        Ok(Elem::Ref(out))
    }

    /// `np.any`, `np.all` and `np.count_nonzero`: a count of the nonzero
    /// (or zero) elements, compared with zero for the first two.
    pub(super) fn count_test(
        &mut self,
        c: &ast::ExprCall,
        name: &str,
        x: Elem,
        axis: Option<i64>,
        keepdims: bool,
    ) -> Result<Elem> {
        let zero = Elem::Lit(Literal::i64(0));
        let test = if name == "all" {
            BinaryOp::Eq
        } else {
            BinaryOp::Ne
        };
        let t = x.dtype();
        let hit = Elem::Binary(test, Box::new(x), Box::new(zero.clone()), t);
        let counted = Elem::Cast(DType::Int64, Box::new(hit));
        let count = self.reduce(
            c,
            counted,
            Wcr::Sum.into(),
            axis.map(|a| vec![SymExpr::int(a)]),
            keepdims,
            false,
        )?;
        Ok(match name {
            "count_nonzero" => count,
            "any" => Elem::Binary(BinaryOp::Gt, Box::new(count), Box::new(zero), DType::Int64),
            _ => Elem::Binary(BinaryOp::Eq, Box::new(count), Box::new(zero), DType::Int64),
        })
    }

    /// `np.argmax` / `np.argmin`: the extremum, then the least index where
    /// it is found (of a NaN first, as NumPy: the extremum of an array with
    /// a NaN is NaN). Without an axis, the index into the flattened array.
    fn arg_extremum(
        &mut self,
        c: &ast::ExprCall,
        max: bool,
        x: Elem,
        axis: Option<i64>,
        keepdims: bool,
    ) -> Result<Elem> {
        let x = Elem::Ref(self.plain(c, x)?);
        let shape = x.shape().unwrap_or_default();
        if shape.is_empty() {
            return Ok(Elem::Lit(Literal::i64(0)));
        }
        let t = x.dtype();
        if t.is_complex() {
            return Err(self.err(c, unsupported("`argmax`/`argmin` of complex numbers")));
        }
        let w = if max { Wcr::Max } else { Wcr::Min };
        let axes = axis.map(|a| vec![SymExpr::int(a)]);
        let m = self.reduce(c, x.clone(), w.into(), axes.clone(), true, false)?;
        let mut at = Elem::Binary(BinaryOp::Eq, Box::new(x.clone()), Box::new(m), t);
        if t.is_float() {
            let nan = Elem::Call(Intrinsic::IsNan, vec![x.clone()], t);
            at = Elem::Binary(BinaryOp::Or, Box::new(at), Box::new(nan), DType::Bool);
        }
        let index = match axis {
            Some(a) => {
                let rank = shape.len() as i64;
                let a = if a < 0 { a + rank } else { a };
                let a = usize::try_from(a)
                    .ok()
                    .filter(|a| *a < shape.len())
                    .ok_or_else(|| {
                        self.err(c, ErrorKind::Shape(format!("axis {a} out of range")))
                    })?;
                self.axis_index(c, &shape, a)?
            }
            None => {
                // The row-major flat index: sum of index times stride.
                let mut flat = Elem::Lit(Literal::i64(0));
                let mut stride = SymExpr::int(1);
                for d in (0..shape.len()).rev() {
                    let i = self.axis_index(c, &shape, d)?;
                    let term = self.binary(c, BinaryOp::Mul, i, Elem::Sym(stride.clone()))?;
                    flat = self.binary(c, BinaryOp::Add, flat, term)?;
                    stride = stride * shape[d].clone();
                }
                flat
            }
        };
        let none = Elem::Lit(Literal::i64(i64::MAX));
        let candidate = Elem::Select(Box::new(at), Box::new(index), Box::new(none), DType::Int64);
        self.reduce(c, candidate, Wcr::Min.into(), axes, keepdims, false)
    }

    /// `np.isclose`: `|x - y| <= atol + rtol * |y|` where both are finite,
    /// `x == y` where one is not, and (with `equal_nan`) true where both
    /// are NaN; computed in the float type of `y` with `1.0`, as NumPy's.
    fn isclose(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        y: Elem,
        rtol: Elem,
        atol: Elem,
        equal_nan: bool,
    ) -> Result<Elem> {
        let t = float_of(promote(x.dtype(), x.is_weak(), y.dtype(), y.is_weak()));
        if t.is_complex() {
            return Err(self.err(c, unsupported("`np.isclose` of complex numbers")));
        }
        let (x, y) = (x.cast(t), y.cast(t));
        let abs = |e: Elem| Elem::Call(Intrinsic::Abs, vec![e], t);
        let diff = self.binary(c, BinaryOp::Sub, x.clone(), y.clone())?;
        let scaled = self.binary(c, BinaryOp::Mul, rtol, abs(y.clone()))?;
        let bound = self.binary(c, BinaryOp::Add, atol, scaled)?;
        let within = self.binary(c, BinaryOp::Le, abs(diff), bound)?;
        let nan = |e: &Elem| Elem::Call(Intrinsic::IsNan, vec![e.clone()], t);
        let inf = |e: &Elem| {
            Elem::Binary(
                BinaryOp::Eq,
                Box::new(abs(e.clone())),
                Box::new(Elem::Lit(Literal::f64(f64::INFINITY))),
                t,
            )
        };
        let or =
            |a: Elem, b: Elem| Elem::Binary(BinaryOp::Or, Box::new(a), Box::new(b), DType::Bool);
        let not_finite = or(or(nan(&x), inf(&x)), or(nan(&y), inf(&y)));
        let equal = Elem::Binary(BinaryOp::Eq, Box::new(x.clone()), Box::new(y.clone()), t);
        let mut close = Elem::Select(
            Box::new(not_finite),
            Box::new(equal),
            Box::new(within),
            DType::Bool,
        );
        if equal_nan {
            let both = Elem::Binary(
                BinaryOp::And,
                Box::new(nan(&x)),
                Box::new(nan(&y)),
                DType::Bool,
            );
            close = or(close, both);
        }
        if close.shape().is_none() {
            return Err(self.err(c, ErrorKind::Shape("operands do not broadcast".to_owned())));
        }
        Ok(close)
    }

    /// `np.einsum` of a literal subscript string without ellipses or
    /// repeated letters in one operand: a product of two matrices or of a
    /// matrix and a vector is a MatMul node on permuted views; any other
    /// contraction is the broadcast product of the operands summed over
    /// the letters the output lacks.
    fn einsum(&mut self, c: &ast::ExprCall, args: &[&Expr]) -> Result<Elem> {
        let Some(Expr::StringLiteral(spec)) = args.first().copied() else {
            return Err(self.err(
                c,
                unsupported("`np.einsum` without a literal subscript string"),
            ));
        };
        let text: String = spec
            .value
            .to_str()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let bad = |l: &Self, why: &str| {
            l.err(
                spec,
                unsupported(format!(
                    "the einsum subscripts {}: {why}",
                    sdfg_ir::quote(&text)
                )),
            )
        };
        let (inputs, output) = match text.split_once("->") {
            Some((i, o)) => (i.to_owned(), Some(o.to_owned())),
            None => (text.clone(), None),
        };
        let subs: Vec<Vec<char>> = inputs.split(',').map(|s| s.chars().collect()).collect();
        if subs.len() != args.len() - 1 {
            return Err(bad(self, "not one term per operand"));
        }
        if text.contains('.') {
            return Err(bad(self, "ellipses"));
        }
        for s in &subs {
            if s.iter().any(|ch| !ch.is_ascii_alphabetic())
                || (1..s.len()).any(|k| s[..k].contains(&s[k]))
            {
                return Err(bad(
                    self,
                    "a letter repeated in one operand, or not a letter",
                ));
            }
        }
        // Implicit output: the letters used once, in alphabetical order.
        let out: Vec<char> = match output {
            Some(o) => o.chars().collect(),
            None => {
                let mut once: Vec<char> = subs
                    .iter()
                    .flatten()
                    .copied()
                    .filter(|ch| subs.iter().flatten().filter(|x| *x == ch).count() == 1)
                    .collect();
                once.sort_unstable();
                once
            }
        };
        if out.iter().any(|ch| !subs.iter().flatten().any(|x| x == ch))
            || (1..out.len()).any(|k| out[..k].contains(&out[k]))
        {
            return Err(bad(
                self,
                "an output letter that no operand has, or one repeated",
            ));
        }
        let mut letters = out.clone();
        for ch in subs.iter().flatten() {
            if !letters.contains(ch) {
                letters.push(*ch);
            }
        }
        let mut operands = Vec::new();
        for (e, s) in args[1..].iter().zip(&subs) {
            let x = self.elem(e)?;
            if x.shape().map_or(0, |sh| sh.len()) != s.len() {
                return Err(bad(self, "a term whose length is not its operand's rank"));
            }
            operands.push(self.plain(c, x)?);
        }
        // Of booleans, a product is an `and` and a sum an `or`, as NumPy's.
        let boolean = operands.iter().all(|r| r.dtype == DType::Bool);
        // Each letter's length in every operand that has it: einsum
        // broadcasts a length of one against another, which a MatMul does
        // not, so only equal lengths make one.
        let same_lengths = letters.iter().all(|ch| {
            let lens: Vec<SymExpr> = operands
                .iter()
                .zip(&subs)
                .filter_map(|(r, s)| s.iter().position(|x| x == ch).map(|p| r.shape()[p].clone()))
                .collect();
            lens.windows(2).all(|w| w[0] == w[1])
        });
        // A product of two matrices, or of a matrix and a vector.
        if !boolean
            && same_lengths
            && let ([a, b], [sa, sb]) = (&operands[..], &subs[..])
        {
            let shared: Vec<char> = sa.iter().copied().filter(|ch| sb.contains(ch)).collect();
            if let [k] = shared[..]
                && !out.contains(&k)
                && sa.len() + sb.len() - 2 == out.len()
                && (1..=2).contains(&sa.len())
                && (1..=2).contains(&sb.len())
                && sa.len() + sb.len() > 2
            {
                // A's free letter first, the contracted one last; B's
                // contracted letter first.
                let mut a = a.clone();
                if sa.len() == 2 && sa[0] == k {
                    a.order.swap(0, 1);
                }
                let mut b = b.clone();
                if sb.len() == 2 && sb[1] == k {
                    b.order.swap(0, 1);
                }
                let mut natural: Vec<char> = sa.iter().copied().filter(|ch| *ch != k).collect();
                natural.extend(sb.iter().copied().filter(|ch| *ch != k));
                let product = self.matmul(c, Elem::Ref(a), Elem::Ref(b))?;
                return Ok(if natural == out {
                    product
                } else {
                    let Elem::Ref(mut r) = product else {
                        return Ok(product);
                    };
                    r.order.reverse();
                    Elem::Ref(r)
                });
            }
        }
        // The broadcast product over every letter, output letters first.
        let mut product: Option<Elem> = None;
        for (mut r, s) in operands.into_iter().zip(&subs) {
            let own = r.order.clone();
            r.order = letters
                .iter()
                .map(|ch| match s.iter().position(|x| x == ch) {
                    Some(p) => own[p],
                    None => {
                        r.dims.push(Dim::NewAxis);
                        r.dims.len() - 1
                    }
                })
                .collect();
            product = Some(match product {
                None => Elem::Ref(r),
                Some(p) => {
                    let op = if boolean {
                        BinaryOp::And
                    } else {
                        BinaryOp::Mul
                    };
                    self.binary(c, op, p, Elem::Ref(r))?
                }
            });
        }
        let product = product.ok_or_else(|| bad(self, "no operands"))?;
        if product.shape().is_none() {
            return Err(self.err(
                c,
                ErrorKind::Shape("einsum operands do not agree in length".to_owned()),
            ));
        }
        if letters.len() == out.len() {
            return Ok(product);
        }
        let summed = (out.len()..letters.len())
            .map(|a| SymExpr::int(a as i64))
            .collect();
        let w = if boolean { Wcr::BitOr } else { Wcr::Sum };
        self.reduce(c, product, w.into(), Some(summed), false, false)
    }

    /// An accumulation along `axis` (`np.cumsum`, `np.add.accumulate`): a
    /// loop over the axis adding each slice to the previous sum.
    pub(super) fn scan(&mut self, c: &ast::ExprCall, w: Wcr, x: Elem, axis: i64) -> Result<Elem> {
        if !self.map_ctx.is_empty() {
            return Err(self.err(c, unsupported("a scan inside a `dace.map` body")));
        }
        let src = self.plain(c, x)?;
        let shape = src.shape();
        let rank = shape.len() as i64;
        if rank == 0 {
            return Err(self.err(c, ErrorKind::Shape("a scan of a scalar".to_owned())));
        }
        let axis = if axis < 0 { axis + rank } else { axis };
        let axis = usize::try_from(axis)
            .ok()
            .filter(|a| (*a as i64) < rank)
            .ok_or_else(|| self.err(c, ErrorKind::Shape(format!("axis {axis} out of range"))))?;
        let out = self.new_transient("scan_", src.dtype, &shape);
        // The k-th slice along `axis` of a region.
        let slice = |r: &ArrayRef, at: SymExpr| -> ArrayRef {
            let mut r = r.clone();
            let d = r.order.remove(axis);
            if let Dim::Range { start, step, .. } = &r.dims[d] {
                r.dims[d] = Dim::Index(start + &(step * &at));
            }
            r
        };
        self.assign_region(
            c,
            slice(&out, SymExpr::int(0)),
            Elem::Ref(slice(&src, SymExpr::int(0))),
        )?;
        let k = self.fresh("__scan");
        self.declare_symbol(&k);
        let at = SymExpr::symbol(k.clone());
        let body = self.nested(|l| {
            let prev = Elem::Ref(slice(&out, &at - 1));
            let next = l.combine(c, w, prev, Elem::Ref(slice(&src, at.clone())))?;
            l.assign_region(c, slice(&out, at.clone()), next)
        })?;
        let label = format!("scan_l{}_{}", self.line(c), self.fresh(""));
        self.push_block(
            label,
            BlockKind::Loop(LoopBlock::for_range(
                k,
                SymExpr::int(1),
                shape[axis].clone(),
                1,
                body,
            )),
        );
        Ok(Elem::Ref(out))
    }
}

/// A 1-D region seen as axis `axis` of a value of rank `rank` (new axes
/// elsewhere), so that it broadcasts along that axis.
fn along(r: &ArrayRef, rank: usize, axis: usize) -> Elem {
    let range = r.dims[r.order[0]].clone();
    let mut v = r.clone();
    v.dims = (0..rank)
        .map(|d| {
            if d == axis {
                range.clone()
            } else {
                Dim::NewAxis
            }
        })
        .collect();
    v.order = (0..rank).collect();
    Elem::Ref(v)
}

/// The float type a function of real values computes in: the type itself
/// for floats and complex numbers, `float32` for 16-bit integers and
/// `float64` for wider ones and booleans, as NumPy's loops choose.
pub(super) fn float_of(t: DType) -> DType {
    match t {
        DType::Int16 | DType::UInt16 => DType::Float32,
        t if t.is_float() || t.is_complex() => t,
        _ => DType::Float64,
    }
}

/// The float type NumPy's loops compute a function of integer or boolean
/// operands in: the narrowest float that every operand converts to
/// exactly (float16 for booleans and 8-bit integers, float32 for 16-bit
/// ones, float64 for wider ones), Python numbers not counting (NEP 50).
/// `np.arctan2` of an int8 and an int16 array is float32, not the float of
/// their promotion to int16 and not float64. Float16, which the IR lacks,
/// is float64 here, as in DaCe.
pub(super) fn float_of_operands(args: &[Elem]) -> DType {
    let width = args
        .iter()
        .filter(|a| !a.is_weak())
        .map(|a| match a.dtype() {
            DType::Bool | DType::Int8 | DType::UInt8 => 0,
            DType::Int16 | DType::UInt16 => 1,
            _ => 2,
        })
        .max();
    if width == Some(1) {
        DType::Float32
    } else {
        DType::Float64
    }
}

/// The type NumPy's sums and products of `t` accumulate in: the default
/// integer for booleans and narrower integers (unsigned for unsigned ones).
pub(super) fn accumulator(t: DType) -> DType {
    match t {
        DType::Bool | DType::Int8 | DType::Int16 | DType::Int32 => DType::Int64,
        DType::UInt8 | DType::UInt16 | DType::UInt32 => DType::UInt64,
        t => t,
    }
}
