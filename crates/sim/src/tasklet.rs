//! Tasklet code compiled once into closures.
//!
//! A tasklet body is compiled when its state is first executed: every name is
//! resolved to a slot (a local or connector value, a symbol, or a pointer
//! connector), every operator to the arithmetic of its operand type, so that
//! executing the tasklet a million times in a map never walks the tree or
//! looks up a name again.

use crate::arith::{self, ArithError};
use crate::memory::{AllocId, Memory};
use crate::value::Value;
use sdfg_ir::code::{BinaryOp, Binding, Expr, Stmt, TypeChecker, TypeError};
use sdfg_ir::{DType, Side, Wcr};
use std::collections::BTreeMap;

/// A pointer connector bound for one execution: element `(i, j, ..)` is at
/// `base + i*strides[0] + j*strides[1] + ..` in `alloc`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ptr {
    pub alloc: AllocId,
    pub base: i64,
    pub strides: Vec<i64>,
    pub wcr: Option<Wcr>,
}

/// A fault raised inside tasklet code; the executor adds the location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CodeFault {
    Arith(ArithError),
    /// Pointer access outside the allocation: (pointer index, linear index).
    OutOfBounds(usize, i64),
    /// Pointer access to memory of the other side: pointer index.
    Space(usize),
    /// Pointer read of an element never written: (pointer index, linear index).
    Uninitialized(usize, i64),
    /// A data race found through a pointer: (pointer index, linear index).
    Race(usize, i64, crate::memory::RaceKind),
}

impl From<ArithError> for CodeFault {
    fn from(e: ArithError) -> CodeFault {
        CodeFault::Arith(e)
    }
}

/// What a compiled tasklet sees while it runs.
pub(crate) struct Frame<'a> {
    pub vals: &'a mut [Value],
    pub syms: &'a [i64],
    pub ptrs: &'a [Ptr],
    pub mem: &'a mut Memory,
    pub side: Side,
}

