//! Lowering of one `@dace.program` to an SDFG.

use crate::module::Module;
use crate::values::{ArrayRef, Dim, Elem, broadcast, promote, reindex, sym_code};
use crate::{ErrorKind, FrontendError};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use sdfg_ir::builder::{BuildError, StateBuilder};
use sdfg_ir::code::{self, BinaryOp, Intrinsic, UnaryOp};
use sdfg_ir::{
    Assignment, BlockKind, ConditionalBlock, Connector, ControlBlock, DType, DataDesc, LibraryOp,
    Literal, LoopBlock, Map, Memlet, Range, Region, Schedule, Sdfg, Subset, SymCond, SymExpr, Wcr,
};
use std::collections::{BTreeMap, BTreeSet};

type Result<T> = std::result::Result<T, FrontendError>;

/// What a Python name refers to inside a program.
#[derive(Clone, Debug)]
enum Name {
    /// A region of a container (a whole array, a scalar, or a view of one).
    Ref(ArrayRef),
    /// An integer symbol (a program symbol, loop variable or map parameter).
    Sym(String),
    /// An integer value bound to an expression (a callee's size symbol,
    /// bound to the caller's extent when a program is inlined).
    Value(SymExpr),
    /// A local of a `dace.map` body: its value, substituted where it is used
    /// (the body runs once per point, so a local is an expression of that point).
    Local(Elem),
}

/// A program being inlined: where its tail `return` writes.
struct InlineFrame {
    result: Option<InlineResult>,
}

/// What an inlined call evaluates to.
enum InlineValue {
    One(Elem),
    Many(Vec<Elem>),
}

/// The result of an inlined program.
enum InlineResult {
    /// A transient its `return` wrote.
    Region(ArrayRef),
    /// Inside a map body: the returned scalar value of the iteration (a
    /// local, like every value a map body computes).
    Local(Elem),
    /// `return a, b`: one transient per value.
    Tuple(Vec<ArrayRef>),
}

struct Lowerer<'m> {
    m: &'m Module,
    sdfg: Sdfg,
    /// Regions being filled; the innermost is last.
    stack: Vec<Region>,
    names: BTreeMap<String, Name>,
    /// Parameters and ranges of the enclosing `dace.map` loops.
    map_ctx: Vec<(String, Range)>,
    /// For each entry of `map_ctx`, the `dace.map` statement it comes from:
    /// each statement is one level of nested map scopes.
    map_level: Vec<usize>,
    map_level_counter: usize,
    /// Conditions of the `if`s around the current statement inside a
    /// `dace.map` body: assignments there are predicated.
    pred: Vec<Elem>,
    /// Programs being inlined, innermost last.
    inlining: Vec<InlineFrame>,
    /// Transients holding the result of a reshape (a copy): writing into
    /// one would not reach the original, so it is refused.
    reshaped: std::collections::BTreeSet<String>,
    fresh: usize,
    /// Statements and expressions being lowered, nested (see [`MAX_NESTING`]).
    depth: usize,
    /// Names updated (`x += ...`) inside a `dace.map` body: an integer
    /// assigned to one of them is a scalar container, never a symbol, since
    /// a map's iterations cannot assign a symbol (they combine into data).
    map_updated: BTreeSet<String>,
    /// Scalars declared with a type (`x: dace.uint16 = ...`,
    /// `dace.define_local_scalar`): assigning to their name writes into them,
    /// converted to their type, as in DaCe, instead of rebinding the name.
    declared: BTreeSet<String>,
}

/// The names that are targets of augmented assignments inside `dace.map`
/// bodies of `body` (at any depth).
fn map_updated_names(body: &[Stmt], in_map: bool, out: &mut BTreeSet<String>) {
    for s in body {
        match s {
            Stmt::AugAssign(a) if in_map => {
                if let Expr::Name(n) = &*a.target {
                    out.insert(n.id.to_string());
                }
            }
            Stmt::For(f) => {
                let is_map = matches!(&*f.iter, Expr::Subscript(sub)
                    if matches!(&*sub.value, Expr::Attribute(a) if a.attr.id.as_str() == "map"));
                map_updated_names(&f.body, in_map || is_map, out);
                map_updated_names(&f.orelse, in_map, out);
            }
            Stmt::While(w) => map_updated_names(&w.body, in_map, out),
            Stmt::If(i) => {
                map_updated_names(&i.body, in_map, out);
                for c in &i.elif_else_clauses {
                    map_updated_names(&c.body, in_map, out);
                }
            }
            _ => {}
        }
    }
}

/// How deeply statements and expressions may nest, together and across
/// inlined programs. The lowering, the validator and later passes walk them
/// recursively: a deeper program (a 300-term sum, 100 nested `if`s) would
/// overflow the stack and abort the process instead of being reported.
const MAX_NESTING: usize = 64;

pub(crate) fn lower_program(m: &Module, f: &ast::StmtFunctionDef) -> Result<Sdfg> {
    let mut l = Lowerer {
        m,
        sdfg: Sdfg::new(f.name.id.as_str()),
        stack: vec![Region::default()],
        names: BTreeMap::new(),
        map_ctx: Vec::new(),
        map_level: Vec::new(),
        map_level_counter: 0,
        pred: Vec::new(),
        inlining: Vec::new(),
        reshaped: Default::default(),
        fresh: 0,
        depth: 0,
        map_updated: BTreeSet::new(),
        declared: BTreeSet::new(),
    };
    map_updated_names(&f.body, false, &mut l.map_updated);
    l.parameters(f)?;
    l.body(&f.body)?;
    let mut sdfg = l.sdfg;
    sdfg.body = l.stack.pop().unwrap_or_default();
    // Symbols used by shapes come after the containers, in name order.
    let used: Vec<String> = sdfg
        .symbols
        .keys()
        .filter(|s| m.symbols.contains_key(*s) && !sdfg.arguments.contains(s))
        .cloned()
        .collect();
    sdfg.arguments.extend(used);
    if let Err(errors) = sdfg_ir::validate(&sdfg) {
        return Err(FrontendError {
            at: m.source.position(f.range().start().to_usize()),
            kind: ErrorKind::Invalid(errors.to_string()),
        });
    }
    Ok(sdfg)
}

