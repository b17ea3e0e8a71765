//! Module level: imports, symbols, programs and the `BENCHMARK` metadata.
//!
//! As DaCe does, the compiler reads only the programs and the module-level
//! names they can use: symbols, numeric constants (`BET_M = 0.5`,
//! `M, N, K = 24, 25, 26`), integer expressions of symbols (`N = R**K`),
//! dtype aliases (`datatype = dace.float64`) and other programs. Everything
//! else at module level (test code under `if __name__ == "__main__":`,
//! classes, `try:`, helper functions, other assignments) is ignored; a
//! program that uses a name assigned there gets an error naming it at its
//! use.

use crate::{ErrorKind, FrontendError, SourceMap};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use sdfg_ir::{DType, Literal, Sdfg};
use std::collections::BTreeMap;

/// A parsed source file: its symbols, programs and metadata.
pub struct Module {
    pub(crate) source: SourceMap,
    /// Module-level symbols with their dtypes.
    pub symbols: BTreeMap<String, DType>,
    /// Names the module gives to `dace` and `numpy` (`dc`, `np`, ...).
    pub(crate) dace_alias: Vec<String>,
    /// Local names of the Python package `sdfg_offload`, whose `program`
    /// decorator marks programs as `dace.program` does.
    offload_alias: Vec<String>,
    /// Local names of `sdfg_offload.program` itself (`from sdfg_offload
    /// import program`).
    program_alias: Vec<String>,
    pub(crate) numpy_alias: Vec<String>,
    pub(crate) programs: BTreeMap<String, ast::StmtFunctionDef>,
    /// Module-level numeric constants (`BET_M = 0.5`): programs read them as
    /// literals, as DaCe folds globals into the program when it parses it.
    pub(crate) constants: BTreeMap<String, Literal>,
    /// Module-level integer expressions of symbols (`N = R**K`): a program
    /// reading the name reads the expression.
    pub(crate) symbol_exprs: BTreeMap<String, Expr>,
    /// Module-level names of dtypes (`datatype = dace.float64`).
    pub(crate) dtype_aliases: BTreeMap<String, DType>,
    /// Module-level names of array types (`vec = dace.float64[N]`),
    /// usable as annotations.
    pub(crate) array_aliases: BTreeMap<String, Expr>,
    /// Module-level names bound to values the compiler does not evaluate
    /// (lists, calls, objects...): where and why; a program reading one is
    /// refused naming it.
    pub(crate) opaque: BTreeMap<String, Opaque>,
    metadata: Option<serde_json::Value>,
    /// Identifiers that are not ASCII, where they are (from the token
    /// stream, so finding them needs no walk of a possibly deep tree): a
    /// program using one is refused, since SDFG container names and the
    /// emitted C++ are ASCII.
    pub(crate) non_ascii_names: Vec<ruff_text_size::TextRange>,
}

/// The stack a program is lowered on: [`crate::lower`] nests at most 64
/// levels (statements and expressions together), at up to about 100 KiB a
/// level in debug builds; four times that. Only what is used is committed.
const LOWERING_STACK: usize = 32 << 20;

/// A module-level name programs cannot read.
#[derive(Clone, Debug)]
pub(crate) struct Opaque {
    /// The line it is bound at.
    pub(crate) line: usize,
    /// What it is bound to, as a phrase ("a value the compiler does not
    /// evaluate", "300, which does not fit in uint8").
    pub(crate) what: String,
}

/// What the module says about one program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramInfo {
    /// The program's name.
    pub name: String,
    /// Parameter names, in order.
    pub parameters: Vec<String>,
}