type ExprFn = Box<dyn Fn(&mut Frame<'_>) -> Result<Value, CodeFault>>;
type StmtFn = Box<dyn Fn(&mut Frame<'_>) -> Result<(), CodeFault>>;

/// A compiled tasklet body.
pub(crate) struct Code {
    body: Vec<StmtFn>,
    /// Number of value slots (connectors first, in the order given, then locals).
    pub slots: usize,
}

impl Code {
    /// Runs the body.
    #[inline]
    pub(crate) fn run(&self, frame: &mut Frame<'_>) -> Result<(), CodeFault> {
        for s in &self.body {
            s(frame)?;
        }
        Ok(())
    }
}

/// How names resolve while compiling.
struct Scope<'s> {
    /// Value slots by name (scalar connectors and locals), with their types.
    values: BTreeMap<String, (usize, DType)>,
    /// Pointer connectors by name: index into `Frame::ptrs`, element type.
    pointers: BTreeMap<String, (usize, DType)>,
    /// Symbol slots by name.
    symbols: &'s BTreeMap<String, usize>,
    /// Type checker with the same names, for operand types.
    types: BTreeMap<String, Binding>,
    next_slot: usize,
}

/// Compiles a tasklet body.
///
/// `values` are the scalar connectors (inputs and outputs) in slot order,
/// `pointers` the pointer connectors in `Frame::ptrs` order with their ranks,
/// `symbols` the symbol slots visible to the tasklet.
pub(crate) fn compile(
    body: &[Stmt],
    values: &[(String, DType, bool)],
    pointers: &[(String, DType, usize, bool)],
    symbols: &BTreeMap<String, usize>,
) -> Result<Code, TypeError> {
    let mut scope = Scope {
        values: BTreeMap::new(),
        pointers: BTreeMap::new(),
        symbols,
        types: BTreeMap::new(),
        next_slot: 0,
    };
    for (name, dtype, is_output) in values {
        scope.values.insert(name.clone(), (scope.next_slot, *dtype));
        scope.next_slot += 1;
        let b = if *is_output {
            Binding::Output(*dtype)
        } else {
            Binding::Value(*dtype)
        };
        scope.types.insert(name.clone(), b);
    }
    for (k, (name, dtype, rank, is_output)) in pointers.iter().enumerate() {
        scope.pointers.insert(name.clone(), (k, *dtype));
        let b = if *is_output {
            Binding::PointerOut {
                dtype: *dtype,
                rank: *rank,
            }
        } else {
            Binding::PointerIn {
                dtype: *dtype,
                rank: *rank,
            }
        };
        scope.types.insert(name.clone(), b);
    }
    let body = compile_body(&mut scope, body)?;
    Ok(Code {
        body,
        slots: scope.next_slot,
    })
}

fn compile_body(scope: &mut Scope<'_>, body: &[Stmt]) -> Result<Vec<StmtFn>, TypeError> {
    let saved_values = scope.values.clone();
    let saved_types = scope.types.clone();
    let out = body
        .iter()
        .map(|s| compile_stmt(scope, s))
        .collect::<Result<Vec<_>, _>>();
    scope.values = saved_values;
    scope.types = saved_types;
    out
}

fn type_of(scope: &Scope<'_>, e: &Expr) -> Result<DType, TypeError> {
    let symbols = scope.symbols;
    let is_symbol = |s: &str| symbols.contains_key(s);
    TypeChecker::new(scope.types.clone(), &is_symbol).type_of(e)
}

fn compile_stmt(scope: &mut Scope<'_>, stmt: &Stmt) -> Result<StmtFn, TypeError> {
    Ok(match stmt {
        Stmt::Let { name, dtype, value } => {
            let v = compile_expr(scope, value)?;
            let slot = scope.next_slot;
            scope.next_slot += 1;
            scope.values.insert(name.clone(), (slot, *dtype));
            scope.types.insert(name.clone(), Binding::Value(*dtype));
            Box::new(move |f| {
                f.vals[slot] = v(f)?;
                Ok(())
            })
        }
        Stmt::Assign { target, value } => {
            let v = compile_expr(scope, value)?;
            let (slot, _) = *scope
                .values
                .get(target)
                .ok_or_else(|| TypeError::UnknownName {
                    name: target.clone(),
                })?;
            Box::new(move |f| {
                f.vals[slot] = v(f)?;
                Ok(())
            })
        }
        Stmt::Store { conn, index, value } => {
            let (k, dtype, idx) = pointer_access(scope, conn, index)?;
            let v = compile_expr(scope, value)?;
            Box::new(move |f| {
                let addr = address(f, k, &idx)?;
                let value = v(f)?;
                store(f, k, addr, value, dtype)
            })
        }
        Stmt::If {
            cond,
            then,
            otherwise,
        } => {
            let c = compile_expr(scope, cond)?;
            let t = compile_body(scope, then)?;
            let o = compile_body(scope, otherwise)?;
            Box::new(move |f| {
                let branch = if c(f)?.is_nonzero() { &t } else { &o };
                for s in branch {
                    s(f)?;
                }
                Ok(())
            })
        }
    })
}

/// A pointer connector's index in `Frame::ptrs`, its element type, and its
/// compiled indices (for loads and stores alike).
fn pointer_access(
    scope: &Scope<'_>,
    conn: &str,
    index: &[Expr],
) -> Result<(usize, DType, Vec<ExprFn>), TypeError> {
    let (k, dtype) = *scope
        .pointers
        .get(conn)
        .ok_or_else(|| TypeError::UnknownName {
            name: conn.to_owned(),
        })?;
    let idx = index
        .iter()
        .map(|i| compile_expr(scope, i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((k, dtype, idx))
}

/// Linear index of a pointer access.
#[inline]
fn address(f: &mut Frame<'_>, k: usize, idx: &[ExprFn]) -> Result<i64, CodeFault> {
    let mut addr = f.ptrs[k].base;
    for (d, e) in idx.iter().enumerate() {
        let i = e(f)?.to_i64();
        addr += i * f.ptrs[k].strides.get(d).copied().unwrap_or(0);
    }
    Ok(addr)
}

fn check_space(f: &Frame<'_>, k: usize) -> Result<(), CodeFault> {
    let alloc = &f.mem.allocations[f.ptrs[k].alloc];
    if !f.mem.reaches(alloc, f.side) {
        return Err(CodeFault::Space(k));
    }
    Ok(())
}

fn load(f: &mut Frame<'_>, k: usize, addr: i64) -> Result<Value, CodeFault> {
    check_space(f, k)?;
    let alloc = &f.mem.allocations[f.ptrs[k].alloc];
    let i = usize::try_from(addr).map_err(|_| CodeFault::OutOfBounds(k, addr))?;
    if let Some(init) = &alloc.init
        && !init.get(i).copied().unwrap_or(true)
    {
        return Err(CodeFault::Uninitialized(k, addr));
    }
    let v = alloc
        .elements
        .get(i)
        .ok_or(CodeFault::OutOfBounds(k, addr))?;
    if let Some(kind) = f.mem.note_access(f.ptrs[k].alloc, i, None) {
        return Err(CodeFault::Race(k, addr, kind));
    }
    Ok(v)
}

fn store(
    f: &mut Frame<'_>,
    k: usize,
    addr: i64,
    value: Value,
    dtype: DType,
) -> Result<(), CodeFault> {
    check_space(f, k)?;
    let wcr = f.ptrs[k].wcr;
    let i = usize::try_from(addr).map_err(|_| CodeFault::OutOfBounds(k, addr))?;
    let alloc = &mut f.mem.allocations[f.ptrs[k].alloc];
    let value = match wcr {
        Some(w) => {
            if let Some(init) = &alloc.init
                && !init.get(i).copied().unwrap_or(true)
            {
                return Err(CodeFault::Uninitialized(k, addr));
            }
            let old = alloc
                .elements
                .get(i)
                .ok_or(CodeFault::OutOfBounds(k, addr))?;
            arith::combine(w, dtype, old, value)?
        }
        None => value,
    };
    if !alloc.elements.set(i, value) {
        return Err(CodeFault::OutOfBounds(k, addr));
    }
    if let Some(flag) = alloc.init.as_mut().and_then(|init| init.get_mut(i)) {
        *flag = true;
    }
    if let Some(kind) = f.mem.note_access(f.ptrs[k].alloc, i, Some(wcr.is_some())) {
        return Err(CodeFault::Race(k, addr, kind));
    }
    Ok(())
}

/// An operand of a binary operation: a value slot read directly (the common
/// case of a connector or local), or any other expression.
enum Operand {
    Slot(usize),
    Expr(ExprFn),
}

impl Operand {
    #[inline]
    fn get(&self, f: &mut Frame<'_>) -> Result<Value, CodeFault> {
        match self {
            Operand::Slot(s) => Ok(f.vals[*s]),
            Operand::Expr(e) => e(f),
        }
    }
}

fn operand(scope: &Scope<'_>, e: &Expr) -> Result<Operand, TypeError> {
    if let Expr::Var(name) = e
        && let Some(&(slot, _)) = scope.values.get(name)
    {
        return Ok(Operand::Slot(slot));
    }
    compile_expr(scope, e).map(Operand::Expr)
}

fn compile_expr(scope: &Scope<'_>, e: &Expr) -> Result<ExprFn, TypeError> {
    Ok(match e {
        Expr::Lit(l) => {
            let v = Value::from_literal(l);
            Box::new(move |_| Ok(v))
        }
        Expr::Var(name) => {
            if let Some(&(slot, _)) = scope.values.get(name) {
                Box::new(move |f| Ok(f.vals[slot]))
            } else if let Some(&slot) = scope.symbols.get(name) {
                Box::new(move |f| Ok(Value::Int(f.syms[slot])))
            } else {
                return Err(TypeError::UnknownName { name: name.clone() });
            }
        }
        Expr::Load { conn, index } => {
            let (k, _, idx) = pointer_access(scope, conn, index)?;
            Box::new(move |f| {
                let addr = address(f, k, &idx)?;
                load(f, k, addr)
            })
        }
        Expr::Unary { op, arg } => {
            let dtype = type_of(scope, arg)?;
            let a = compile_expr(scope, arg)?;
            let op = *op;
            Box::new(move |f| Ok(arith::unary(op, dtype, a(f)?)?))
        }
        Expr::Binary { op, lhs, rhs } => {
            let dtype = type_of(scope, lhs)?;
            let (l, r) = (operand(scope, lhs)?, operand(scope, rhs)?);
            let op = *op;
            // Specialized closures for the arithmetic that dominates array
            // code; everything else goes through the general table.
            macro_rules! fast {
                ($variant:ident, $e:expr) => {
                    Box::new(move |f| match (l.get(f)?, r.get(f)?) {
                        (Value::$variant(a), Value::$variant(b)) => Ok(Value::$variant($e(a, b))),
                        (a, b) => Ok(arith::binary(op, dtype, a, b)?),
                    })
                };
            }
            match (op, dtype) {
                (BinaryOp::Add, DType::Float64) => fast!(Float, |a: f64, b: f64| a + b),
                (BinaryOp::Sub, DType::Float64) => fast!(Float, |a: f64, b: f64| a - b),
                (BinaryOp::Mul, DType::Float64) => fast!(Float, |a: f64, b: f64| a * b),
                (BinaryOp::Div, DType::Float64) => fast!(Float, |a: f64, b: f64| a / b),
                (BinaryOp::Add, DType::Int64) => fast!(Int, |a: i64, b: i64| a.wrapping_add(b)),
                (BinaryOp::Sub, DType::Int64) => fast!(Int, |a: i64, b: i64| a.wrapping_sub(b)),
                (BinaryOp::Mul, DType::Int64) => fast!(Int, |a: i64, b: i64| a.wrapping_mul(b)),
                _ => Box::new(move |f| {
                    let a = l.get(f)?;
                    let b = r.get(f)?;
                    Ok(arith::binary(op, dtype, a, b)?)
                }),
            }
        }
        Expr::Call { func, args } => {
            let dtype = match args.first() {
                Some(a) => type_of(scope, a)?,
                None => DType::Float64,
            };
            let compiled = args
                .iter()
                .map(|a| compile_expr(scope, a))
                .collect::<Result<Vec<_>, _>>()?;
            let func = *func;
            Box::new(move |f| {
                let mut vals = [Value::Bool(false); 2];
                for (slot, a) in vals.iter_mut().zip(&compiled) {
                    *slot = a(f)?;
                }
                Ok(arith::intrinsic(
                    func,
                    dtype,
                    &vals[..compiled.len().min(2)],
                )?)
            })
        }
        Expr::Select {
            cond,
            then,
            otherwise,
        } => {
            let (c, t, o) = (
                compile_expr(scope, cond)?,
                compile_expr(scope, then)?,
                compile_expr(scope, otherwise)?,
            );
            Box::new(move |f| if c(f)?.is_nonzero() { t(f) } else { o(f) })
        }
        Expr::Cast { dtype, arg } => {
            let a = compile_expr(scope, arg)?;
            let dtype = *dtype;
            Box::new(move |f| Ok(a(f)?.cast(dtype)))
        }
    })
}
