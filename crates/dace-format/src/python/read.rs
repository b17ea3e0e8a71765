//! Reading DaCe Python tasklet code into the IR's typed statements (see
//! the parent module).

use ruff_python_ast::{self as ast, Expr as PyExpr, Stmt as PyStmt};
use ruff_text_size::Ranged;
use sdfg_ir::code::{BinaryOp, Expr, Intrinsic, Stmt, UnaryOp};
use sdfg_ir::{DType, Literal};
use std::collections::{BTreeMap, BTreeSet};

use super::PythonError;

/// How deeply the code read may nest, statements and expressions together:
/// far beyond what DaCe writes, little enough for the recursive reader on
/// any stack, and for the IR's JSON (`Sdfg::from_json` takes 512 levels;
/// a level of code takes two or three). A chained comparison or boolean
/// operation of `n` operands nests `n - 1` levels in the IR (`a < b < c` is
/// `a < b and b < c`), and an `elif` one level more than its `if`.
const MAX_DEPTH: usize = 128;

/// The connectors a tasklet's code sees, typed by the caller from the
/// containers of their memlets: `(dtype, rank)`, the rank being the number
/// of indices the connector takes when the code indexes it.
#[derive(Clone, Debug, Default)]
pub struct TaskletConnectors {
    /// Input connectors.
    pub inputs: BTreeMap<String, (DType, usize)>,
    /// Output connectors.
    pub outputs: BTreeMap<String, (DType, usize)>,
    /// The outputs whose memlets are dynamic: DaCe writes them only where
    /// the code assigns them.
    pub dynamic: BTreeSet<String>,
}

/// The code read: its statements, and the connectors the code indexes
/// (pointers, in the IR's terms).
pub type ReadTasklet = (Vec<Stmt>, BTreeSet<String>);

/// Reads DaCe Python tasklet code. Names that are neither connectors nor
/// locals are symbols (`int64`).
pub fn read_tasklet(code: &str, conns: &TaskletConnectors) -> Result<ReadTasklet, PythonError> {
    // The parser's tree, and what the reader builds from it, are walked
    // recursively: text nested deeper than any walk can take is refused
    // before anything walks it.
    let parsed = sdfg_python_syntax::parse_module(code).map_err(|e| {
        let line = code[..e.offset().min(code.len())].matches('\n').count() + 1;
        match e {
            sdfg_python_syntax::SyntaxError::Invalid { message, .. } => {
                PythonError::Syntax(format!("{message} (line {line})"))
            }
            too_deep => PythonError::Construct {
                line,
                what: format!("code {too_deep}"),
            },
        }
    })?;
    let body = parsed.into_syntax().body;
    let mut indexed = BTreeSet::new();
    for s in &body {
        indexed_names(s, &mut indexed);
    }
    let mut r = Reader {
        code,
        conns,
        indexed: &indexed,
        locals: vec![BTreeMap::new()],
        depth: 0,
    };
    let mut stmts = r.block(&body)?;
    let mut pointers: BTreeSet<String> = indexed
        .into_iter()
        .filter(|n| conns.inputs.contains_key(n) || conns.outputs.contains_key(n))
        .collect();
    // An output the IR writes after the code whatever it did, DaCe only
    // where the code assigns it (a dynamic memlet): where some path leaves
    // it unassigned, it is stored through as a pointer of rank 0 instead,
    // which writes exactly where DaCe does.
    for out in &conns.dynamic {
        if !pointers.contains(out) && !assigns(&stmts, out) {
            store_through(&mut stmts, out);
            pointers.insert(out.clone());
        }
    }
    // DaCe's output connector is a C++ local the code may read back after
    // assigning it (GT4Py's `out = a; out = out + b`); the IR's output is
    // written only: such code works on a local of its own, written to the
    // output at the end.
    let mut read = Vec::new();
    sdfg_ir::code::body_names(&stmts, &mut read);
    for (out, &(dtype, _)) in &conns.outputs {
        if pointers.contains(out) || !read.contains(out) {
            continue;
        }
        let local = format!("__{out}_value");
        shadow(&mut stmts, out, &local);
        sdfg_ir::code::rename_vars(&mut stmts, &BTreeMap::from([(out.clone(), local.clone())]));
        stmts.insert(
            0,
            Stmt::Let {
                name: local.clone(),
                dtype,
                value: convert(Expr::i64(0), DType::Int64, dtype),
            },
        );
        stmts.push(Stmt::assign(out.clone(), Expr::var(local)));
    }
    Ok((stmts, pointers))
}

/// Turns the assignments to `name` into assignments to `local`.
fn shadow(body: &mut [Stmt], name: &str, local: &str) {
    for s in body {
        match s {
            Stmt::Assign { target, .. } if target == name => *target = local.to_owned(),
            Stmt::If {
                then, otherwise, ..
            } => {
                shadow(then, name, local);
                shadow(otherwise, name, local);
            }
            _ => {}
        }
    }
}

/// Whether every path through `body` assigns `name`.
fn assigns(body: &[Stmt], name: &str) -> bool {
    body.iter().any(|s| match s {
        Stmt::Assign { target, .. } => target == name,
        Stmt::If {
            then, otherwise, ..
        } => assigns(then, name) && assigns(otherwise, name),
        _ => false,
    })
}