impl Module {
    /// Parses a source file. `file` is used in error positions.
    pub fn parse(file: &str, text: &str) -> Result<Module, FrontendError> {
        let source = SourceMap::new(file, text);
        // Within a nesting bound, so that nothing after the parser (the
        // syntax tree's drop, the lowering's walks) can overflow the stack.
        let parsed = sdfg_python_syntax::parse_module(text).map_err(|e| FrontendError {
            at: source.position(e.offset()),
            kind: match e {
                sdfg_python_syntax::SyntaxError::Invalid { message, .. } => {
                    ErrorKind::Syntax(message)
                }
                too_deep => ErrorKind::Unsupported(format!("code {too_deep}")),
            },
        })?;
        let mut module = Module {
            source,
            symbols: BTreeMap::new(),
            dace_alias: Vec::new(),
            offload_alias: Vec::new(),
            program_alias: Vec::new(),
            numpy_alias: Vec::new(),
            programs: BTreeMap::new(),
            constants: BTreeMap::new(),
            symbol_exprs: BTreeMap::new(),
            dtype_aliases: BTreeMap::new(),
            array_aliases: BTreeMap::new(),
            opaque: BTreeMap::new(),
            metadata: None,
            non_ascii_names: parsed
                .tokens()
                .iter()
                .filter(|t| {
                    t.kind() == ruff_python_ast::token::TokenKind::Name
                        && !text[t.range()].is_ascii()
                })
                .map(|t| t.range())
                .collect(),
        };
        for stmt in parsed.into_syntax().body {
            module.statement(stmt)?;
        }
        Ok(module)
    }

    /// The programs (`@dace.program` functions) of the module, in name order.
    pub fn programs(&self) -> Vec<ProgramInfo> {
        self.programs
            .values()
            .map(|f| ProgramInfo {
                name: f.name.id.to_string(),
                parameters: f
                    .parameters
                    .args
                    .iter()
                    .map(|p| p.parameter.name.id.to_string())
                    .collect(),
            })
            .collect()
    }

    /// The `BENCHMARK` dict as JSON, if the module has one.
    pub fn metadata(&self) -> Option<&serde_json::Value> {
        self.metadata.as_ref()
    }

    /// Lowers the program `name` to a validated SDFG.
    pub fn compile(&self, name: &str) -> Result<Sdfg, FrontendError> {
        self.compile_with(name, &BTreeMap::new())
    }

    /// Compiles the program `name` whose unannotated parameters take their
    /// types from `signature` (parameter name to a type written as an
    /// annotation: `float64[N, M]`, `dace.int32`). DaCe types such
    /// parameters from the arguments of the call that compiles the
    /// program; this compiler has no call, so the types are given. A
    /// parameter neither annotated nor in `signature`, a `signature` entry
    /// for an annotated parameter, and one naming no parameter are errors.
    pub fn compile_with(
        &self,
        name: &str,
        signature: &BTreeMap<String, String>,
    ) -> Result<Sdfg, FrontendError> {
        let f = self.programs.get(name).ok_or_else(|| FrontendError {
            at: self.source.position(0),
            kind: ErrorKind::NoSuchProgram(name.to_owned()),
        })?;
        // The lowering recurses once a level of nesting, up to its bound,
        // with frames of up to about 100 KiB a level in debug builds
        // (nested NumPy calls): on a thread of its own, whose stack holds
        // that whatever thread calls it (a test thread has 2 MiB). Where
        // the system refuses the thread, the caller's stack is all there is.
        std::thread::scope(|scope| {
            let lowering = std::thread::Builder::new()
                .name("lower-program".to_owned())
                .stack_size(LOWERING_STACK)
                .spawn_scoped(scope, || crate::lower::lower_program(self, f, signature));
            match lowering {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => crate::lower::lower_program(self, f, signature),
            }
        })
    }

    fn err(&self, node: &impl Ranged, kind: ErrorKind) -> FrontendError {
        self.source.error(node.range(), kind)
    }

