//! DaCe's explicit dataflow constructs: tasklets with memlets
//! (`with dace.tasklet:`, `a << A[i]`, `b >> B(1, lambda x, y: x + y)[j]`),
//! the `@dace.map`, `@dace.mapscope` and `@dace.tasklet` decorators on
//! functions nested in a program, and `dace.reduce` with a lambda.
//!
//! A tasklet lowers to what the implicit style lowers to: an input memlet
//! binds its name to the region (or element) it reads, an output memlet
//! makes an assignment to its name a write of that region, with the
//! memlet's write-conflict resolution where it has one. So a tasklet in a
//! `@dace.map` is one map per statement of its body, exactly as the same
//! body written as a `for ... in dace.map[...]` loop, and the passes fuse
//! them as they fuse those.

use super::*;

/// An output memlet of an explicit tasklet: where an assignment to its
/// name writes, how conflicting writes combine, and whether it was
/// written (a write-conflict resolution combines the connector's one
/// value: a second assignment is refused).
#[derive(Clone, Debug)]
pub(super) struct OutputMemlet {
    target: ArrayRef,
    wcr: Option<Wcr>,
    written: bool,
}

impl<'m> Lowerer<'m> {
    /// Whether `with` is `with dace.tasklet:` (any alias of DaCe).
    pub(super) fn is_tasklet_block(&self, w: &ast::StmtWith) -> bool {
        matches!(&w.items[..], [item] if item.optional_vars.is_none() && self.is_dace_attr(&item.context_expr, "tasklet"))
    }