/// Turns the assignments to the output `name` into stores through it.
fn store_through(body: &mut [Stmt], name: &str) {
    for s in body {
        match s {
            Stmt::Assign { target, value } if target == name => {
                *s = Stmt::Store {
                    conn: name.to_owned(),
                    index: Vec::new(),
                    value: value.clone(),
                };
            }
            Stmt::If {
                then, otherwise, ..
            } => {
                store_through(then, name);
                store_through(otherwise, name);
            }
            _ => {}
        }
    }
}

/// The names the code subscripts (`a[i]`), reading or storing.
fn indexed_names(s: &PyStmt, out: &mut BTreeSet<String>) {
    fn expr(e: &PyExpr, out: &mut BTreeSet<String>) {
        if let PyExpr::Subscript(sub) = e
            && let PyExpr::Name(n) = &*sub.value
        {
            out.insert(n.id.to_string());
        }
        // Every sub-expression, whatever its kind.
        let mut children = Vec::new();
        match e {
            PyExpr::BoolOp(b) => children.extend(b.values.iter()),
            PyExpr::BinOp(b) => children.extend([&*b.left, &*b.right]),
            PyExpr::UnaryOp(u) => children.push(&*u.operand),
            PyExpr::If(i) => children.extend([&*i.test, &*i.body, &*i.orelse]),
            PyExpr::Compare(c) => {
                children.push(&*c.left);
                children.extend(c.comparators.iter());
            }
            PyExpr::Call(c) => children.extend(c.arguments.args.iter()),
            PyExpr::Subscript(s) => children.extend([&*s.value, &*s.slice]),
            PyExpr::Tuple(t) => children.extend(t.elts.iter()),
            _ => {}
        }
        for c in children {
            expr(c, out);
        }
    }
    match s {
        PyStmt::Assign(a) => {
            a.targets.iter().for_each(|t| expr(t, out));
            expr(&a.value, out);
        }
        PyStmt::AnnAssign(a) => {
            expr(&a.target, out);
            if let Some(v) = &a.value {
                expr(v, out);
            }
        }
        PyStmt::AugAssign(a) => {
            expr(&a.target, out);
            expr(&a.value, out);
        }
        PyStmt::If(i) => {
            expr(&i.test, out);
            i.body.iter().for_each(|s| indexed_names(s, out));
            for c in &i.elif_else_clauses {
                if let Some(t) = &c.test {
                    expr(t, out);
                }
                c.body.iter().for_each(|s| indexed_names(s, out));
            }
        }
        PyStmt::Expr(e) => expr(&e.value, out),
        _ => {}
    }
}

struct Reader<'a> {
    code: &'a str,
    conns: &'a TaskletConnectors,
    indexed: &'a BTreeSet<String>,
    /// Locals by block, innermost last.
    locals: Vec<BTreeMap<String, DType>>,
    depth: usize,
}

/// The rank of a type in C++'s usual arithmetic conversions, as DaCe's
/// unparsed tasklets convert mixed operands.
fn conversion_rank(t: DType) -> u8 {
    match t {
        DType::Bool => 0,
        DType::Int8 => 1,
        DType::UInt8 => 2,
        DType::Int16 => 3,
        DType::UInt16 => 4,
        DType::Int32 => 5,
        DType::UInt32 => 6,
        DType::Int64 => 7,
        DType::UInt64 => 8,
        DType::Float32 => 9,
        DType::Float64 => 10,
        DType::Complex64 => 11,
        DType::Complex128 => 12,
    }
}

/// The type two operands of different types are converted to.
fn common(a: DType, b: DType) -> DType {
    if a == b {
        return a;
    }
    let t = if conversion_rank(a) >= conversion_rank(b) {
        a
    } else {
        b
    };
    // Integers narrower than `int` are promoted to it.
    if t.is_integer() && t.size_bytes() < 4 || t == DType::Bool {
        DType::Int32
    } else if t == DType::Complex64 && (a == DType::Float64 || b == DType::Float64) {
        DType::Complex128
    } else {
        t
    }
}

/// `value` as type `to`: itself where it has that type, a literal of that
/// type where it is a literal that converts exactly, else a cast.
fn convert(value: Expr, from: DType, to: DType) -> Expr {
    if from == to {
        return value;
    }
    if let Expr::Lit(l) = &value
        && let Some(l) = literal_as(l, to)
    {
        return Expr::Lit(l);
    }
    Expr::cast(to, value)
}

/// A literal converted exactly to `to`, if it can be.
fn literal_as(l: &Literal, to: DType) -> Option<Literal> {
    let (int, float): (Option<i128>, Option<f64>) = match *l {
        Literal::Bool(b) => (Some(i128::from(b)), None),
        Literal::Int { value, .. } => (Some(i128::from(value)), None),
        Literal::UInt { value, .. } => (Some(i128::from(value)), None),
        Literal::Float { value, .. } => (None, Some(value)),
        Literal::Complex { .. } => return None,
    };
    Some(match (int, float) {
        (Some(v), _) if to.is_signed_integer() => Literal::Int {
            value: i64::try_from(v).ok().filter(|v| fits(*v as i128, to))?,
            dtype: to,
        },
        (Some(v), _) if to.is_unsigned_integer() => Literal::UInt {
            value: u64::try_from(v).ok().filter(|v| fits(*v as i128, to))?,
            dtype: to,
        },
        (Some(v), _) if to.is_float() => Literal::Float {
            value: v as f64,
            dtype: to,
        },
        (Some(v), _) if to == DType::Bool && (v == 0 || v == 1) => Literal::Bool(v == 1),
        // The IR's float literals hold an `f64` whatever their type, as
        // the writer writes them.
        (None, Some(v)) if to.is_float() => Literal::Float {
            value: v,
            dtype: to,
        },
        _ => return None,
    })
}

