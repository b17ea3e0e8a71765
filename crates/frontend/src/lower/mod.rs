//! Lowering of one `@dace.program` to an SDFG.
//!
//! The [`Lowerer`] walks the program once; its methods are grouped by what
//! they lower: statements, expressions, calls, library operations and
//! elementwise assignment, one file each.

mod calls;
mod elementwise;
mod explicit;
mod expressions;
mod library;
mod numpy;
mod statements;

use crate::module::Module;
use crate::values::{ArrayRef, Dim, Elem, MAX_ELEM_SIZE, broadcast, promote, reindex, sym_code};
use crate::{ErrorKind, FrontendError};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use sdfg_ir::builder::{BuildError, StateBuilder};
use sdfg_ir::code::{self, BinaryOp, Intrinsic, UnaryOp};
use sdfg_ir::{
    Assignment, BlockKind, ConditionalBlock, Connector, ControlBlock, DType, DataDesc, LibraryOp,
    Literal, LoopBlock, Map, Memlet, Range, Region, Schedule, Sdfg, Storage, Subset, SymCond,
    SymExpr, Wcr,
};
use std::cell::RefCell;
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
    /// A local whose scope ended: one a `dace.map` body bound (its value
    /// was one point's, and the points ran in parallel), or one a loop
    /// inside such a body bound (its value was one iteration's). Reading it
    /// is the program's mistake, reported with this message; assigning it
    /// rebinds it.
    Expired(String),
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
    /// Every `dace.map` parameter used so far: a symbol (a loop variable,
    /// an integer assigned later) must not take such a name, since a map
    /// parameter may not shadow an SDFG symbol.
    map_params: BTreeSet<String>,
    /// Names updated (`x += ...`) inside a `dace.map` body: an integer
    /// assigned to one of them is a scalar container, never a symbol, since
    /// a map's iterations cannot assign a symbol (they combine into data).
    map_updated: BTreeSet<String>,
    /// For each `for` loop being lowered inside a `dace.map` body: the
    /// depth of `map_ctx` there and the body's locals bound before the loop.
    /// Locals are expressions of the point, substituted where used, so a
    /// loop cannot carry one from an iteration to the next: assigning one
    /// of those inside the loop is refused.
    map_loops: Vec<(usize, BTreeSet<String>)>,
    /// Scalars declared with a type (`x: dace.uint16 = ...`,
    /// `dace.define_local_scalar`): assigning to their name writes into them,
    /// converted to their type, as in DaCe, instead of rebinding the name.
    declared: BTreeSet<String>,
    /// Symbols holding host reads of data (`__data3 = A_row[i]`), by read,
    /// reused while nothing can have changed the value: forgotten when a
    /// state writes the container, a symbol is assigned, or control flow
    /// branches or loops.
    host_reads: Vec<(SymExpr, String)>,
    /// Keyword arguments some lowering read, by source position.
    keywords_read: RefCell<BTreeSet<ruff_text_size::TextSize>>,
    /// How many statements of the program being lowered (or inlined) bind
    /// each name ([`binding_sites`]). A name bound once to a basic slice is
    /// a view of it, as in NumPy; one bound more often holds a copy, since
    /// which array it names could depend on the path taken.
    bindings: BTreeMap<String, usize>,
    /// The statement being lowered, innermost.
    statement: Option<ruff_text_size::TextRange>,
    /// The statement each block label was pushed for.
    block_origin: BTreeMap<String, ruff_text_size::TextRange>,
    /// Transients holding a copy of a view (a name bound more than once was
    /// bound to a basic slice): the name and the line. Writing through it
    /// would have to reach the viewed array, so it is refused.
    view_copies: BTreeMap<String, (String, usize)>,
    /// The output connectors of the explicit tasklet being lowered, by
    /// name: assigning one writes its memlet ([`explicit`]).
    tasklet_outputs: BTreeMap<String, explicit::OutputMemlet>,
    /// Symbols a signature's types introduced (extents the module does not
    /// declare): arguments, as the module's symbols are.
    signature_symbols: BTreeSet<String>,
}

