//! Module level: imports, symbols, programs and the `BENCHMARK` metadata.

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
    pub(crate) numpy_alias: Vec<String>,
    pub(crate) programs: BTreeMap<String, ast::StmtFunctionDef>,
    /// Module-level numeric constants (`BET_M = 0.5`): programs read them as
    /// literals, as DaCe folds globals into the program when it parses it.
    pub(crate) constants: BTreeMap<String, Literal>,
    /// Module-level integer expressions of symbols (`N = R**K`): a program
    /// reading the name reads the expression.
    pub(crate) symbol_exprs: BTreeMap<String, Expr>,
    metadata: Option<serde_json::Value>,
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
        let parsed = ruff_python_parser::parse_module(text).map_err(|e| FrontendError {
            at: source.position(e.location.start().to_usize()),
            kind: ErrorKind::Syntax(e.error.to_string()),
        })?;
        let mut module = Module {
            source,
            symbols: BTreeMap::new(),
            dace_alias: Vec::new(),
            numpy_alias: Vec::new(),
            programs: BTreeMap::new(),
            constants: BTreeMap::new(),
            symbol_exprs: BTreeMap::new(),
            metadata: None,
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
        let f = self.programs.get(name).ok_or_else(|| FrontendError {
            at: self.source.position(0),
            kind: ErrorKind::NoSuchProgram(name.to_owned()),
        })?;
        crate::lower::lower_program(self, f)
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
                        "numpy" => self.numpy_alias.push(local),
                        _ => {}
                    }
                }
                Ok(())
            }
            Stmt::ImportFrom(_) | Stmt::Pass(_) => Ok(()),
            // Docstrings and other bare expressions at module level.
            Stmt::Expr(_) => Ok(()),
            Stmt::FunctionDef(f) => {
                let is_program = f
                    .decorator_list
                    .iter()
                    .any(|d| self.is_dace_program(&d.expression));
                if is_program {
                    self.programs.insert(f.name.id.to_string(), f);
                }
                // Plain functions (helpers of the NumPy reference) are not compiled.
                Ok(())
            }
            Stmt::Assign(a) => self.assignment(&a),
            // `poly: dace.uint16 = 0x8408`: a constant of the annotated type.
            Stmt::AnnAssign(a) => {
                let (Expr::Name(name), Some(value)) = (&*a.target, &a.value) else {
                    return Err(self.err(
                        &a,
                        ErrorKind::Unsupported("this annotated assignment".to_owned()),
                    ));
                };
                let typed = self
                    .dtype_of(&a.annotation)
                    .and_then(|t| Self::number(value).and_then(|v| v.with_dtype(t)))
                    .ok_or_else(|| {
                        self.err(
                            &a,
                            ErrorKind::Unsupported(
                                "a module-level annotated value that is not a number of a dtype"
                                    .to_owned(),
                            ),
                        )
                    })?;
                self.constants.insert(name.id.to_string(), typed);
                Ok(())
            }
            other => Err(self.err(
                &other,
                ErrorKind::Unsupported("this statement at module level".to_owned()),
            )),
        }
    }

    fn is_dace_attr(&self, e: &Expr, attr: &str) -> bool {
        matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == attr
            && matches!(&*a.value, Expr::Name(n) if self.dace_alias.iter().any(|d| d == n.id.as_str())))
    }

    fn is_dace_program(&self, e: &Expr) -> bool {
        match e {
            Expr::Call(c) => self.is_dace_program(&c.func),
            e => self.is_dace_attr(e, "program"),
        }
    }

    fn assignment(&mut self, a: &ast::StmtAssign) -> Result<(), FrontendError> {
        let [target] = &a.targets[..] else {
            return Err(self.err(a, ErrorKind::Unsupported("chained assignment".to_owned())));
        };
        let name_of = |e: &Expr| match e {
            Expr::Name(n) => Some(n.id.to_string()),
            _ => None,
        };
        // `BENCHMARK = {...}`
        if name_of(target).as_deref() == Some("BENCHMARK") {
            self.metadata = Some(self.literal(&a.value, 0)?);
            return Ok(());
        }
        // `N = dace.symbol('N', dtype=...)`
        if let (Some(name), Some(dtype)) = (name_of(target), self.symbol_call(&a.value)?) {
            self.symbols.insert(name, dtype);
            return Ok(());
        }
        // `N, M = (dace.symbol(s, ...) for s in ('N', 'M'))` and tuple forms.
        if let Expr::Tuple(t) = target {
            let names: Option<Vec<String>> = t.elts.iter().map(name_of).collect();
            if let Some(names) = names {
                // `N, M = dace.symbol('N'), dace.symbol('M', dtype=...)`: each
                // symbol takes the dtype of its own call (not the first one's).
                if let Expr::Tuple(vals) = &*a.value
                    && vals.elts.len() == names.len()
                {
                    let dtypes = vals
                        .elts
                        .iter()
                        .map(|v| self.symbol_call(v))
                        .collect::<Result<Option<Vec<DType>>, _>>()?;
                    if let Some(dtypes) = dtypes {
                        self.symbols.extend(names.into_iter().zip(dtypes));
                        return Ok(());
                    }
                } else if let Expr::Generator(g) = &*a.value
                    && let Some(dtype) = self.symbol_call(&g.elt)?
                {
                    for n in names {
                        self.symbols.insert(n, dtype);
                    }
                    return Ok(());
                }
            }
        }
        // `BET_M = 0.5`, `POLY = -3`: a number programs read as a literal.
        if let Some(name) = name_of(target)
            && let Some(value) = Self::number(&a.value)
        {
            self.constants.insert(name, value);
            return Ok(());
        }
        // `N = R**K`: an integer expression of symbols.
        if let Some(name) = name_of(target)
            && self.is_symbol_expr(&a.value)
        {
            self.symbol_exprs.insert(name, (*a.value).clone());
            return Ok(());
        }
        // Other module-level values are ignored by the compiler: programs may
        // not read them (they are reported as unknown names if they do).
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
                match Self::number(&u.operand)? {
                    Literal::Int { value, dtype } => Some(Literal::Int {
                        value: value.checked_neg()?,
                        dtype,
                    }),
                    Literal::Float { value, dtype } => Some(Literal::Float {
                        value: -value,
                        dtype,
                    }),
                    _ => None,
                }
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

    /// `dace.float64`, `np.int32`, ... as a dtype.
    pub(crate) fn dtype_of(&self, e: &Expr) -> Option<DType> {
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
                        "`{}` is not a literal",
                        self.source.snippet(other.range())
                    )),
                ));
            }
        })
    }
}