fn fits(v: i128, t: DType) -> bool {
    let bits = t.size_bytes() * 8;
    if t.is_signed_integer() {
        let half = 1i128 << (bits - 1);
        (-half..half).contains(&v)
    } else {
        (0..(1i128 << bits)).contains(&v)
    }
}

/// The value of an integer literal that fits in 64 bits.
fn int_literal(e: &PyExpr) -> Option<i64> {
    match e {
        PyExpr::NumberLiteral(n) => match &n.value {
            ast::Number::Int(i) => i.as_i64(),
            _ => None,
        },
        _ => None,
    }
}

/// The IR's type called `dace.NAME` (or `NAME`) in tasklet code, where a
/// cast or an annotation names it.
///
/// DaCe unparses tasklet code to C++ name for name (`cppunparse`), so a
/// bare name means its C++ type: `float(x)` is C++'s 32-bit `float`,
/// `int(x)` a 32-bit `int`, `double(x)` and `int64_t(x)` what they say
/// (GT4Py writes `double(4.0)`). `dace.NAME` is DaCe's type of that name.
fn dtype_named(name: &str) -> Option<DType> {
    match name {
        "bool_" | "bool" => Some(DType::Bool),
        "double" => Some(DType::Float64),
        "float" => Some(DType::Float32),
        "int" => Some(DType::Int32),
        "long" => Some(DType::Int64),
        "complex" => Some(DType::Complex128),
        other => match other.strip_suffix("_t") {
            Some(fixed) if fixed.starts_with("int") || fixed.starts_with("uint") => {
                DType::from_name(fixed)
            }
            Some(_) => None,
            None => DType::from_name(other),
        },
    }
}