/// How many statements of `f` bind each name: its parameters, assignment
/// targets (plain names and unpacked ones), annotated assignments and
/// loop targets, at any depth. Augmented assignments are not counted: on
/// arrays they update in place, which a view supports.
fn binding_sites(f: &ast::StmtFunctionDef) -> BTreeMap<String, usize> {
    fn target(e: &Expr, out: &mut BTreeMap<String, usize>) {
        match e {
            Expr::Name(n) => *out.entry(n.id.to_string()).or_default() += 1,
            Expr::Tuple(t) => t.elts.iter().for_each(|x| target(x, out)),
            Expr::List(l) => l.elts.iter().for_each(|x| target(x, out)),
            Expr::Starred(s) => target(&s.value, out),
            _ => {}
        }
    }
    fn body(stmts: &[Stmt], out: &mut BTreeMap<String, usize>) {
        for s in stmts {
            match s {
                Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, out)),
                Stmt::AnnAssign(a) => target(&a.target, out),
                Stmt::For(f) => {
                    target(&f.target, out);
                    body(&f.body, out);
                    body(&f.orelse, out);
                }
                Stmt::While(w) => {
                    body(&w.body, out);
                    body(&w.orelse, out);
                }
                Stmt::If(i) => {
                    body(&i.body, out);
                    for c in &i.elif_else_clauses {
                        body(&c.body, out);
                    }
                }
                Stmt::With(w) => {
                    for item in &w.items {
                        if let Some(v) = &item.optional_vars {
                            target(v, out);
                        }
                    }
                    body(&w.body, out);
                }
                _ => {}
            }
        }
    }
    let mut out = BTreeMap::new();
    for p in &f.parameters.args {
        *out.entry(p.parameter.name.id.to_string()).or_default() += 1;
    }
    body(&f.body, &mut out);
    out
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

pub(crate) fn lower_program(
    m: &Module,
    f: &ast::StmtFunctionDef,
    signature: &BTreeMap<String, String>,
) -> Result<Sdfg> {
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
        map_loops: Vec::new(),
        map_params: BTreeSet::new(),
        declared: BTreeSet::new(),
        host_reads: Vec::new(),
        keywords_read: RefCell::new(BTreeSet::new()),
        bindings: binding_sites(f),
        view_copies: BTreeMap::new(),
        tasklet_outputs: BTreeMap::new(),
        signature_symbols: BTreeSet::new(),
        statement: None,
        block_origin: BTreeMap::new(),
    };
    if let Some(&name) = m
        .non_ascii_names
        .iter()
        .find(|r| f.range().contains_range(**r))
    {
        return Err(m.source.error(
            name,
            unsupported(format!(
                "the identifier {}: names must be ASCII (they become SDFG container names and C++ identifiers)",
                m.source.quoted(name)
            )),
        ));
    }
    map_updated_names(&f.body, false, &mut l.map_updated);
    l.parameters(f, signature)?;
    l.body(&f.body)?;
    let mut sdfg = l.sdfg;
    sdfg.body = l.stack.pop().unwrap_or_default();
    // Symbols used by shapes come after the containers, in name order.
    let used: Vec<String> = sdfg
        .symbols
        .keys()
        .filter(|s| {
            (m.symbols.contains_key(*s) || l.signature_symbols.contains(*s))
                && !sdfg.arguments.contains(s)
        })
        .cloned()
        .collect();
    sdfg.arguments.extend(used);
    if let Err(errors) = sdfg_ir::validate(&sdfg) {
        // Reported at the statement whose lowering made the first invalid
        // block (its label names it), or at the `def`.
        let at = origin_of_first_error(&errors, &l.block_origin).unwrap_or(f.range().start());
        // Subsets outside their arrays by constants come from indices the
        // program wrote (`for d in dace.map[-10:120]: b[d] = ...`): NumPy's
        // IndexError, the program's mistake, not the compiler's.
        use sdfg_ir::validate::{EdgeError, ValidationError as V};
        let out_of_bounds = errors.0.iter().all(|e| {
            matches!(
                e,
                V::Edge {
                    error: EdgeError::OutOfBounds { .. }
                        | EdgeError::OutOfBoundsInScope { .. }
                        | EdgeError::ReversedRange { .. },
                    ..
                }
            )
        });
        return Err(FrontendError {
            at: m.source.position(at.to_usize()),
            kind: if out_of_bounds {
                ErrorKind::Value(format!("indices out of bounds:\n{errors}"))
            } else {
                ErrorKind::Invalid(errors.to_string())
            },
        });
    }
    Ok(sdfg)
}