fn unsupported(what: impl Into<String>) -> ErrorKind {
    ErrorKind::Unsupported(what.into())
}

impl<'m> Lowerer<'m> {
    fn err(&self, node: &impl Ranged, kind: ErrorKind) -> FrontendError {
        self.m.source.error(node.range(), kind)
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn line(&self, node: &impl Ranged) -> usize {
        self.m.source.position(node.range().start().to_usize()).line
    }

    // -- Declarations --------------------------------------------------------

    fn declare_symbol(&mut self, name: &str) {
        let dtype = self.m.symbols.get(name).copied().unwrap_or(DType::Int64);
        self.sdfg.symbols.entry(name.to_owned()).or_insert(dtype);
    }

    fn parameters(&mut self, f: &ast::StmtFunctionDef) -> Result<()> {
        let p = &f.parameters;
        if !p.posonlyargs.is_empty()
            || p.vararg.is_some()
            || p.kwarg.is_some()
            || !p.kwonlyargs.is_empty()
        {
            return Err(self.err(&**p, unsupported("only plain positional parameters")));
        }
        for param in &p.args {
            let name = param.parameter.name.id.to_string();
            let ann = param.parameter.annotation.as_deref().ok_or_else(|| {
                self.err(
                    &param.parameter,
                    ErrorKind::Annotation(format!("parameter `{name}` has no annotation")),
                )
            })?;
            let (dtype, shape) = self.annotation(ann)?;
            let desc = match &shape {
                None => DataDesc::scalar(dtype),
                Some(s) => DataDesc::array(dtype, s.clone()),
            };
            self.sdfg.containers.insert(name.clone(), desc);
            self.sdfg.arguments.push(name.clone());
            let r = ArrayRef::whole(
                &name,
                dtype,
                shape.as_deref().unwrap_or(&[]),
                shape.is_none(),
            );
            self.names.insert(name, Name::Ref(r));
        }
        Ok(())
    }

    /// `dace.float64` or `dace.float64[N, M]`.
    fn annotation(&mut self, e: &Expr) -> Result<(DType, Option<Vec<SymExpr>>)> {
        if let Some(d) = self.m.dtype_of(e) {
            return Ok((d, None));
        }
        if let Expr::Subscript(s) = e
            && let Some(d) = self.m.dtype_of(&s.value)
        {
            let items: Vec<&Expr> = match &*s.slice {
                Expr::Tuple(t) => t.elts.iter().collect(),
                one => vec![one],
            };
            let shape = items
                .into_iter()
                .map(|x| {
                    self.elem(x)?.as_sym().ok_or_else(|| {
                        self.err(
                            x,
                            ErrorKind::Annotation(
                                "a dimension must be an integer expression of symbols".to_owned(),
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok((d, Some(shape)));
        }
        Err(self.err(
            e,
            ErrorKind::Annotation(format!(
                "`{}` is not a dtype or array type",
                self.m.source.snippet(e.range())
            )),
        ))
    }

    fn new_transient(&mut self, prefix: &str, dtype: DType, shape: &[SymExpr]) -> ArrayRef {
        let name = self.fresh(prefix);
        let desc = if shape.is_empty() {
            DataDesc::scalar(dtype).into_transient()
        } else {
            DataDesc::array(dtype, shape.to_vec()).into_transient()
        };
        self.sdfg.containers.insert(name.clone(), desc);
        ArrayRef::whole(&name, dtype, shape, shape.is_empty())
    }

    // -- Blocks ----------------------------------------------------------------

    fn push_block(&mut self, label: String, kind: BlockKind) {
        if let Some(r) = self.stack.last_mut() {
            r.blocks.push(ControlBlock::new(label, kind));
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<Region> {
        self.stack.push(Region::default());
        let r = f(self);
        let region = self.stack.pop().unwrap_or_default();
        r.map(|()| region)
    }

    /// Adds a state built by `f`.
    fn state(
        &mut self,
        node: &impl Ranged,
        what: &str,
        f: impl FnOnce(&mut StateBuilder<'_>),
    ) -> Result<()> {
        let mut errors: Vec<BuildError> = Vec::new();
        let state = {
            let mut sb = StateBuilder::standalone(&self.sdfg.containers, &mut errors);
            f(&mut sb);
            sb.finish()
        };
        if let Some(e) = errors.first() {
            return Err(self.err(node, ErrorKind::Invalid(e.to_string())));
        }
        let label = format!("{what}_l{}_{}", self.line(node), self.fresh(""));
        self.push_block(label, BlockKind::State(state));
        Ok(())
    }

    /// Adds `symbol = value` after the last block (adding an empty state if there is none).
    fn assign_symbol(&mut self, node: &impl Ranged, symbol: &str, value: SymExpr) {
        let needs_block = self.stack.last().is_none_or(|r| r.blocks.is_empty())
            || self
                .stack
                .last()
                .and_then(|r| r.blocks.last())
                .is_some_and(|b| {
                    matches!(
                        b.kind,
                        BlockKind::Break | BlockKind::Continue | BlockKind::Return
                    )
                });
        if needs_block {
            let label = format!("assign_l{}_{}", self.line(node), self.fresh(""));
            self.push_block(label, BlockKind::State(sdfg_ir::State::new()));
        }
        if let Some(b) = self.stack.last_mut().and_then(|r| r.blocks.last_mut()) {
            b.transition.assignments.push(Assignment {
                symbol: symbol.to_owned(),
                value,
            });
        }
    }

    // -- Statements --------------------------------------------------------------

    fn body(&mut self, stmts: &[Stmt]) -> Result<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    /// Runs `f` one nesting level deeper, or fails at `node` beyond [`MAX_NESTING`].
    fn deeper<T>(
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

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        self.deeper(s, |l| l.stmt_inner(s))
    }

    fn stmt_inner(&mut self, s: &Stmt) -> Result<()> {
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
            Stmt::Return(r) if !self.inlining.is_empty() => self.inlined_return(r),
            Stmt::Return(r) => self.program_return(r),
            other => Err(self.err(
                other,
                unsupported(format!(
                    "statement `{}`",
                    first_line(self.m.source.snippet(other.range()))
                )),
            )),
        }
    }

    /// `x = v`, `a, b = u, v` and `a, b = program(...)`.
    fn assign_stmt(&mut self, a: &ast::StmtAssign) -> Result<()> {
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
                // `KE, PE = program(...)`.
                let Some(values) = self.call_results(c)? else {
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
    fn annotated_assign(&mut self, a: &ast::StmtAnnAssign) -> Result<()> {
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
    fn augmented_assign(&mut self, a: &ast::StmtAugAssign) -> Result<()> {
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
    fn while_loop(&mut self, w: &ast::StmtWhile) -> Result<()> {
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
    fn map_body_if(&mut self, i: &ast::StmtIf) -> Result<()> {
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
    fn inlined_return(&mut self, r: &ast::StmtReturn) -> Result<()> {
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
    fn program_return(&mut self, r: &ast::StmtReturn) -> Result<()> {
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
    fn assign(&mut self, target: &Expr, value: Elem) -> Result<()> {
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
                            let s = if self.sdfg.symbols.contains_key(&name)
                                || self.sdfg.containers.contains_key(&name)
                            {
                                self.fresh(&format!("{name}_"))
                            } else {
                                name.clone()
                            };
                            self.declare_symbol(&s);
                            s
                        }
                    };
                    self.assign_symbol(target, &sym, v);
                    self.names.insert(name, Name::Sym(sym));
                    return Ok(());
                }
                if !self.map_ctx.is_empty() {
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
                // A transient of the same shape and type is reused: a name
                // rebound inside a loop must carry its value to the next iteration.
                if let Some(Name::Ref(old)) = self.names.get(&name).cloned()
                    && old.is_plain()
                    && self.sdfg.container(&old.data).is_some_and(|d| d.transient)
                    && Some(old.shape()) == value.shape()
                    && old.dtype == value.dtype()
                {
                    return self.assign_region(target, old, value);
                }
                // Python rebinds the name to a new value.
                let r = match value {
                    Elem::Ref(r)
                        if self.sdfg.container(&r.data).is_some_and(|d| d.transient)
                            && r.is_plain() =>
                    {
                        r
                    }
                    // A name bound to a reshaped view writes through it.
                    Elem::Ref(r) if r.reshaped.is_some() => r,
                    v => {
                        let shape = v.shape().ok_or_else(|| {
                            self.err(
                                target,
                                ErrorKind::Shape("operands do not broadcast".to_owned()),
                            )
                        })?;
                        let r = self.new_transient(&format!("{name}_"), v.dtype(), &shape);
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
    fn write_target(&mut self, target: &Expr) -> Result<(ArrayRef, Option<Vec<Elem>>)> {
        match self.elem(target)? {
            Elem::Ref(r) => Ok((r, None)),
            Elem::Gather(base, index) => Ok((base, Some(index))),
            _ => Err(self.err(
                target,
                unsupported("assignment to something that is not an array region"),
            )),
        }
    }

    fn for_loop(&mut self, f: &ast::StmtFor) -> Result<()> {
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
            let name = var.id.to_string();
            let sym = if self.sdfg.symbols.contains_key(&name) || self.m.symbols.contains_key(&name)
            {
                self.fresh(&format!("{name}_"))
            } else {
                name.clone()
            };
            self.declare_symbol(&sym);
            let saved = self.names.insert(name.clone(), Name::Sym(sym.clone()));
            let body = self.nested(|l| l.body(&f.body))?;
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
            let r = self.body(&f.body);
            self.map_ctx.truncate(depth);
            self.map_level.truncate(depth);
            for (var, old) in saved {
                match old {
                    Some(o) => self.names.insert(var, o),
                    None => self.names.remove(&var),
                };
            }
            return r;
        }
        Err(self.err(
            &*f.iter,
            unsupported("a loop over something other than `range(...)` or `dace.map[...]`"),
        ))
    }

    /// An `if` whose first condition is computed, with its `elif` and
    /// `else` clauses. An `elif` condition on data is computed in the `else`
    /// region of the branches before it, where Python evaluates it (only when
    /// they are not taken: it may read out of bounds when they are, as in
    /// `if i == 0: ... elif A[i - 1] > 0: ...`).
    fn if_chain(
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
    fn condition_states(&mut self, e: &Expr) -> Result<(SymCond, Region)> {
        let mut cond = SymCond::constant(false);
        let pre = self.nested(|l| {
            cond = l.condition(e)?;
            Ok(())
        })?;
        Ok((cond, pre))
    }

    /// A branch or loop condition.
    fn condition(&mut self, e: &Expr) -> Result<SymCond> {
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
    fn sym_cond(&mut self, e: &Expr) -> Result<Option<SymCond>> {
        self.deeper(e, |l| l.sym_cond_inner(e))
    }

    fn sym_cond_inner(&mut self, e: &Expr) -> Result<Option<SymCond>> {
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

    // -- Expressions ---------------------------------------------------------------

    fn sym(&mut self, e: &Expr) -> Result<SymExpr> {
        let v = self.elem(e)?;
        if let Some(s) = v.as_sym() {
            return Ok(s);
        }
        self.host_symbol(e, &v)?.ok_or_else(|| {
            self.err(
                e,
                unsupported(format!(
                    "`{}` must be an integer expression of symbols here",
                    self.m.source.snippet(e.range())
                )),
            )
        })
    }

    fn is_module(&self, e: &Expr, aliases: &[String]) -> bool {
        matches!(e, Expr::Name(n) if aliases.iter().any(|a| a == n.id.as_str()))
    }

    /// `np.name` / `dace.name` / `np.linalg.name`: the attribute's name.
    fn module_func<'e>(&self, func: &'e Expr) -> Option<(&'static str, &'e str)> {
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

    fn elem(&mut self, e: &Expr) -> Result<Elem> {
        self.deeper(e, |l| l.elem_inner(e))
    }

    fn elem_inner(&mut self, e: &Expr) -> Result<Elem> {
        match e {
            Expr::Name(n) => {
                let name = n.id.as_str();
                match self.names.get(name) {
                    Some(Name::Ref(r)) => Ok(Elem::Ref(r.clone())),
                    Some(Name::Sym(s)) => Ok(Elem::Sym(SymExpr::symbol(s.clone()))),
                    Some(Name::Value(v)) => Ok(Elem::Sym(v.clone())),
                    Some(Name::Local(e)) => Ok(e.clone()),
                    None if self.m.symbols.contains_key(name) => {
                        self.declare_symbol(name);
                        Ok(Elem::Sym(SymExpr::symbol(name)))
                    }
                    None => match (self.m.constants.get(name), self.m.symbol_exprs.get(name)) {
                        (Some(value), _) => Ok(Elem::Lit(*value)),
                        (None, Some(expr)) => self.elem(expr),
                        (None, None) => Err(self.err(e, ErrorKind::UnknownName(name.to_owned()))),
                    },
                }
            }
            Expr::NumberLiteral(n) => Ok(Elem::Lit(match &n.value {
                ast::Number::Int(i) => Literal::i64(i.as_i64().ok_or_else(|| {
                    self.err(e, unsupported("an integer literal beyond 64 bits"))
                })?),
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
                Ok(match u.op {
                    ast::UnaryOp::UAdd => x,
                    ast::UnaryOp::USub => match x.as_sym() {
                        Some(s) if x.is_weak() => Elem::Sym(-s),
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
            Expr::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => BinaryOp::And,
                    ast::BoolOp::Or => BinaryOp::Or,
                };
                let mut vals = b.values.iter();
                let first = vals
                    .next()
                    .ok_or_else(|| self.err(b, unsupported("an empty boolean operation")))?;
                let mut acc = Elem::Cast(DType::Bool, Box::new(self.elem(first)?));
                for v in vals {
                    let y = Elem::Cast(DType::Bool, Box::new(self.elem(v)?));
                    acc = Elem::Binary(op, Box::new(acc), Box::new(y), DType::Bool);
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
                    "expression `{}`",
                    first_line(self.m.source.snippet(other.range()))
                )),
            )),
        }
    }

    /// A binary operation with NumPy's promotion (and true division).
    fn binary(&mut self, node: &impl Ranged, op: BinaryOp, x: Elem, y: Elem) -> Result<Elem> {
        // Integer arithmetic on symbols stays symbolic.
        if x.is_weak() && y.is_weak() {
            let e = Elem::Binary(op, Box::new(x.clone()), Box::new(y.clone()), DType::Int64);
            if let Some(s) = e.as_sym() {
                return Ok(Elem::Sym(s));
            }
        }
        let mut t = promote(x.dtype(), x.is_weak(), y.dtype(), y.is_weak());
        if op == BinaryOp::Div && (t.is_integer() || t == DType::Bool) {
            t = DType::Float64;
        }
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            t = DType::Bool;
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

    /// Applies a subscript to a region, and requires the result to be one.
    fn index_region(&mut self, base: ArrayRef, slice: &Expr) -> Result<ArrayRef> {
        match self.index(base, slice)? {
            Elem::Ref(r) => Ok(r),
            _ => Err(self.err(slice, unsupported("indirect access here"))),
        }
    }

    /// Applies a subscript to a region: a region, or an indirect access
    /// ([`Elem::Gather`]) where an index is computed from data.
    ///
    /// A scalar integer index read from data outside map bodies becomes a
    /// symbol the host reads on the transition before its use (as DaCe
    /// assigns symbols from data on interstate edges), so the access stays
    /// a region. Inside a map body, or with an array of indices, every
    /// index is an elementwise value and the access a gather.
    fn index(&mut self, base: ArrayRef, slice: &Expr) -> Result<Elem> {
        let items: Vec<&Expr> = match slice {
            Expr::Tuple(t) => t.elts.iter().collect(),
            one => vec![one],
        };
        // Per visible axis of `base`: its index as an elementwise value, and
        // whether some index is data (then the access is a gather).
        let mut gather: Vec<Elem> = Vec::new();
        let mut data_index = false;
        let mut sliced: Option<&Expr> = None;
        let mut dims = base.dims.clone();
        let mut order = Vec::new();
        let mut visible = base.order.iter().copied();
        for item in items {
            let is_newaxis = matches!(item, Expr::NoneLiteral(_))
                || matches!(item, Expr::Attribute(a) if a.attr.id.as_str() == "newaxis");
            if is_newaxis {
                dims.push(Dim::NewAxis);
                order.push(dims.len() - 1);
                sliced = Some(item);
                continue;
            }
            let d = visible
                .next()
                .ok_or_else(|| self.err(item, ErrorKind::Shape("too many indices".to_owned())))?;
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
                    let lo = match &sl.lower {
                        Some(e) => norm(self, e)?,
                        None => SymExpr::int(0),
                    };
                    let hi = match &sl.upper {
                        Some(e) => norm(self, e)?,
                        None => len.clone(),
                    };
                    let st = match &sl.step {
                        Some(e) => self.sym(e)?,
                        None => SymExpr::int(1),
                    };
                    let Some(k) = st.as_int().filter(|k| *k > 0) else {
                        return Err(self.err(
                            item,
                            unsupported("a slice step that is not a positive constant"),
                        ));
                    };
                    let n = if k == 1 {
                        &hi - &lo
                    } else {
                        (&hi - &lo + (k - 1)).floor_div(&SymExpr::int(k))
                    };
                    dims[d] = Dim::Range {
                        start: &start + &(&step * &lo),
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
                        // Indirect: `len + i` for a negative index, as NumPy.
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
                    let i = if i.as_int().is_some_and(|k| k < 0) {
                        &len + &i
                    } else {
                        i
                    };
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
        Ok(Elem::Ref(ArrayRef {
            data: base.data,
            dtype: base.dtype,
            dims,
            order,
            reshaped: base.reshaped,
        }))
    }

    /// A scalar integer read from data outside map bodies, as a fresh symbol
    /// the host assigns on the transition before its use (`None` for array
    /// values and inside map bodies, where data stays elementwise).
    fn host_symbol(&mut self, node: &impl Ranged, v: &Elem) -> Result<Option<SymExpr>> {
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
        let sym = self.fresh("__data");
        self.declare_symbol(&sym);
        self.assign_symbol(node, &sym, SymExpr::read(&r.data, r.index(&[])));
        Ok(Some(SymExpr::symbol(sym)))
    }

    // -- Calls -------------------------------------------------------------------------

    fn kwarg<'e>(c: &'e ast::ExprCall, name: &str) -> Option<&'e Expr> {
        c.arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == name))
            .map(|k| &k.value)
    }

    fn call(&mut self, c: &ast::ExprCall) -> Result<Elem> {
        // A keyword this frontend does not implement is an error, never
        // silently dropped (`np.max(x, initial=v)` would change the result).
        if self.module_func(&c.func).is_some()
            && let Some(k) = c.arguments.keywords.iter().find(|k| {
                !k.arg.as_ref().is_some_and(|a| {
                    ["out", "where", "axis", "keepdims", "dtype", "axes"].contains(&a.id.as_str())
                })
            })
        {
            let name = k.arg.as_ref().map_or("**", |a| a.id.as_str());
            return Err(self.err(
                k,
                unsupported(format!(
                    "the keyword `{name}` of `{}`",
                    self.m.source.snippet(c.func.range())
                )),
            ));
        }
        // `np.ufunc(..., out=X)`: compute, then assign into X; with
        // `where=mask`, only where the mask holds (X keeps its values elsewhere).
        if let Some(out) = Self::kwarg(c, "out")
            && self.module_func(&c.func).is_some_and(|(m, _)| m == "np")
        {
            let (target, None) = self.write_target(out)? else {
                return Err(self.err(out, unsupported("an indirect `out=` argument")));
            };
            let value = self.call_value(c)?;
            let value = match Self::kwarg(c, "where") {
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
        if let Some(w) = Self::kwarg(c, "where") {
            return Err(self.err(
                w,
                unsupported("`where=` without `out=` (the other elements would be undefined)"),
            ));
        }
        // `np.add.outer(a, b)` and friends.
        if let Expr::Attribute(a) = &*c.func
            && a.attr.id.as_str() == "outer"
            && let Some(("np", ufunc)) = self.module_func(&a.value)
        {
            return self.outer(c, ufunc);
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
    fn outer(&mut self, c: &ast::ExprCall, ufunc: &str) -> Result<Elem> {
        let op = arithmetic_ufunc(ufunc)
            .ok_or_else(|| self.err(c, unsupported(format!("`np.{ufunc}.outer`"))))?;
        let [x, y] = &c.arguments.args[..] else {
            return Err(self.err(c, unsupported("`outer` with other than two arguments")));
        };
        let (x, y) = (self.elem(x)?, self.elem(y)?);
        let (mut a, mut b) = (self.plain(c, x)?, self.plain(c, y)?);
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
        self.binary(c, op, Elem::Ref(a), Elem::Ref(b))
    }

    /// Methods of arrays.
    fn method(&mut self, c: &ast::ExprCall, receiver: &Expr, name: &str) -> Result<Elem> {
        let x = self.elem(receiver)?;
        let args = &c.arguments.args;
        match name {
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
    fn reduction(
        &mut self,
        c: &ast::ExprCall,
        x: Elem,
        name: &str,
        positional_axis: Option<&Expr>,
    ) -> Result<Elem> {
        let axis = match Self::kwarg(c, "axis").or(positional_axis) {
            None | Some(Expr::NoneLiteral(_)) => None,
            Some(Expr::Tuple(t)) => Some(
                t.elts
                    .iter()
                    .map(|a| self.sym(a))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Some(a) => Some(vec![self.sym(a)?]),
        };
        let keepdims =
            matches!(Self::kwarg(c, "keepdims"), Some(Expr::BooleanLiteral(b)) if b.value);
        let op = match name {
            "sum" | "mean" => Wcr::Sum,
            "prod" => Wcr::Product,
            "max" | "amax" => Wcr::Max,
            _ => Wcr::Min,
        };
        self.reduce(c, x, op, axis, keepdims, name == "mean")
    }

    /// A contiguous reshape, evaluated into a new array (element `k` of the
    /// result in row-major order is element `k` of the source). The result
    /// is a copy, so writing into it later is refused rather than lost.
    fn reshape(&mut self, node: &impl Ranged, x: Elem, shape: Vec<SymExpr>) -> Result<Elem> {
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

    fn call_value(&mut self, c: &ast::ExprCall) -> Result<Elem> {
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
                unsupported(format!(
                    "call of `{}`",
                    self.m.source.snippet(c.func.range())
                )),
            ));
        };
        if module == "np"
            && let Some(op) = arithmetic_ufunc(name)
        {
            let [x, y] = &c.arguments.args[..] else {
                return Err(self.err(
                    c,
                    unsupported(format!("`np.{name}` with other than two arguments")),
                ));
            };
            let (x, y) = (self.elem(x)?, self.elem(y)?);
            return self.binary(c, op, x, y);
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
        if (module, name) == ("np", "reshape") {
            let x = self.elem(arg(0)?)?;
            let shape = self.shape_arg(arg(1)?)?;
            return self.reshape(c, x, shape);
        }
        let intrinsic = match name {
            "sqrt" => Some(Intrinsic::Sqrt),
            "exp" => Some(Intrinsic::Exp),
            "log" => Some(Intrinsic::Log),
            "sin" => Some(Intrinsic::Sin),
            "cos" => Some(Intrinsic::Cos),
            "tan" => Some(Intrinsic::Tan),
            "tanh" => Some(Intrinsic::Tanh),
            "arctan" => Some(Intrinsic::Atan),
            "arctan2" => Some(Intrinsic::Atan2),
            "power" => Some(Intrinsic::Pow),
            "abs" | "absolute" => Some(Intrinsic::Abs),
            "floor" => Some(Intrinsic::Floor),
            "ceil" => Some(Intrinsic::Ceil),
            "maximum" => Some(Intrinsic::Max),
            "minimum" => Some(Intrinsic::Min),
            "real" => Some(Intrinsic::Real),
            "imag" => Some(Intrinsic::Imag),
            "conj" | "conjugate" => Some(Intrinsic::Conj),
            "isnan" => Some(Intrinsic::IsNan),
            _ => None,
        };
        if module == "np"
            && let Some(f) = intrinsic
        {
            return self.ufunc(c, f);
        }
        match (module, name) {
            ("np", "logical_not") => {
                let x = Elem::Cast(DType::Bool, Box::new(self.elem(arg(0)?)?));
                Ok(Elem::Unary(UnaryOp::Not, Box::new(x)))
            }
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
                let axis = match Self::kwarg(c, "axis").or(args.get(1)) {
                    None | Some(Expr::NoneLiteral(_)) => None,
                    Some(a) => Some(vec![self.sym(a)?]),
                };
                let mean = self.reduce(c, x.clone(), Wcr::Sum, axis.clone(), true, true)?;
                let d = self.binary(c, BinaryOp::Sub, x, mean)?;
                let sq = self.binary(c, BinaryOp::Mul, d.clone(), d)?;
                let var = self.reduce(c, sq, Wcr::Sum, axis, false, true)?;
                let t = var.dtype();
                Ok(Elem::Call(Intrinsic::Sqrt, vec![var], t))
            }
            ("np", "eye") => {
                let n = self.sym(arg(0)?)?;
                let dtype = match Self::kwarg(c, "dtype") {
                    Some(d) => self.dtype_arg(d)?,
                    None => DType::Float64,
                };
                let r = self.new_transient("eye_", dtype, &[n.clone(), n.clone()]);
                let idx = self.new_transient("eye_idx_", DType::Int64, std::slice::from_ref(&n));
                self.elementwise_fill(c, &idx, &SymExpr::symbol("__k"))?;
                let row = Elem::Ref(self.index_region(idx.clone(), &newaxis_last())?);
                let col = Elem::Ref(self.index_region(idx, &newaxis_first())?);
                let eq = Elem::Binary(BinaryOp::Eq, Box::new(row), Box::new(col), DType::Int64);
                let v = Elem::Select(
                    Box::new(eq),
                    Box::new(Elem::Lit(Literal::i64(1))),
                    Box::new(Elem::Lit(Literal::i64(0))),
                    dtype,
                );
                self.assign_region(c, r.clone(), v)?;
                Ok(Elem::Ref(r))
            }
            ("np", "transpose") => {
                let x = self.elem(arg(0)?)?;
                let mut r = match x {
                    Elem::Ref(r) => r,
                    other => self.materialize(c, other)?,
                };
                match Self::kwarg(c, "axes").or(args.get(1)) {
                    None | Some(Expr::NoneLiteral(_)) => r.order.reverse(),
                    Some(axes) => {
                        // Output axis k is input axis axes[k] (negative
                        // axes count from the end).
                        let rank = r.order.len();
                        let items: Vec<&Expr> = match axes {
                            Expr::Tuple(t) => t.elts.iter().collect(),
                            Expr::List(l) => l.elts.iter().collect(),
                            other => vec![other],
                        };
                        let mut perm = Vec::with_capacity(items.len());
                        for a in items {
                            let k = self.sym(a)?.as_int().ok_or_else(|| {
                                self.err(a, unsupported("transpose axes that are not constants"))
                            })?;
                            let k = if k < 0 { k + rank as i64 } else { k };
                            perm.push(usize::try_from(k).unwrap_or(usize::MAX));
                        }
                        let mut sorted = perm.clone();
                        sorted.sort_unstable();
                        if sorted != (0..rank).collect::<Vec<_>>() {
                            return Err(self.err(
                                axes,
                                ErrorKind::Shape(format!(
                                    "transpose axes {perm:?} are not a permutation of {rank} axes"
                                )),
                            ));
                        }
                        r.order = perm.iter().map(|&k| r.order[k]).collect();
                    }
                }
                Ok(Elem::Ref(r))
            }
            (
                "np",
                "zeros" | "ones" | "empty" | "ndarray" | "zeros_like" | "ones_like" | "empty_like"
                | "copy",
            ) => {
                let like = name.ends_with("_like") || name == "copy";
                let (shape, mut dtype) = if like {
                    let x = self.elem(arg(0)?)?;
                    (x.shape().unwrap_or_default(), x.dtype())
                } else {
                    (self.shape_arg(arg(0)?)?, DType::Float64)
                };
                if let Some(d) = Self::kwarg(c, "dtype").or(if like { None } else { args.get(1) }) {
                    dtype = self.dtype_arg(d)?;
                }
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
            _ => Err(self.err(
                c,
                unsupported(format!(
                    "call of `{}`",
                    self.m.source.snippet(c.func.range())
                )),
            )),
        }
    }

    /// A shape argument: `(N, M)`, `[N, M]`, `N`, or `x.shape`.
    fn shape_arg(&mut self, e: &Expr) -> Result<Vec<SymExpr>> {
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
    fn dtype_arg(&mut self, d: &Expr) -> Result<DType> {
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
                "`{}` is not a dtype",
                self.m.source.snippet(d.range())
            )),
        ))
    }

    /// Inlines a call of another `@dace.program` of the module: its
    /// parameters are bound to the argument regions (views, not copies, as in
    /// Python), the size symbols of its annotations to the arguments'
    /// extents (which may be loop variables of the caller), and its tail
    /// `return` writes the call's value.
    /// Inlines a program call whose value is one value.
    fn inline(&mut self, c: &ast::ExprCall, f: &ast::StmtFunctionDef) -> Result<Elem> {
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
    fn call_results(&mut self, c: &ast::ExprCall) -> Result<Option<Vec<Elem>>> {
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

    fn inline_results(
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
        if c.arguments.args.len() + c.arguments.keywords.len() != params.len() {
            return Err(self.err(
                c,
                unsupported(format!(
                    "calling `{}` with {} arguments; it takes {}",
                    f.name.id,
                    c.arguments.args.len() + c.arguments.keywords.len(),
                    params.len()
                )),
            ));
        }
        let mut args = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let name = p.parameter.name.id.as_str();
            let e = match c.arguments.args.get(k) {
                Some(a) => a,
                None => Self::kwarg(c, name).ok_or_else(|| {
                    self.err(c, unsupported(format!("missing argument `{name}`")))
                })?,
            };
            args.push(self.elem(e)?);
        }
        let mut bound: BTreeMap<String, Name> = BTreeMap::new();
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
                // A scalar computed in a map body stays a value of the iteration.
                _ if !self.map_ctx.is_empty()
                    && !matches!(arg, Elem::Ref(_))
                    && arg.shape().is_some_and(|s| s.is_empty()) =>
                {
                    Name::Local(arg)
                }
                _ => {
                    let r = match arg {
                        Elem::Ref(r) => r,
                        other => self.materialize(c, other)?,
                    };
                    Name::Ref(r)
                }
            };
            bound.insert(name, binding);
        }
        let saved = std::mem::replace(&mut self.names, bound);
        map_updated_names(&f.body, !self.map_ctx.is_empty(), &mut self.map_updated);
        self.inlining.push(InlineFrame { result: None });
        let r = self.body(&f.body);
        let frame = self.inlining.pop();
        self.names = saved;
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
    fn elementwise_fill(
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

    fn ufunc(&mut self, c: &ast::ExprCall, f: Intrinsic) -> Result<Elem> {
        let args = c
            .arguments
            .args
            .iter()
            .map(|a| self.elem(a))
            .collect::<Result<Vec<_>>>()?;
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
        // Transcendental functions of integers compute in float64, as in NumPy.
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
            t = DType::Float64;
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

    // -- Library operations ------------------------------------------------------------

    /// A region that library nodes can take: `e` itself when it is a plain
    /// region, else a transient holding its value.
    fn plain(&mut self, node: &impl Ranged, e: Elem) -> Result<ArrayRef> {
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
    fn whole_source(&self, r: &ArrayRef) -> Option<ArrayRef> {
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

    fn materialize(&mut self, node: &impl Ranged, e: Elem) -> Result<ArrayRef> {
        if !self.map_ctx.is_empty() && !matches!(e, Elem::Ref(_)) {
            return Err(self.err(
                node,
                unsupported("an array temporary inside a `dace.map` body"),
            ));
        }
        self.plain(node, e)
    }

    fn library(
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

    fn matmul(&mut self, node: &impl Ranged, x: Elem, y: Elem) -> Result<Elem> {
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

    fn reduce(
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

    // -- Elementwise assignment ------------------------------------------------------------

    /// Whether the iterations of the enclosing maps write distinct elements
    /// of `target`: every map parameter is, on its own, the index of one of
    /// the target's dimensions (so different iterations differ there).
    fn owns_element(&self, target: &ArrayRef) -> bool {
        let index = target.index(&[]);
        self.map_ctx.iter().all(|(p, _)| {
            let param = SymExpr::symbol(p.clone());
            index.iter().any(|i| (i - &param).as_int().is_some())
        }) && target.order.is_empty()
    }

    /// `target[...] = value`, elementwise with broadcasting, as one map.
    fn assign_region(&mut self, node: &impl Ranged, target: ArrayRef, value: Elem) -> Result<()> {
        self.write_region(node, target, value, None)
    }

    /// `target[...] = value`, or with `wcr` `target[...] op= value` as a
    /// write-conflict resolution, elementwise with broadcasting, as one map.
    fn write_region(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        value: Elem,
        wcr: Option<Wcr>,
    ) -> Result<()> {
        self.write(node, target, None, value, wcr)
    }

    /// `target[...] = value` (with `scatter`, `target[i0, i1, ...] = value`
    /// through index values, a store through a pointer connector), or with
    /// `wcr` the combining update, elementwise with broadcasting, as one map.
    fn write(
        &mut self,
        node: &impl Ranged,
        target: ArrayRef,
        scatter: Option<Vec<Elem>>,
        value: Elem,
        wcr: Option<Wcr>,
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
        let tshape = match &scatter {
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
        let vshape = value.shape().ok_or_else(|| {
            self.err(
                node,
                ErrorKind::Shape("operands do not broadcast".to_owned()),
            )
        })?;
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
        let code = cast(code, value.dtype(), target.dtype);
        let (stmt, out_conn, out_memlet) = match &scatter {
            None => (
                code::Stmt::assign("__out", code),
                Connector::scalar("__out", target.dtype),
                Memlet::new(&target.data, Subset::at(target.index(&axis_params))),
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
    fn load_index(
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
                out.push(cast(self.code(node, i, conn_of)?, i.dtype(), DType::Int64));
            }
        }
        Ok(out)
    }

    /// Tasklet code for an elementwise expression.
    fn code(
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
                code::Expr::unary(*op, cast(self.code(node, x, conn_of)?, x.dtype(), t))
            }
            Elem::Binary(op, x, y, t) => code::Expr::binary(
                *op,
                cast(self.code(node, x, conn_of)?, x.dtype(), *t),
                cast(self.code(node, y, conn_of)?, y.dtype(), *t),
            ),
            Elem::Call(f, args, t) => code::Expr::call(
                *f,
                args.iter()
                    .map(|a| Ok(cast(self.code(node, a, conn_of)?, a.dtype(), *t)))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Elem::Select(c, a, b, t) => code::Expr::select(
                cast(self.code(node, c, conn_of)?, c.dtype(), DType::Bool),
                cast(self.code(node, a, conn_of)?, a.dtype(), *t),
                cast(self.code(node, b, conn_of)?, b.dtype(), *t),
            ),
            Elem::Cast(t, x) => cast(self.code(node, x, conn_of)?, x.dtype(), *t),
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

/// The value a write-conflict resolution leaves unchanged, for a write that
/// a false predicate turns into no update.
fn wcr_identity(w: Wcr, dtype: DType) -> Option<Literal> {
    let unit = match w {
        Wcr::Sum => 0.0,
        Wcr::Product => 1.0,
        Wcr::Min | Wcr::Max => return None,
    };
    Literal::f64(unit)
        .with_dtype(dtype)
        .or_else(|| Literal::i64(unit as i64).with_dtype(dtype))
}

/// Casts `e` of type `from` to `to` (a no-op when equal; literals are retyped).
fn cast(e: code::Expr, from: DType, to: DType) -> code::Expr {
    if from == to {
        return e;
    }
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

/// NumPy's arithmetic ufuncs by name.
fn arithmetic_ufunc(name: &str) -> Option<BinaryOp> {
    Some(match name {
        "add" => BinaryOp::Add,
        "subtract" => BinaryOp::Sub,
        "multiply" => BinaryOp::Mul,
        "divide" | "true_divide" => BinaryOp::Div,
        "floor_divide" => BinaryOp::FloorDiv,
        "mod" | "remainder" => BinaryOp::Mod,
        "bitwise_and" => BinaryOp::BitAnd,
        "bitwise_or" => BinaryOp::BitOr,
        "bitwise_xor" => BinaryOp::BitXor,
        "left_shift" => BinaryOp::Shl,
        "right_shift" => BinaryOp::Shr,
        "equal" => BinaryOp::Eq,
        "not_equal" => BinaryOp::Ne,
        "less" => BinaryOp::Lt,
        "less_equal" => BinaryOp::Le,
        "greater" => BinaryOp::Gt,
        "greater_equal" => BinaryOp::Ge,
        "logical_and" => BinaryOp::And,
        "logical_or" => BinaryOp::Or,
        _ => return None,
    })
}

fn binary_op(op: ast::Operator) -> Option<BinaryOp> {
    Some(match op {
        ast::Operator::Add => BinaryOp::Add,
        ast::Operator::Sub => BinaryOp::Sub,
        ast::Operator::Mult => BinaryOp::Mul,
        ast::Operator::Div => BinaryOp::Div,
        ast::Operator::FloorDiv => BinaryOp::FloorDiv,
        ast::Operator::Mod => BinaryOp::Mod,
        ast::Operator::Pow => BinaryOp::Pow,
        ast::Operator::BitAnd => BinaryOp::BitAnd,
        ast::Operator::BitOr => BinaryOp::BitOr,
        ast::Operator::BitXor => BinaryOp::BitXor,
        ast::Operator::LShift => BinaryOp::Shl,
        ast::Operator::RShift => BinaryOp::Shr,
        ast::Operator::MatMult => return None,
    })
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

/// The subscript `[:, None]` and `[None, :]`, for building `np.eye`.
fn newaxis_last() -> Expr {
    parse_subscript("x[:, None]")
}

fn newaxis_first() -> Expr {
    parse_subscript("x[None, :]")
}

fn parse_subscript(text: &str) -> Expr {
    match ruff_python_parser::parse_expression(text).map(|p| p.into_expr()) {
        Ok(Expr::Subscript(s)) => *s.slice,
        _ => Expr::NoneLiteral(ast::ExprNoneLiteral::default()),
    }
}

fn join(items: &[SymExpr]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