impl Reader<'_> {
    /// The names the code sees, as the IR's type checker binds them.
    fn bindings(&self) -> BTreeMap<String, sdfg_ir::code::Binding> {
        use sdfg_ir::code::Binding;
        let mut b = BTreeMap::new();
        for (n, &(dtype, rank)) in &self.conns.inputs {
            let binding = if self.indexed.contains(n) {
                Binding::PointerIn { dtype, rank }
            } else {
                Binding::Value(dtype)
            };
            b.insert(n.clone(), binding);
        }
        for (n, &(dtype, rank)) in &self.conns.outputs {
            // An output the code reads back works on a local of its own
            // ([`read_tasklet`]): a value to the type checker.
            let binding = if self.indexed.contains(n) {
                Binding::PointerOut { dtype, rank }
            } else {
                Binding::Value(dtype)
            };
            b.insert(n.clone(), binding);
        }
        for scope in &self.locals {
            for (n, &t) in scope {
                b.insert(n.clone(), Binding::Value(t));
            }
        }
        b
    }

    fn line(&self, node: &impl Ranged) -> usize {
        let at = node.range().start().to_usize().min(self.code.len());
        self.code[..at].matches('\n').count() + 1
    }

    fn refuse(&self, node: &impl Ranged, what: impl Into<String>) -> PythonError {
        PythonError::Construct {
            line: self.line(node),
            what: what.into(),
        }
    }

    fn local(&self, name: &str) -> Option<DType> {
        self.locals.iter().rev().find_map(|b| b.get(name).copied())
    }

    fn block(&mut self, body: &[PyStmt]) -> Result<Vec<Stmt>, PythonError> {
        self.locals.push(BTreeMap::new());
        let mut out = Vec::new();
        for s in body {
            self.stmt(s, &mut out)?;
        }
        self.locals.pop();
        Ok(out)
    }

    fn stmt(&mut self, s: &PyStmt, out: &mut Vec<Stmt>) -> Result<(), PythonError> {
        match s {
            PyStmt::Pass(_) => {}
            PyStmt::AnnAssign(a) => {
                let PyExpr::Name(n) = &*a.target else {
                    return Err(self.refuse(a, "an annotated assignment to anything but a name"));
                };
                let dtype = self.type_expr(&a.annotation)?;
                // A declaration without a value (GT4Py's `v: dace.float64`)
                // is C++'s uninitialized local, which no correct program
                // reads before assigning it: zero is as good as any value.
                let (value, t) = match &a.value {
                    Some(v) => self.expr(v)?,
                    None => (Expr::i64(0), DType::Int64),
                };
                let name = n.id.to_string();
                if let Some(scope) = self.locals.last_mut() {
                    scope.insert(name.clone(), dtype);
                }
                out.push(Stmt::Let {
                    name,
                    dtype,
                    value: convert(value, t, dtype),
                });
            }
            PyStmt::Assign(a) => {
                let [target] = &a.targets[..] else {
                    return Err(self.refuse(a, "an assignment to several targets"));
                };
                let (value, t) = self.expr(&a.value)?;
                self.assign(a, target, value, t, out)?;
            }
            PyStmt::AugAssign(a) => {
                let op = binary_op(a.op)
                    .ok_or_else(|| self.refuse(a, format!("the operator `{}=`", a.op.as_str())))?;
                let (current, ct) = self.expr(&a.target)?;
                let (value, vt) = self.expr(&a.value)?;
                let (value, t) = self.binary(a, op, (current, ct), (value, vt))?;
                self.assign(a, &a.target, value, t, out)?;
            }
            PyStmt::If(i) => {
                let (cond, then) =
                    self.deeper(i, 1, |r| Ok((r.condition(&i.test)?, r.block(&i.body)?)))?;
                let mut otherwise = Vec::new();
                // `elif` chains nest, innermost last: the `k`th clause is
                // inside `k + 1` conditionals.
                for (k, clause) in i.elif_else_clauses.iter().enumerate().rev() {
                    let levels = k + 1 + usize::from(clause.test.is_some());
                    let (test, body) = self.deeper(clause, levels, |r| {
                        let test = clause.test.as_ref().map(|t| r.condition(t)).transpose()?;
                        Ok((test, r.block(&clause.body)?))
                    })?;
                    otherwise = match test {
                        None => body,
                        Some(cond) => vec![Stmt::If {
                            cond,
                            then: body,
                            otherwise,
                        }],
                    };
                }
                out.push(Stmt::If {
                    cond,
                    then,
                    otherwise,
                });
            }
            other => return Err(self.refuse(other, statement_name(other))),
        }
        Ok(())
    }

    fn assign(
        &mut self,
        at: &impl Ranged,
        target: &PyExpr,
        value: Expr,
        t: DType,
        out: &mut Vec<Stmt>,
    ) -> Result<(), PythonError> {
        match target {
            PyExpr::Name(n) => {
                let name = n.id.to_string();
                if let Some(dt) = self.local(&name) {
                    out.push(Stmt::assign(name, convert(value, t, dt)));
                } else if let Some(&(dt, _)) = self.conns.outputs.get(&name) {
                    out.push(Stmt::assign(name, convert(value, t, dt)));
                } else if self.conns.inputs.contains_key(&name) {
                    return Err(self.refuse(at, format!("an assignment to the input `{name}`")));
                } else {
                    // A new local, typed by its value (DaCe's own code).
                    if let Some(scope) = self.locals.last_mut() {
                        scope.insert(name.clone(), t);
                    }
                    out.push(Stmt::Let {
                        name,
                        dtype: t,
                        value,
                    });
                }
            }
            PyExpr::Subscript(sub) => {
                let PyExpr::Name(n) = &*sub.value else {
                    return Err(self.refuse(at, "a store into anything but a connector"));
                };
                let conn = n.id.to_string();
                let Some(&(dt, _)) = self.conns.outputs.get(&conn) else {
                    return Err(self.refuse(at, format!("a store into `{conn}`, not an output")));
                };
                let index = self.indices(&sub.slice)?;
                out.push(Stmt::Store {
                    conn,
                    index,
                    value: convert(value, t, dt),
                });
            }
            other => return Err(self.refuse(other, "an assignment to this target")),
        }
        Ok(())
    }

    fn type_expr(&self, e: &PyExpr) -> Result<DType, PythonError> {
        let name = match e {
            PyExpr::Attribute(a) if matches!(&*a.value, PyExpr::Name(n) if n.id.as_str() == "dace") => {
                a.attr.id.as_str()
            }
            PyExpr::Name(n) => n.id.as_str(),
            _ => "",
        };
        dtype_named(name).ok_or_else(|| self.refuse(e, "this type annotation"))
    }

    fn condition(&mut self, e: &PyExpr) -> Result<Expr, PythonError> {
        let (c, t) = self.expr(e)?;
        Ok(truth(c, t))
    }

    fn indices(&mut self, slice: &PyExpr) -> Result<Vec<Expr>, PythonError> {
        let items: Vec<&PyExpr> = match slice {
            PyExpr::Tuple(t) => t.elts.iter().collect(),
            one => vec![one],
        };
        items
            .into_iter()
            .map(|i| {
                let (e, t) = self.expr(i)?;
                if !t.is_integer() {
                    return Err(self.refuse(i, format!("an index of type {t}")));
                }
                Ok(e)
            })
            .collect()
    }

    /// Runs `f` `levels` deeper, or refuses `at` past [`MAX_DEPTH`].
    fn deeper<T>(
        &mut self,
        at: &impl Ranged,
        levels: usize,
        f: impl FnOnce(&mut Self) -> Result<T, PythonError>,
    ) -> Result<T, PythonError> {
        if self.depth + levels > MAX_DEPTH {
            return Err(self.refuse(at, format!("code nested more than {MAX_DEPTH} levels")));
        }
        self.depth += levels;
        let r = f(self);
        self.depth -= levels;
        r
    }

    fn expr(&mut self, e: &PyExpr) -> Result<(Expr, DType), PythonError> {
        // The levels the IR's expression takes here (see [`MAX_DEPTH`]).
        let levels = match e {
            PyExpr::Compare(c) => c.comparators.len(),
            PyExpr::BoolOp(b) => b.values.len().saturating_sub(1),
            _ => 1,
        };
        self.deeper(e, levels.max(1), |r| r.expr_inner(e))
    }

    fn expr_inner(&mut self, e: &PyExpr) -> Result<(Expr, DType), PythonError> {
        Ok(match e {
            PyExpr::Name(n) => {
                let name = n.id.as_str();
                if let Some(t) = self.local(name) {
                    (Expr::var(name), t)
                } else if let Some(&(t, _)) = self.conns.inputs.get(name) {
                    if self.indexed.contains(name) {
                        return Err(
                            self.refuse(e, format!("the pointer `{name}` without an index"))
                        );
                    }
                    (Expr::var(name), t)
                } else if let Some(&(t, _)) = self.conns.outputs.get(name) {
                    // An output read after it is assigned (DaCe's copies).
                    (Expr::var(name), t)
                } else {
                    match name {
                        "inf" => (Expr::f64(f64::INFINITY), DType::Float64),
                        "nan" => (Expr::f64(f64::NAN), DType::Float64),
                        "True" => (Expr::Lit(Literal::Bool(true)), DType::Bool),
                        "False" => (Expr::Lit(Literal::Bool(false)), DType::Bool),
                        _ => (Expr::var(name), DType::Int64),
                    }
                }
            }
            PyExpr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => {
                    let v = i
                        .as_i64()
                        .ok_or_else(|| self.refuse(e, "an integer that does not fit in 64 bits"))?;
                    (Expr::i64(v), DType::Int64)
                }
                ast::Number::Float(f) => (Expr::f64(*f), DType::Float64),
                ast::Number::Complex { real, imag } => (
                    Expr::Lit(Literal::Complex {
                        re: *real,
                        im: *imag,
                        dtype: DType::Complex128,
                    }),
                    DType::Complex128,
                ),
            },
            PyExpr::BooleanLiteral(b) => (Expr::Lit(Literal::Bool(b.value)), DType::Bool),
            PyExpr::UnaryOp(u) => {
                let (x, t) = self.expr(&u.operand)?;
                match u.op {
                    ast::UnaryOp::UAdd => (x, t),
                    ast::UnaryOp::Not => (Expr::unary(UnaryOp::Not, truth(x, t)), DType::Bool),
                    ast::UnaryOp::Invert if t == DType::Bool => {
                        (Expr::unary(UnaryOp::Not, x), DType::Bool)
                    }
                    ast::UnaryOp::Invert => (Expr::unary(UnaryOp::BitNot, x), t),
                    ast::UnaryOp::USub => {
                        // `-3` (no space) is the literal; `- x` the negation.
                        let adjacent = u.operand.range().start().to_usize()
                            == u.range().start().to_usize() + 1;
                        match (&x, adjacent) {
                            (Expr::Lit(l), true) => match negated(l) {
                                Some(n) => (Expr::Lit(n), t),
                                None => (Expr::unary(UnaryOp::Neg, x), t),
                            },
                            _ => (Expr::unary(UnaryOp::Neg, x), t),
                        }
                    }
                }
            }
            PyExpr::BinOp(b) => {
                // The writer's spelling of the smallest int64, recognized by
                // its syntax: reading the operands here as well as below
                // would read a chain of subtractions in time exponential in
                // its length.
                if b.op == ast::Operator::Sub
                    && let PyExpr::UnaryOp(minus) = &*b.left
                    && minus.op == ast::UnaryOp::USub
                    && int_literal(&minus.operand) == Some(9223372036854775807)
                    && int_literal(&b.right) == Some(1)
                {
                    return Ok((Expr::i64(i64::MIN), DType::Int64));
                }
                let op = binary_op(b.op)
                    .ok_or_else(|| self.refuse(b, format!("the operator `{}`", b.op.as_str())))?;
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                self.binary(b, op, l, r)?
            }
            PyExpr::Compare(c) => {
                let mut left = self.expr(&c.left)?;
                let mut parts = Vec::new();
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let op = match op {
                        ast::CmpOp::Eq => BinaryOp::Eq,
                        ast::CmpOp::NotEq => BinaryOp::Ne,
                        ast::CmpOp::Lt => BinaryOp::Lt,
                        ast::CmpOp::LtE => BinaryOp::Le,
                        ast::CmpOp::Gt => BinaryOp::Gt,
                        ast::CmpOp::GtE => BinaryOp::Ge,
                        other => {
                            return Err(
                                self.refuse(c, format!("the comparison `{}`", other.as_str()))
                            );
                        }
                    };
                    let right = self.expr(right)?;
                    let (cmp, _) = self.binary(c, op, left, right.clone())?;
                    parts.push(cmp);
                    left = right;
                }
                let first = parts.remove(0);
                let all = parts
                    .into_iter()
                    .fold(first, |acc, p| Expr::binary(BinaryOp::And, acc, p));
                (all, DType::Bool)
            }
            PyExpr::BoolOp(b) => {
                let op = if b.op == ast::BoolOp::And {
                    BinaryOp::And
                } else {
                    BinaryOp::Or
                };
                let mut values = Vec::new();
                for v in &b.values {
                    let (x, t) = self.expr(v)?;
                    values.push(truth(x, t));
                }
                let first = values.remove(0);
                (
                    values
                        .into_iter()
                        .fold(first, |acc, v| Expr::binary(op, acc, v)),
                    DType::Bool,
                )
            }
            PyExpr::If(i) => {
                let cond = self.condition(&i.test)?;
                let (a, at) = self.expr(&i.body)?;
                let (b, bt) = self.expr(&i.orelse)?;
                let t = common(at, bt);
                let (a, b) = (convert(a, at, t), convert(b, bt, t));
                if let Some(m) = nan_min_max(&cond, &a, &b) {
                    return Ok((m, t));
                }
                (Expr::select(cond, a, b), t)
            }
            PyExpr::Subscript(s) => {
                let PyExpr::Name(n) = &*s.value else {
                    return Err(self.refuse(s, "indexing anything but a connector"));
                };
                let conn = n.id.to_string();
                let Some(&(t, _)) = self.conns.inputs.get(&conn) else {
                    return Err(self.refuse(s, format!("indexing `{conn}`, not an input")));
                };
                let index = self.indices(&s.slice)?;
                (Expr::load(conn, index), t)
            }
            PyExpr::Call(c) => self.call(c)?,
            // The constants of Python's `math` and NumPy (gt4py.next's
            // `math.nan` for a missing neighbour).
            PyExpr::Attribute(a)
                if matches!(&*a.value, PyExpr::Name(m) if matches!(m.id.as_str(), "math" | "np" | "numpy" | "dace"))
                    && matches!(a.attr.id.as_str(), "nan" | "inf" | "pi" | "e") =>
            {
                let v = match a.attr.id.as_str() {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "pi" => std::f64::consts::PI,
                    _ => std::f64::consts::E,
                };
                (Expr::f64(v), DType::Float64)
            }
            other => return Err(self.refuse(other, expression_name(other))),
        })
    }

    fn binary(
        &self,
        at: &impl Ranged,
        op: BinaryOp,
        (l, lt): (Expr, DType),
        (r, rt): (Expr, DType),
    ) -> Result<(Expr, DType), PythonError> {
        let t = common(lt, rt);
        if !op.is_defined_on(t) {
            return Err(self.refuse(at, format!("`{}` on {t} operands", op.symbol())));
        }
        let (l, r) = (convert(l, lt, t), convert(r, rt, t));
        let result = if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) {
            DType::Bool
        } else {
            t
        };
        Ok((Expr::binary(op, l, r), result))
    }

    fn call(&mut self, c: &ast::ExprCall) -> Result<(Expr, DType), PythonError> {
        if !c.arguments.keywords.is_empty() {
            return Err(self.refuse(c, "a call with keyword arguments"));
        }
        let name = match &*c.func {
            PyExpr::Name(n) => n.id.to_string(),
            PyExpr::Attribute(a) => match &*a.value {
                PyExpr::Name(m) if matches!(m.id.as_str(), "dace" | "math" | "np" | "numpy") => {
                    a.attr.id.to_string()
                }
                PyExpr::Attribute(inner)
                    if inner.attr.id.as_str() == "math"
                        && matches!(&*inner.value, PyExpr::Name(d) if d.id.as_str() == "dace") =>
                {
                    a.attr.id.to_string()
                }
                _ => return Err(self.refuse(c, "a call of this function")),
            },
            _ => return Err(self.refuse(c, "a call of this function")),
        };
        let mut args = Vec::new();
        for a in &c.arguments.args {
            args.push(self.expr(a)?);
        }
        let is_cast = matches!(&*c.func, PyExpr::Attribute(_)) || dtype_named(&name).is_some();
        if let Some(to) = dtype_named(&name).filter(|_| is_cast) {
            return match args.as_slice() {
                [(x, t)] => Ok((convert(x.clone(), *t, to), to)),
                [(re, rt), (im, it)] if to.is_complex() => {
                    let part = if to == DType::Complex64 {
                        DType::Float32
                    } else {
                        DType::Float64
                    };
                    let (re, im) = (
                        convert(re.clone(), *rt, part),
                        convert(im.clone(), *it, part),
                    );
                    if let (
                        Expr::Lit(Literal::Float { value: a, .. }),
                        Expr::Lit(Literal::Float { value: b, .. }),
                    ) = (&re, &im)
                    {
                        return Ok((
                            Expr::Lit(Literal::Complex {
                                re: *a,
                                im: *b,
                                dtype: to,
                            }),
                            to,
                        ));
                    }
                    Ok((Expr::call(Intrinsic::Complex, vec![re, im]), to))
                }
                _ => Err(self.refuse(c, format!("`{name}` with {} arguments", args.len()))),
            };
        }
        if name == "ipow" {
            return self.ipow(c, args);
        }
        if name == "ifloor" {
            // DaCe's `ifloor`: `(int)floor(x)` of a float, an integer as it is.
            let [(x, t)] = <[_; 1]>::try_from(args)
                .map_err(|_| self.refuse(c, "`ifloor` takes 1 argument"))?;
            return Ok(if t.is_float() {
                (
                    Expr::cast(DType::Int32, Expr::call(Intrinsic::Floor, vec![x])),
                    DType::Int32,
                )
            } else {
                (x, t)
            });
        }
        if matches!(name.as_str(), "FtnMod" | "ftn_mod" | "CMod" | "c_mod") {
            let [l, r] = <[_; 2]>::try_from(args)
                .map_err(|_| self.refuse(c, format!("`{name}` takes 2 arguments")))?;
            return self.c_remainder(c, l, r);
        }
        if matches!(name.as_str(), "FtnModulo" | "PyMod") {
            let [l, r] = <[_; 2]>::try_from(args)
                .map_err(|_| self.refuse(c, format!("`{name}` takes 2 arguments")))?;
            return self.binary(c, BinaryOp::Mod, l, r);
        }
        // Fortran's `MIN` and `MAX` take any number of arguments.
        if matches!(name.as_str(), "min" | "max") && args.len() > 2 {
            let func = if name == "min" {
                Intrinsic::Min
            } else {
                Intrinsic::Max
            };
            let t = args
                .iter()
                .map(|(_, t)| *t)
                .reduce(common)
                .unwrap_or(DType::Float64);
            let folded = args
                .into_iter()
                .map(|(x, xt)| convert(x, xt, t))
                .reduce(|acc, x| Expr::call(func, vec![acc, x]))
                .unwrap_or_else(|| Expr::i64(0));
            return Ok((folded, t));
        }
        if matches!(name.as_str(), "Mod" | "py_mod") {
            let [l, r] =
                <[_; 2]>::try_from(args).map_err(|_| self.refuse(c, "`Mod` takes 2 arguments"))?;
            return self.binary(c, BinaryOp::Mod, l, r);
        }
        let func = match name.as_str() {
            "min" | "minimum" => Intrinsic::Min,
            "max" | "maximum" => Intrinsic::Max,
            "fabs" => Intrinsic::Abs,
            "arctan" => Intrinsic::Atan,
            "arctan2" => Intrinsic::Atan2,
            other => INTRINSICS
                .iter()
                .copied()
                .find(|f| f.cpp_name() == Some(other))
                .ok_or_else(|| self.refuse(c, format!("the function `{other}`")))?,
        };
        if args.len() != func.arity() {
            return Err(self.refuse(c, format!("`{name}` with {} arguments", args.len())));
        }
        // Operands of one type; the result type is the IR's rule for `func`.
        let t = args
            .iter()
            .map(|(_, t)| *t)
            .reduce(common)
            .unwrap_or(DType::Float64);
        let t = match func {
            Intrinsic::Min | Intrinsic::Max | Intrinsic::Abs => t,
            Intrinsic::IsNan | Intrinsic::Real | Intrinsic::Imag | Intrinsic::Conj => t,
            _ if !t.is_float() && !t.is_complex() => DType::Float64,
            _ => t,
        };
        let args: Vec<Expr> = args.into_iter().map(|(x, xt)| convert(x, xt, t)).collect();
        let call = Expr::call(func, args);
        let symbol = |_: &str| true;
        let rt = sdfg_ir::code::TypeChecker::new(self.bindings(), &symbol)
            .type_of(&call)
            .map_err(|e| self.refuse(c, format!("`{name}` here: {e}")))?;
        Ok((call, rt))
    }
}