/// Where the statement that made the first invalid block (or state) of
/// `errors` starts, as `origins` (block label to statement) records it.
fn origin_of_first_error(
    errors: &sdfg_ir::validate::ValidationErrors,
    origins: &BTreeMap<String, ruff_text_size::TextRange>,
) -> Option<ruff_text_size::TextSize> {
    use sdfg_ir::validate::ValidationError as V;
    errors.0.iter().find_map(|e| {
        let block = match e {
            V::Node { state, .. } | V::Edge { state, .. } => state.as_str(),
            V::Block { block, .. } => block.rsplit('/').next().unwrap_or(block),
            _ => return None,
        };
        origins.get(block).map(|r| r.start())
    })
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

    /// The SDFG symbol for a Python name that becomes one (a loop
    /// variable, an integer assigned from symbols): the name itself unless
    /// a symbol, a container or a map parameter already has it.
    fn symbol_name(&mut self, name: &str) -> String {
        if self.sdfg.symbols.contains_key(name)
            || self.m.symbols.contains_key(name)
            || self.sdfg.containers.contains_key(name)
            || self.map_params.contains(name)
        {
            self.fresh(&format!("{name}_"))
        } else {
            name.to_owned()
        }
    }

    fn declare_symbol(&mut self, name: &str) {
        let dtype = self.m.symbols.get(name).copied().unwrap_or(DType::Int64);
        self.sdfg.symbols.entry(name.to_owned()).or_insert(dtype);
    }

    fn parameters(
        &mut self,
        f: &ast::StmtFunctionDef,
        signature: &BTreeMap<String, String>,
    ) -> Result<()> {
        let p = &f.parameters;
        if let Some(unknown) = signature.keys().find(|k| {
            !p.args
                .iter()
                .any(|a| a.parameter.name.id.as_str() == k.as_str())
        }) {
            return Err(self.err(
                f,
                ErrorKind::Annotation(format!(
                    "the signature gives a type to `{unknown}`, which is no parameter of `{}`",
                    f.name.id
                )),
            ));
        }
        if !p.posonlyargs.is_empty()
            || p.vararg.is_some()
            || p.kwarg.is_some()
            || !p.kwonlyargs.is_empty()
        {
            return Err(self.err(&**p, unsupported("only plain positional parameters")));
        }
        for param in &p.args {
            let name = param.parameter.name.id.to_string();
            if self.sdfg.containers.contains_key(&name) {
                return Err(self.err(
                    &param.parameter,
                    ErrorKind::Syntax(format!(
                        "duplicate argument `{name}` in function definition"
                    )),
                ));
            }
            let mut storage = Storage::Default;
            let (dtype, shape) = match (param.parameter.annotation.as_deref(), signature.get(&name))
            {
                (Some(ann), None) => {
                    let (ann, given) = self.storage_annotation(ann)?;
                    storage = given;
                    self.annotation(ann)?
                }
                (Some(_), Some(_)) => {
                    return Err(self.err(
                        &param.parameter,
                        ErrorKind::Annotation(format!(
                            "parameter `{name}` is annotated and has a type in the signature too"
                        )),
                    ));
                }
                (None, Some(text)) => self.signature_type(&param.parameter, &name, text)?,
                (None, None) => {
                    return Err(self.err(
                        &param.parameter,
                        ErrorKind::Annotation(format!(
                            "parameter `{name}` has no annotation (DaCe types it from the arguments of a call; give its type in a signature: `sdfgc --signature {name}=float64[N]`, or the manifest's `signature`)"
                        )),
                    ));
                }
            };
            let desc = match &shape {
                None => DataDesc::scalar(dtype),
                Some(s) => DataDesc::array(dtype, s.clone()),
            }
            .with_storage(storage);
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

    /// The type of parameter `name` written in a signature (`float64[N,
    /// M]`, `int32`, or an annotation as the module would write it): an
    /// error in it is reported at the parameter, naming the text.
    fn signature_type(
        &mut self,
        at: &ast::Parameter,
        name: &str,
        text: &str,
    ) -> Result<(DType, Option<Vec<SymExpr>>)> {
        let bad = |l: &Self, why: String| {
            l.err(
                at,
                ErrorKind::Annotation(format!("the signature's type `{text}` of `{name}`: {why}")),
            )
        };
        let e = sdfg_python_syntax::parse_expression(text).map_err(|e| bad(self, e.to_string()))?;
        // A bare NumPy dtype name (`float64`, `int32[N]`).
        let bare = |e: &Expr| match e {
            Expr::Name(n) => DType::from_name(n.id.as_str()),
            _ => None,
        };
        let parsed = match (&e, bare(&e)) {
            (_, Some(d)) => Ok((d, None)),
            (Expr::Subscript(s), _) if let Some(d) = bare(&s.value) => {
                let items: Vec<&Expr> = match &*s.slice {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    one => vec![one],
                };
                let mut shape = Vec::new();
                for x in items {
                    // A size the module does not declare is a symbol of its
                    // own, as DaCe makes one of each unknown extent.
                    if let Expr::Name(n) = x
                        && !self.m.symbols.contains_key(n.id.as_str())
                        && !self.m.constants.contains_key(n.id.as_str())
                        && !self.names.contains_key(n.id.as_str())
                    {
                        self.declare_symbol(n.id.as_str());
                        self.signature_symbols.insert(n.id.to_string());
                        self.names
                            .insert(n.id.to_string(), Name::Sym(n.id.to_string()));
                    }
                    match self.elem(x).ok().and_then(|v| v.as_sym()) {
                        Some(v) => shape.push(v),
                        None => {
                            return Err(bad(
                                self,
                                "a dimension must be an integer expression of symbols".to_owned(),
                            ));
                        }
                    }
                }
                Ok((d, Some(shape)))
            }
            (e, None) => self.annotation(e),
        };
        let (dtype, shape) = parsed.map_err(|err| bad(self, err.kind.to_string()))?;
        if let Some(s) = &shape {
            self.check_dimensions(at, s, dtype)?;
        }
        Ok((dtype, shape))
    }

    /// An annotation's storage suffix, DaCe's `dace.float64[N] @
    /// dace.StorageType.GPU_Global`: the type without it, and the storage
    /// (`Default` where there is none). An argument may live in host or
    /// device global memory; shared memory and registers exist only inside
    /// kernels.
    fn storage_annotation<'e>(&self, e: &'e Expr) -> Result<(&'e Expr, Storage)> {
        let Expr::BinOp(b) = e else {
            return Ok((e, Storage::Default));
        };
        if b.op != ast::Operator::MatMult {
            return Ok((e, Storage::Default));
        }
        // `dace.StorageType.NAME` (under the name the module imports DaCe as).
        let name = match &*b.right {
            Expr::Attribute(a) if self.m.is_dace_attr(&a.value, "StorageType") => a.attr.as_str(),
            _ => {
                return Err(self.err(
                    &*b.right,
                    ErrorKind::Annotation(format!(
                        "{} is not a storage type (`dace.StorageType.GPU_Global`, ...)",
                        self.m.source.quoted(b.right.range())
                    )),
                ));
            }
        };
        match Storage::from_dace_name(name) {
            Some(
                s
                @ (Storage::Default | Storage::Host | Storage::HostPinned | Storage::DeviceGlobal),
            ) => Ok((&*b.left, s)),
            Some(_) => Err(self.err(
                &*b.right,
                ErrorKind::Annotation(format!(
                    "an argument cannot live in `{name}` storage: it exists only inside a kernel"
                )),
            )),
            None => Err(self.err(
                &*b.right,
                unsupported(format!("the storage type `{name}` for an argument")),
            )),
        }
    }

    /// `dace.float64` or `dace.float64[N, M]`.
    fn annotation(&mut self, e: &Expr) -> Result<(DType, Option<Vec<SymExpr>>)> {
        if let Some(d) = self.m.dtype_of(e) {
            return Ok((d, None));
        }
        // A module-level array type (`vec = dace.float64[N]`).
        if let Expr::Name(n) = e
            && let Some(alias) = self.m.array_aliases.get(n.id.as_str())
        {
            return self.annotation(alias);
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
            self.check_dimensions(&*s.slice, &shape, d)?;
            return Ok((d, Some(shape)));
        }
        Err(self.err(
            e,
            ErrorKind::Annotation(format!(
                "{} is not a dtype or array type",
                self.m.source.quoted(e.range())
            )),
        ))
    }

    /// Refuses a shape with a dimension known to be negative, as NumPy
    /// does ("negative dimensions are not allowed"); symbolic extents are
    /// checked when the program runs with concrete symbols.
    /// Constant shapes must also be addressable: their elements and bytes
    /// counted in 64 bits (the validator's layout check, made here so that
    /// the error names the shape at its line).
    fn check_dimensions(&self, node: &impl Ranged, shape: &[SymExpr], dtype: DType) -> Result<()> {
        if let Some(k) = shape.iter().find_map(|d| d.as_int().filter(|&k| k < 0)) {
            return Err(self.err(
                node,
                ErrorKind::Value(format!(
                    "negative dimensions are not allowed (a dimension of {k})"
                )),
            ));
        }
        let layout = SymExpr::exact(|| sdfg_ir::Layout::contiguous(shape.to_vec()));
        match layout.map(|l| l.check(dtype.size_bytes())) {
            Some(Ok(())) => Ok(()),
            _ => Err(self.err(
                node,
                ErrorKind::Value(format!(
                    "an array of {dtype} of shape ({}) does not fit in a 64-bit address space",
                    shape
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            )),
        }
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
        if let Some(r) = self.statement {
            self.block_origin.entry(label.clone()).or_insert(r);
        }
        match &kind {
            // A state forgets the host reads of what it writes.
            BlockKind::State(state) => {
                let written: BTreeSet<&str> = state
                    .nodes()
                    .filter_map(|(id, n)| {
                        let data = n.as_access()?;
                        state.in_edges(id).next().map(|_| data)
                    })
                    .collect();
                self.host_reads
                    .retain(|(read, _)| read.reads().iter().all(|d| !written.contains(d.as_str())));
            }
            _ => self.host_reads.clear(),
        }
        if let Some(r) = self.stack.last_mut() {
            r.blocks.push(ControlBlock::new(label, kind));
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<Region> {
        // Host reads made outside are not assigned on every path into the
        // region (and a loop's later iterations see its own writes), nor
        // those made inside on every path after it.
        self.host_reads.clear();
        self.stack.push(Region::default());
        let r = f(self);
        let region = self.stack.pop().unwrap_or_default();
        self.host_reads.clear();
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
        // A read indexed by the symbol may now read another element.
        self.host_reads
            .retain(|(read, _)| !read.free_symbols().contains(symbol));
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
}

/// The IR operator of a Python binary operator (`@` is a library call, not
/// an operator of tasklet code).
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

/// A shape for messages: `N, M + 1`.
fn join(items: &[SymExpr]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_text_size::{TextRange, TextSize};

    #[test]
    fn an_invalid_sdfg_is_reported_at_the_statement_that_made_its_first_bad_block() {
        use sdfg_ir::validate::{BlockError, ValidationError, ValidationErrors};
        let origins = BTreeMap::from([
            (
                "assign_l7_2".to_owned(),
                TextRange::new(TextSize::from(40), TextSize::from(52)),
            ),
            (
                "for_l6_3".to_owned(),
                TextRange::new(TextSize::from(20), TextSize::from(60)),
            ),
        ]);
        let block = |path: &str| ValidationError::Block {
            sdfg: "f".to_owned(),
            block: path.to_owned(),
            error: BlockError::AssignsContainer {
                name: "x".to_owned(),
            },
        };
        // The innermost label of a block path names the statement.
        let errors = ValidationErrors(vec![block("for_l6_3/assign_l7_2")]);
        assert_eq!(
            origin_of_first_error(&errors, &origins),
            Some(TextSize::from(40))
        );
        // Unknown labels are passed over; none known: no position.
        let errors = ValidationErrors(vec![block("elsewhere"), block("for_l6_3")]);
        assert_eq!(
            origin_of_first_error(&errors, &origins),
            Some(TextSize::from(20))
        );
        let errors = ValidationErrors(vec![block("elsewhere")]);
        assert_eq!(origin_of_first_error(&errors, &origins), None);
    }
}