    fn statement(&mut self, stmt: Stmt) -> Result<(), FrontendError> {
        match stmt {
            Stmt::Import(i) => {
                for alias in &i.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).id.to_string();
                    match alias.name.id.as_str() {
                        "dace" => self.dace_alias.push(local),
                        "sdfg_offload" => self.offload_alias.push(local),
                        "numpy" => self.numpy_alias.push(local),
                        _ => {}
                    }
                }
                Ok(())
            }
            Stmt::FunctionDef(f) => {
                let is_program = f
                    .decorator_list
                    .iter()
                    .any(|d| self.is_dace_program(&d.expression));
                if is_program {
                    self.programs.insert(f.name.id.to_string(), f);
                } else {
                    // A plain function (a helper of the NumPy reference, test
                    // code): not compiled; a program calling it is refused.
                    let line = self.line_of(&f);
                    self.opaque.insert(
                        f.name.id.to_string(),
                        Opaque {
                            line,
                            what: "a Python function, not a `@dace.program`".to_owned(),
                        },
                    );
                }
                Ok(())
            }
            // `from sdfg_offload import program`: its decorator.
            Stmt::ImportFrom(i)
                if i.module
                    .as_ref()
                    .is_some_and(|m| m.id.as_str() == "sdfg_offload") =>
            {
                for alias in &i.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).id.to_string();
                    if alias.name.id.as_str() == "program" {
                        self.program_alias.push(local);
                    } else {
                        self.forget(&local, &i);
                    }
                }
                Ok(())
            }
            Stmt::Assign(a) => self.assignment(&a),
            // `poly: dace.uint16 = 0x8408`: a constant of the annotated type.
            Stmt::AnnAssign(a) => {
                let Expr::Name(name) = &*a.target else {
                    return Ok(());
                };
                let (Some(value), Some(t)) = (&a.value, self.dtype_of(&a.annotation)) else {
                    self.forget(name.id.as_str(), &a);
                    return Ok(());
                };
                match Self::number(value).map(|v| (v, v.with_dtype(t))) {
                    Some((_, Some(typed))) => {
                        self.constants.insert(name.id.to_string(), typed);
                    }
                    Some((v, None)) => {
                        let what = format!("{v}, which does not fit in {t}");
                        self.forget_as(name.id.as_str(), &a, what);
                    }
                    None => self.forget(name.id.as_str(), &a),
                }
                Ok(())
            }
            // Everything else at module level is not the program: imports
            // of other modules, docstrings, `if __name__ == "__main__":`,
            // classes, `try:`, loops, test code. Names it binds are unknown
            // to programs.
            other => {
                for name in bound_names(&other) {
                    self.forget(&name, &other);
                }
                Ok(())
            }
        }
    }

    /// The 1-based line of a node.
    fn line_of(&self, node: &impl Ranged) -> usize {
        self.source.position(node.range().start().to_usize()).line
    }

    /// `name` is bound at module level to something the compiler does not
    /// evaluate: whatever it was before, programs may not read it.
    fn forget(&mut self, name: &str, at: &impl Ranged) {
        self.forget_as(
            name,
            at,
            "a value the compiler does not evaluate".to_owned(),
        );
    }

    fn forget_as(&mut self, name: &str, at: &impl Ranged, what: String) {
        self.constants.remove(name);
        self.symbol_exprs.remove(name);
        self.dtype_aliases.remove(name);
        self.array_aliases.remove(name);
        let line = self.line_of(at);
        self.opaque.insert(name.to_owned(), Opaque { line, what });
    }

    pub(crate) fn is_dace_attr(&self, e: &Expr, attr: &str) -> bool {
        matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == attr
            && matches!(&*a.value, Expr::Name(n) if self.dace_alias.iter().any(|d| d == n.id.as_str())))
    }

    /// Whether a decorator marks a program: `dace.program` or
    /// `sdfg_offload.program` (under any local name), called or not.
    fn is_dace_program(&self, e: &Expr) -> bool {
        match e {
            Expr::Call(c) => self.is_dace_program(&c.func),
            Expr::Name(n) => self.program_alias.iter().any(|p| p == n.id.as_str()),
            Expr::Attribute(a) if a.attr.id.as_str() == "program" => matches!(
                &*a.value,
                Expr::Name(n) if self.dace_alias.iter().chain(&self.offload_alias)
                    .any(|d| d == n.id.as_str())
            ),
            _ => false,
        }
    }

    fn assignment(&mut self, a: &ast::StmtAssign) -> Result<(), FrontendError> {
        // `a = b = value`: each target is bound to the value.
        for target in &a.targets {
            self.bind(target, &a.value, a)?;
        }
        Ok(())
    }

    /// A module-level binding of `target` to `value`.
    fn bind(&mut self, target: &Expr, value: &Expr, at: &impl Ranged) -> Result<(), FrontendError> {
        let name_of = |e: &Expr| match e {
            Expr::Name(n) => Some(n.id.to_string()),
            _ => None,
        };
        // `BENCHMARK = {...}`
        if name_of(target).as_deref() == Some("BENCHMARK") {
            self.metadata = Some(self.literal(value, 0)?);
            return Ok(());
        }
        // `N = dace.symbol('N', dtype=...)`
        if let (Some(name), Some(dtype)) = (name_of(target), self.symbol_call(value)?) {
            self.symbols.insert(name, dtype);
            return Ok(());
        }
        if let Expr::Tuple(t) = target {
            let names: Option<Vec<String>> = t.elts.iter().map(name_of).collect();
            if let Some(names) = names {
                match value {
                    // `N, M = dace.symbol('N'), dace.symbol('M', dtype=...)`
                    // (each symbol takes the dtype of its own call), and
                    // `M, N, K = 24, 25, 26`: element by element.
                    Expr::Tuple(vals) if vals.elts.len() == names.len() => {
                        for (n, v) in t.elts.iter().zip(&vals.elts) {
                            self.bind(n, v, at)?;
                        }
                        return Ok(());
                    }
                    // `N, M = (dace.symbol(s, ...) for s in ('N', 'M'))`,
                    // `[dace.symbol(s) for s in 'NM']`: when the names the
                    // loop gives the symbols are the targets' own.
                    Expr::Generator(ast::ExprGenerator {
                        elt, generators, ..
                    })
                    | Expr::ListComp(ast::ExprListComp {
                        elt, generators, ..
                    }) => {
                        if let [g] = &generators[..]
                            && g.ifs.is_empty()
                            && !g.is_async
                            && literal_names(&g.iter).as_ref() == Some(&names)
                            && let Some(dtype) = self.symbol_call(elt)?
                        {
                            for n in names {
                                self.symbols.insert(n, dtype);
                            }
                            return Ok(());
                        }
                    }
                    _ => {}
                }
            }
        }
        let Some(name) = name_of(target) else {
            // `x.attr = ...`, `a[0] = ...`, unpacking a value the compiler
            // does not evaluate: the names involved are unknown to programs.
            for n in names_in_target(target) {
                self.forget(&n, at);
            }
            return Ok(());
        };
        // `BET_M = 0.5`, `POLY = -3`: a number programs read as a literal.
        if let Some(v) = Self::number(value) {
            self.constants.insert(name, v);
            return Ok(());
        }
        // `N = R**K`: an integer expression of symbols.
        if self.is_symbol_expr(value) {
            self.symbol_exprs.insert(name, value.clone());
            return Ok(());
        }
        // `datatype = dace.float64`
        if let Some(t) = self.dtype_of(value) {
            self.dtype_aliases.insert(name, t);
            return Ok(());
        }
        // `vec = dace.float64[N]`
        if let Expr::Subscript(sub) = value
            && self.dtype_of(&sub.value).is_some()
        {
            self.array_aliases.insert(name, value.clone());
            return Ok(());
        }
        // Anything else: not evaluated; a program reading it is refused.
        self.forget(&name, at);
        Ok(())
    }

    /// Whether `e` is integer arithmetic on symbols (declared before it)
    /// and integer literals.
    fn is_symbol_expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Name(n) => {
                self.symbols.contains_key(n.id.as_str())
                    || self.symbol_exprs.contains_key(n.id.as_str())
            }
            Expr::NumberLiteral(n) => matches!(n.value, ast::Number::Int(_)),
            Expr::UnaryOp(u) => {
                matches!(u.op, ast::UnaryOp::USub) && self.is_symbol_expr(&u.operand)
            }
            Expr::BinOp(b) => {
                matches!(
                    b.op,
                    ast::Operator::Add
                        | ast::Operator::Sub
                        | ast::Operator::Mult
                        | ast::Operator::FloorDiv
                        | ast::Operator::Mod
                        | ast::Operator::Pow
                ) && self.is_symbol_expr(&b.left)
                    && self.is_symbol_expr(&b.right)
            }
            _ => false,
        }
    }

    /// A number literal, possibly negated, as an IR literal.
    fn number(e: &Expr) -> Option<Literal> {
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => i.as_i64().map(Literal::i64),
                ast::Number::Float(f) => Some(Literal::f64(*f)),
                ast::Number::Complex { .. } => None,
            },
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => {
                Self::number(&u.operand)?.negated()
            }
            _ => None,
        }
    }

    /// The dtype of `dace.symbol(...)` calls (int64 unless `dtype=` says otherwise).
    fn symbol_call(&self, e: &Expr) -> Result<Option<DType>, FrontendError> {
        let Expr::Call(c) = e else { return Ok(None) };
        if !self.is_dace_attr(&c.func, "symbol") {
            return Ok(None);
        }
        for kw in &c.arguments.keywords {
            if kw.arg.as_ref().is_some_and(|a| a.id.as_str() == "dtype") {
                return self.dtype_of(&kw.value).map(Some).ok_or_else(|| {
                    self.err(&kw.value, ErrorKind::Annotation("symbol dtype".to_owned()))
                });
            }
        }
        Ok(Some(DType::Int64))
    }

    /// `dace.float64`, `np.int32`, ... (or a module-level alias of one) as a dtype.
    pub(crate) fn dtype_of(&self, e: &Expr) -> Option<DType> {
        if let Expr::Name(n) = e {
            return self.dtype_aliases.get(n.id.as_str()).copied();
        }
        let Expr::Attribute(a) = e else { return None };
        let Expr::Name(base) = &*a.value else {
            return None;
        };
        let base = base.id.as_str();
        if !self
            .dace_alias
            .iter()
            .chain(&self.numpy_alias)
            .any(|d| d == base)
        {
            return None;
        }
        match a.attr.id.as_str() {
            "bool" | "bool_" => Some(DType::Bool),
            "float" => Some(DType::Float64),
            "int" => Some(DType::Int64),
            "complex" => Some(DType::Complex128),
            other => DType::from_name(other),
        }
    }

    /// A literal expression (numbers, strings, booleans, None, lists,
    /// tuples, dicts) as JSON.
    /// `depth` counts the enclosing lists and dicts: deeper nesting than
    /// any metadata needs is refused rather than risking the stack.
    fn literal(&self, e: &Expr, depth: usize) -> Result<serde_json::Value, FrontendError> {
        use serde_json::Value;
        if depth > 64 {
            return Err(self.err(e, ErrorKind::Metadata("nested too deeply".to_owned())));
        }
        let depth = depth + 1;
        Ok(match e {
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => i.as_i64().map(Value::from).ok_or_else(|| {
                    self.err(e, ErrorKind::Metadata("integer too large".to_owned()))
                })?,
                ast::Number::Float(f) => serde_json::Number::from_f64(*f)
                    .map(Value::Number)
                    .ok_or_else(|| {
                        self.err(e, ErrorKind::Metadata("non-finite float".to_owned()))
                    })?,
                ast::Number::Complex { .. } => {
                    return Err(self.err(e, ErrorKind::Metadata("complex literal".to_owned())));
                }
            },
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => {
                match self.literal(&u.operand, depth)? {
                    Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                        (Some(i), _) => Value::from(-i),
                        (None, Some(f)) => {
                            serde_json::Number::from_f64(-f).map_or(Value::Null, Value::Number)
                        }
                        _ => Value::Null,
                    },
                    _ => {
                        return Err(self.err(
                            e,
                            ErrorKind::Metadata("negation of a non-number".to_owned()),
                        ));
                    }
                }
            }
            Expr::StringLiteral(s) => Value::String(s.value.to_str().to_owned()),
            Expr::BooleanLiteral(b) => Value::Bool(b.value),
            Expr::NoneLiteral(_) => Value::Null,
            Expr::List(l) => Value::Array(
                l.elts
                    .iter()
                    .map(|x| self.literal(x, depth))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Tuple(t) => Value::Array(
                t.elts
                    .iter()
                    .map(|x| self.literal(x, depth))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Dict(d) => {
                let mut map = serde_json::Map::new();
                for item in &d.items {
                    let Some(k) = &item.key else {
                        return Err(self.err(e, ErrorKind::Metadata("`**` in a dict".to_owned())));
                    };
                    let Value::String(key) = self.literal(k, depth)? else {
                        return Err(self.err(
                            k,
                            ErrorKind::Metadata("dict keys must be strings".to_owned()),
                        ));
                    };
                    map.insert(key, self.literal(&item.value, depth)?);
                }
                Value::Object(map)
            }
            other => {
                return Err(self.err(
                    other,
                    ErrorKind::Metadata(format!(
                        "{} is not a literal",
                        self.source.quoted(other.range())
                    )),
                ));
            }
        })
    }
}