impl Reader<'_> {
    /// C's remainder (DaCe's `c_mod`, Fortran's `MOD`): the sign of the
    /// dividend. Of floats, `fmod`; of integers, Python's modulo less the
    /// divisor where the two differ (a non-zero result whose operands'
    /// signs differ).
    fn c_remainder(
        &mut self,
        c: &ast::ExprCall,
        l: (Expr, DType),
        r: (Expr, DType),
    ) -> Result<(Expr, DType), PythonError> {
        let t = common(l.1, r.1);
        let (a, b) = (convert(l.0, l.1, t), convert(r.0, r.1, t));
        if t.is_float() {
            return Ok((Expr::call(Intrinsic::Fmod, vec![a, b]), t));
        }
        if !t.is_integer() {
            return Err(self.refuse(c, format!("a remainder of {t} values")));
        }
        let zero = || convert(Expr::i64(0), DType::Int64, t);
        let m = Expr::binary(BinaryOp::Mod, a.clone(), b.clone());
        let differ = Expr::binary(
            BinaryOp::And,
            Expr::binary(BinaryOp::Ne, m.clone(), zero()),
            Expr::binary(
                BinaryOp::Ne,
                Expr::binary(BinaryOp::Lt, a, zero()),
                Expr::binary(BinaryOp::Lt, b.clone(), zero()),
            ),
        );
        let adjusted = Expr::binary(BinaryOp::Sub, m.clone(), b);
        Ok((Expr::select(differ, adjusted, m), t))
    }

    /// DaCe's `ipow(a, n)` (GT4Py writes `a ** 2` so): `1 * a * ... * a`,
    /// multiplied left to right as DaCe's runtime does, for an exponent
    /// written as a non-negative integer literal.
    fn ipow(
        &mut self,
        c: &ast::ExprCall,
        args: Vec<(Expr, DType)>,
    ) -> Result<(Expr, DType), PythonError> {
        let [(base, t), (exp, _)] =
            <[_; 2]>::try_from(args).map_err(|_| self.refuse(c, "`ipow` takes 2 arguments"))?;
        let n = match exp {
            Expr::Lit(Literal::Int { value, .. }) if (0..=64).contains(&value) => value,
            Expr::Lit(Literal::UInt { value, .. }) if value <= 64 => value as i64,
            _ => {
                return Err(self.refuse(
                    c,
                    "`ipow` with an exponent that is not an integer literal from 0 to 64",
                ));
            }
        };
        let mut out = convert(Expr::i64(1), DType::Int64, t);
        for _ in 0..n {
            out = Expr::binary(BinaryOp::Mul, out, base.clone());
        }
        Ok((out, t))
    }
}