    /// Whether `e` is `dace.<name>` (or `dace.<name>(...)`).
    fn is_dace_attr(&self, e: &Expr, name: &str) -> bool {
        let e = match e {
            Expr::Call(c) => &*c.func,
            e => e,
        };
        matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == name && self.is_module(&a.value, &self.m.dace_alias))
    }

    /// A function nested in a program under `@dace.map`, `@dace.mapscope`
    /// or `@dace.tasklet`: a map over its parameters' annotated ranges
    /// (`i: _[0:N]`) whose body is explicit (memlets and code), or one
    /// tasklet.
    pub(super) fn decorated_function(&mut self, f: &ast::StmtFunctionDef) -> Result<()> {
        let kind = match &f.decorator_list[..] {
            [d] if self.is_dace_attr(&d.expression, "map") => "map",
            [d] if self.is_dace_attr(&d.expression, "mapscope") => "mapscope",
            [d] if self.is_dace_attr(&d.expression, "tasklet") => "tasklet",
            _ => {
                return Err(self.err(
                    f,
                    unsupported(format!(
                        "the nested function `{}` (only `@dace.map`, `@dace.mapscope` and `@dace.tasklet` functions are lowered inside a program)",
                        f.name.id
                    )),
                ));
            }
        };
        if kind == "tasklet" {
            if !f.parameters.is_empty() {
                return Err(self.err(
                    &*f.parameters,
                    unsupported("a `@dace.tasklet` function with parameters"),
                ));
            }
            return self.explicit_body(&f.body);
        }
        let p = &f.parameters;
        if !p.posonlyargs.is_empty()
            || p.vararg.is_some()
            || p.kwarg.is_some()
            || !p.kwonlyargs.is_empty()
        {
            return Err(self.err(
                &**p,
                unsupported(format!(
                    "the parameters of the `@dace.{kind}` function `{}`",
                    f.name.id
                )),
            ));
        }
        let mut vars = Vec::new();
        let mut items = Vec::new();
        for a in &p.args {
            // `i: _[0:N]` (DaCe's spelling of a map range).
            let range = match a.parameter.annotation.as_deref() {
                Some(Expr::Subscript(s)) if matches!(&*s.value, Expr::Name(n) if n.id.as_str() == "_") => {
                    &*s.slice
                }
                _ => {
                    return Err(self.err(
                        a,
                        unsupported(format!(
                            "the map parameter `{}` without a range annotation (`{}: _[begin:end]`)",
                            a.parameter.name.id, a.parameter.name.id
                        )),
                    ));
                }
            };
            match range {
                Expr::Tuple(t) => {
                    return Err(
                        self.err(t, unsupported("a map parameter with more than one range"))
                    );
                }
                one => {
                    vars.push(a.parameter.name.id.to_string());
                    items.push(one);
                }
            }
        }
        if vars.is_empty() {
            return Err(self.err(
                f,
                unsupported(format!("a `@dace.{kind}` without parameters")),
            ));
        }
        self.map_scope(f, &vars, &items, |l| l.explicit_body(&f.body))
    }

    /// The body of a tasklet, map or map scope in the explicit style: its
    /// memlet declarations bind their names for the rest of the body, its
    /// other statements are lowered as statements. The names are the
    /// body's own: afterwards they mean what they meant before.
    pub(super) fn explicit_body(&mut self, body: &[Stmt]) -> Result<()> {
        let mut bound: Vec<(String, Option<Name>, Option<OutputMemlet>)> = Vec::new();
        let mut result = Ok(());
        for s in body {
            let r = match memlet_declaration(s) {
                Some((name, input, memlet)) => {
                    self.memlet(s, name, input, memlet).map(|(n, out)| {
                        let old = self.names.get(&n).cloned();
                        let old_out = self.tasklet_outputs.get(&n).cloned();
                        match out {
                            Some(o) => {
                                self.names.remove(&n);
                                self.tasklet_outputs.insert(n.clone(), o);
                            }
                            None => {
                                self.tasklet_outputs.remove(&n);
                            }
                        }
                        bound.push((n, old, old_out));
                    })
                }
                None => self.stmt(s),
            };
            if let Err(e) = r {
                result = Err(e);
                break;
            }
        }
        for (n, old, old_out) in bound.into_iter().rev() {
            match old {
                Some(o) => self.names.insert(n.clone(), o),
                None => self.names.remove(&n),
            };
            match old_out {
                Some(o) => self.tasklet_outputs.insert(n, o),
                None => self.tasklet_outputs.remove(&n),
            };
        }
        result
    }

    /// Binds the connector `name` of a memlet declaration: an input reads
    /// its region where the name is used; an output is recorded, so that
    /// assigning the name writes the region. Returns the name and, for an
    /// output, its memlet.
    fn memlet(
        &mut self,
        s: &Stmt,
        name: &str,
        input: bool,
        memlet: &Expr,
    ) -> Result<(String, Option<OutputMemlet>)> {
        // `A`, `A[...]`, `A(n)`, `A(n, wcr)`, `A(n)[...]`, `A(n, wcr)[...]`.
        let (call, slice) = match memlet {
            Expr::Subscript(sub) => match &*sub.value {
                Expr::Call(c) => (Some(c), Some(&*sub.slice)),
                _ => (None, None),
            },
            Expr::Call(c) => (Some(c), None),
            _ => (None, None),
        };
        let region = match call {
            None => self.elem(memlet)?,
            Some(c) => {
                let Expr::Name(_) = &*c.func else {
                    return Err(self.err(
                        c,
                        unsupported("a memlet of something other than a container"),
                    ));
                };
                let Elem::Ref(base) = self.elem(&c.func)? else {
                    return Err(self.err(
                        c,
                        unsupported("a memlet of something other than a container"),
                    ));
                };
                match slice {
                    Some(sl) => self.index(base, sl)?,
                    None => Elem::Ref(base),
                }
            }
        };
        let wcr = match call.and_then(|c| c.arguments.args.get(1)) {
            None => None,
            Some(w) if input => {
                return Err(self.err(
                    w,
                    unsupported("a write-conflict resolution on an input memlet"),
                ));
            }
            Some(w) => Some(self.wcr_lambda(w)?),
        };
        if input {
            self.names.insert(name.to_owned(), Name::Local(region));
            return Ok((name.to_owned(), None));
        }
        let Elem::Ref(target) = region else {
            return Err(self.err(s, unsupported("an output memlet through computed indices")));
        };
        Ok((
            name.to_owned(),
            Some(OutputMemlet {
                target,
                wcr,
                written: false,
            }),
        ))
    }

    /// `name = value` where `name` is an output connector: the write of
    /// its memlet (combining with its write-conflict resolution). The name
    /// then reads the value written. `None` when `name` is no output.
    pub(super) fn write_output(
        &mut self,
        node: &Expr,
        name: &str,
        value: &Elem,
    ) -> Option<Result<()>> {
        let out = self.tasklet_outputs.get(name)?.clone();
        Some((|| {
            if out.wcr.is_some() && out.written {
                return Err(self.err(
                    node,
                    unsupported(format!(
                        "assigning the output `{name}` twice: its write-conflict resolution combines one value per tasklet (compute it in a local, then assign once)"
                    )),
                ));
            }
            let v = value.clone().cast(out.target.dtype);
            match out.wcr {
                Some(w) if !self.map_ctx.is_empty() => {
                    self.write(node, out.target.clone(), None, v, Some(w))?
                }
                Some(w) => {
                    let combined = self.combine(node, w, Elem::Ref(out.target.clone()), v)?;
                    self.write(node, out.target.clone(), None, combined, None)?
                }
                None => self.write(node, out.target.clone(), None, v, None)?,
            }
            if let Some(o) = self.tasklet_outputs.get_mut(name) {
                o.written = true;
            }
            Ok(())
        })())
    }

    /// The write-conflict resolution a lambda of two parameters computes:
    /// `a + b`, `a * b`, `max(a, b)`, `min(a, b)`, `a & b`, `a | b`,
    /// `a ^ b` (either order).
    pub(super) fn wcr_lambda(&self, e: &Expr) -> Result<Wcr> {
        self.lambda_op(e)?.ok_or_else(|| {
            self.err(
                e,
                unsupported(format!(
                    "the write-conflict resolution {} (a sum, product, min, max, or bitwise and, or, xor of its two parameters)",
                    self.m.source.quoted(e.range())
                )),
            )
        })
    }

    /// What a two-parameter lambda computes, if it is one the IR's
    /// reductions know; `Err` if `e` is no such lambda.
    fn lambda_op(&self, e: &Expr) -> Result<Option<Wcr>> {
        let Expr::Lambda(l) = e else {
            return Err(self.err(e, unsupported("a reduction function that is not a lambda")));
        };
        let names: Vec<&str> = l
            .parameters
            .as_deref()
            .map(|p| {
                p.args
                    .iter()
                    .map(|a| a.parameter.name.id.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let [a, b] = names[..] else {
            return Ok(None);
        };
        let is = |x: &Expr, n: &str| matches!(x, Expr::Name(v) if v.id.as_str() == n);
        let pair = |x: &Expr, y: &Expr| (is(x, a) && is(y, b)) || (is(x, b) && is(y, a));
        Ok(match &*l.body {
            Expr::BinOp(o) if pair(&o.left, &o.right) => match o.op {
                ast::Operator::Add => Some(Wcr::Sum),
                ast::Operator::Mult => Some(Wcr::Product),
                ast::Operator::BitAnd => Some(Wcr::BitAnd),
                ast::Operator::BitOr => Some(Wcr::BitOr),
                ast::Operator::BitXor => Some(Wcr::BitXor),
                _ => None,
            },
            Expr::Call(c) => match (&*c.func, &c.arguments.args[..]) {
                (Expr::Name(f), [x, y]) if pair(x, y) && c.arguments.keywords.is_empty() => {
                    match f.id.as_str() {
                        "max" => Some(Wcr::Max),
                        "min" => Some(Wcr::Min),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        })
    }

    /// `dace.reduce(lambda a, b: ..., A, out=None, axis=None,
    /// identity=None)`: a Reduce node of the lambda's operator (`and` /
    /// `or` of booleans are `np.all` / `np.any`), starting from
    /// `identity` where given; with an output array, written into it.
    pub(super) fn dace_reduce(&mut self, c: &ast::ExprCall) -> Result<Elem> {
        let args = &c.arguments.args;
        let (Some(f), Some(x)) = (args.first(), args.get(1)) else {
            return Err(self.err(
                c,
                unsupported("`dace.reduce` without a function and an array"),
            ));
        };
        let out = self.kwarg(c, "out_array").or(args.get(2));
        let axis = self.axis_list(self.kwarg(c, "axis").or(args.get(3)))?;
        let identity = self.kwarg(c, "identity").or(args.get(4));
        let value = self.elem(x)?;
        // `and` / `or` of truth values are the bitwise `&` / `|` of booleans.
        let (op, value) = match f {
            Expr::Lambda(l) => match &*l.body {
                Expr::BoolOp(b) if b.values.len() == 2 => {
                    let op = if b.op == ast::BoolOp::And {
                        Wcr::BitAnd
                    } else {
                        Wcr::BitOr
                    };
                    (op, value.cast(DType::Bool))
                }
                _ => (self.wcr_lambda(f)?, value),
            },
            _ => (self.wcr_lambda(f)?, value),
        };
        let initial = match identity {
            None | Some(Expr::NoneLiteral(_)) => None,
            Some(e) => match self.elem(e)? {
                Elem::Lit(l) => Some(cast_literal(l, value.dtype())),
                _ => {
                    return Err(self.err(e, unsupported("an `identity` that is not a number")));
                }
            },
        };
        let result = self.reduce(
            c,
            value,
            super::library::Fold { op, initial },
            axis,
            false,
            false,
        )?;
        match out {
            None => Ok(result),
            Some(o) => {
                let (target, None) = self.write_target(o)? else {
                    return Err(self.err(o, unsupported("an indirect output of `dace.reduce`")));
                };
                self.assign_region(c, target.clone(), result)?;
                Ok(Elem::Ref(target))
            }
        }
    }
}

/// `name << memlet` (an input) or `name >> memlet` (an output), if `s` is
/// one.
fn memlet_declaration(s: &Stmt) -> Option<(&str, bool, &Expr)> {
    let Stmt::Expr(e) = s else {
        return None;
    };
    let Expr::BinOp(b) = &*e.value else {
        return None;
    };
    let Expr::Name(n) = &*b.left else {
        return None;
    };
    match b.op {
        ast::Operator::LShift => Some((n.id.as_str(), true, &b.right)),
        ast::Operator::RShift => Some((n.id.as_str(), false, &b.right)),
        _ => None,
    }
}

/// A numeric literal as a constant of `dtype` (a reduction's identity).
fn cast_literal(l: Literal, dtype: DType) -> Literal {
    match l {
        Literal::Int { value, .. } if dtype.is_float() => Literal::Float {
            value: value as f64,
            dtype,
        },
        Literal::Float { value, .. } if dtype.is_float() => Literal::Float { value, dtype },
        Literal::Int { value, .. } if dtype.is_signed_integer() => Literal::Int { value, dtype },
        other => other,
    }
}