/// The names a module-level statement the compiler ignores binds (so that
/// programs do not read an earlier value of them by mistake).
fn bound_names(stmt: &Stmt) -> Vec<String> {
    let mut out = Vec::new();
    match stmt {
        Stmt::ClassDef(c) => out.push(c.name.id.to_string()),
        Stmt::AugAssign(a) => out.extend(names_in_target(&a.target)),
        Stmt::For(f) => out.extend(names_in_target(&f.target)),
        Stmt::ImportFrom(i) => {
            for alias in &i.names {
                out.push(alias.asname.as_ref().unwrap_or(&alias.name).id.to_string());
            }
        }
        _ => {}
    }
    // Bindings inside compound statements (`if`, `try`, `with`, loops).
    let mut nested = |body: &[Stmt]| {
        for s in body {
            match s {
                Stmt::Assign(a) => {
                    for t in &a.targets {
                        out.extend(names_in_target(t));
                    }
                }
                Stmt::AnnAssign(a) => out.extend(names_in_target(&a.target)),
                Stmt::FunctionDef(f) => out.push(f.name.id.to_string()),
                other => out.extend(bound_names(other)),
            }
        }
    };
    match stmt {
        Stmt::If(i) => {
            nested(&i.body);
            for c in &i.elif_else_clauses {
                nested(&c.body);
            }
        }
        Stmt::Try(t) => {
            nested(&t.body);
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                nested(&h.body);
            }
            nested(&t.orelse);
            nested(&t.finalbody);
        }
        Stmt::With(w) => nested(&w.body),
        Stmt::For(f) => {
            nested(&f.body);
            nested(&f.orelse);
        }
        Stmt::While(w) => {
            nested(&w.body);
            nested(&w.orelse);
        }
        _ => {}
    }
    out
}

/// The plain names an assignment target binds (`a`, `a, b`, `[a, *b]`).
fn names_in_target(e: &Expr) -> Vec<String> {
    match e {
        Expr::Name(n) => vec![n.id.to_string()],
        Expr::Tuple(t) => t.elts.iter().flat_map(names_in_target).collect(),
        Expr::List(l) => l.elts.iter().flat_map(names_in_target).collect(),
        Expr::Starred(s) => names_in_target(&s.value),
        _ => Vec::new(),
    }
}

/// The names a literal iterable of symbol names yields: the characters of
/// a string (`'NM'`), or the strings of a tuple or list (`('N', 'M')`).
fn literal_names(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().chars().map(String::from).collect()),
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => elts
            .iter()
            .map(|x| match x {
                Expr::StringLiteral(s) => Some(s.value.to_str().to_owned()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}