/// Every intrinsic, for the reverse lookup of C++ names.
const INTRINSICS: [Intrinsic; 39] = [
    Intrinsic::Sqrt,
    Intrinsic::Exp,
    Intrinsic::Log,
    Intrinsic::Sin,
    Intrinsic::Cos,
    Intrinsic::Tan,
    Intrinsic::Tanh,
    Intrinsic::Atan,
    Intrinsic::Atan2,
    Intrinsic::Pow,
    Intrinsic::Abs,
    Intrinsic::Min,
    Intrinsic::Max,
    Intrinsic::Floor,
    Intrinsic::Ceil,
    Intrinsic::Real,
    Intrinsic::Imag,
    Intrinsic::Conj,
    Intrinsic::Complex,
    Intrinsic::IsNan,
    Intrinsic::Log2,
    Intrinsic::Log10,
    Intrinsic::Log1p,
    Intrinsic::Expm1,
    Intrinsic::Exp2,
    Intrinsic::Sinh,
    Intrinsic::Cosh,
    Intrinsic::Asin,
    Intrinsic::Acos,
    Intrinsic::Asinh,
    Intrinsic::Acosh,
    Intrinsic::Atanh,
    Intrinsic::Cbrt,
    Intrinsic::Trunc,
    Intrinsic::Rint,
    Intrinsic::FrexpMantissa,
    Intrinsic::FrexpExponent,
    Intrinsic::Fmod,
    Intrinsic::Erf,
];

/// `x` as a condition: itself if it is a boolean, else `x != 0`.
fn truth(x: Expr, t: DType) -> Expr {
    if t == DType::Bool {
        return x;
    }
    let zero = literal_as(&Literal::i64(0), t).map_or(Expr::i64(0), Expr::Lit);
    Expr::binary(BinaryOp::Ne, x, zero)
}

/// The literal `-l`, where it exists.
fn negated(l: &Literal) -> Option<Literal> {
    Some(match *l {
        Literal::Int { value, dtype } => Literal::Int {
            value: value.checked_neg()?,
            dtype,
        },
        Literal::Float { value, dtype } => Literal::Float {
            value: -value,
            dtype,
        },
        _ => return None,
    })
}

/// The writer's NaN-propagating `min`/`max`:
/// `(a if (isnan(a) or (a < b)) else b)` is `min(a, b)`.
fn nan_min_max(cond: &Expr, then: &Expr, otherwise: &Expr) -> Option<Expr> {
    let Expr::Binary {
        op: BinaryOp::Or,
        lhs,
        rhs,
    } = cond
    else {
        return None;
    };
    let Expr::Call {
        func: Intrinsic::IsNan,
        args,
    } = &**lhs
    else {
        return None;
    };
    let Expr::Binary { op, lhs: a, rhs: b } = &**rhs else {
        return None;
    };
    let func = match op {
        BinaryOp::Lt => Intrinsic::Min,
        BinaryOp::Gt => Intrinsic::Max,
        _ => return None,
    };
    (args.as_slice() == [(**a).clone()] && **a == *then && **b == *otherwise)
        .then(|| Expr::call(func, vec![then.clone(), otherwise.clone()]))
}

fn binary_op(op: ast::Operator) -> Option<BinaryOp> {
    Some(match op {
        ast::Operator::Add => BinaryOp::Add,
        ast::Operator::Sub => BinaryOp::Sub,
        ast::Operator::Mult => BinaryOp::Mul,
        ast::Operator::Div => BinaryOp::Div,
        ast::Operator::FloorDiv => BinaryOp::FloorDiv,
        ast::Operator::Pow => BinaryOp::Pow,
        ast::Operator::BitAnd => BinaryOp::BitAnd,
        ast::Operator::BitOr => BinaryOp::BitOr,
        ast::Operator::BitXor => BinaryOp::BitXor,
        ast::Operator::LShift => BinaryOp::Shl,
        ast::Operator::RShift => BinaryOp::Shr,
        // `%` is C's remainder in DaCe's unparsed code; the IR's modulo is
        // Python's (written `Mod(a, b)`).
        ast::Operator::Mod | ast::Operator::MatMult => return None,
    })
}

fn statement_name(s: &PyStmt) -> String {
    match s {
        PyStmt::For(_) => "a `for` loop".into(),
        PyStmt::While(_) => "a `while` loop".into(),
        PyStmt::Return(_) => "a `return`".into(),
        PyStmt::Expr(_) => "an expression statement".into(),
        PyStmt::Import(_) | PyStmt::ImportFrom(_) => "an import".into(),
        _ => "this statement".into(),
    }
}

fn expression_name(e: &PyExpr) -> String {
    match e {
        PyExpr::Attribute(a) => format!("the attribute `{}`", a.attr.id),
        PyExpr::Lambda(_) => "a lambda".into(),
        PyExpr::List(_) | PyExpr::Tuple(_) => "a list or tuple".into(),
        PyExpr::StringLiteral(_) => "a string".into(),
        _ => "this expression".into(),
    }
}
