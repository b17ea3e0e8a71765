//! The frontend: DaCe-style Python/NumPy programs lowered to SDFGs.
//!
//! We accept the programs users already write for DaCe, unchanged:
//! `@dace.program` functions with typed array annotations over
//! `dace.symbol`s, NumPy slicing, broadcasting, ufuncs, reductions and `@`,
//! Python loops and branches, and `dace.map` loops.
//!
//! Python is parsed with `ruff_python_parser` (pinned `=0.0.10`): it is the
//! parser of the ruff linter, maintained by Astral, fast, error-tolerant and
//! exact about source ranges, which is what errors that name a line and a
//! column need. `rustpython-parser` is no longer developed separately and
//! `tree-sitter-python` gives an untyped concrete syntax tree.
//! It is reached through `sdfg-python-syntax`, which bounds how deeply
//! the text nests before anything walks the syntax tree: a long chain
//! (`A + A + ... + A`, 140,000 terms) is a clean error naming where it
//! passes the bound, never a stack overflow.
//!
//! # How programs are lowered
//!
//! Each statement becomes one or more states, in program order, as DaCe's
//! own frontend does; later passes fuse them. Array expressions are lowered
//! *elementwise*: the whole right-hand side of an assignment becomes one map
//! over the target region whose tasklet computes the expression for one
//! element, with broadcasting resolved into the memlet indices. Operations
//! that are not elementwise (`@`, reductions, `np.linalg`) are first
//! evaluated into transients by library nodes. A right-hand side that reads
//! the target at a different index is evaluated into a temporary first, so
//! NumPy's "evaluate, then assign" semantics hold. Integer expressions of
//! symbols stay symbolic: `for` loops over `range` become loop regions
//! whose variable is a symbol, and integer assignments become symbol
//! assignments on transitions.
//!
//! Every construct outside the supported subset is a [`FrontendError`]
//! naming the file, line, column and the construct; the frontend never
//! produces code for something it does not understand.

pub mod functions;
mod lower;
mod module;
mod values;

pub use module::{Module, ProgramInfo};

use thiserror::Error;

/// A position in a source file (1-based line and column, in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The file name as given to [`Module::parse`].
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// An error in a source program, with its position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{at}: {kind}")]
pub struct FrontendError {
    /// Where.
    pub at: Position,
    /// What.
    pub kind: ErrorKind,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ErrorKind {
    /// The file is not valid Python.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// A construct outside the supported subset.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A name that is not defined.
    #[error("`{0}` is not defined")]
    UnknownName(String),
    /// Operands whose shapes cannot be broadcast or assigned.
    #[error("shapes do not match: {0}")]
    Shape(String),
    /// An operator applied to operands of a type it is not defined on
    /// (NumPy's `UFuncTypeError`: `|` on floats, `//` on complex numbers).
    #[error("type error: {0}")]
    Type(String),
    /// An index or size out of its range: a constant index beyond a
    /// constant extent (NumPy's `IndexError`), a negative dimension, a
    /// Python integer that does not fit in 64 bits.
    #[error("{0}")]
    Value(String),
    /// An annotation that is not a dtype or a dtype with a shape.
    #[error("bad annotation: {0}")]
    Annotation(String),
    /// A program name that the module does not define.
    #[error("no `@dace.program` named `{0}` in this file")]
    NoSuchProgram(String),
    /// A malformed `BENCHMARK` dict.
    #[error("BENCHMARK metadata: {0}")]
    Metadata(String),
    /// The lowered SDFG is invalid: a bug of the frontend, reported at the
    /// statement being lowered rather than hidden.
    #[error(
        "internal error (a bug of this compiler) while lowering this statement: the lowered SDFG is invalid:\n{0}"
    )]
    Invalid(String),
}

/// Line starts of a file, to turn byte offsets into positions.
#[derive(Clone, Debug)]
pub(crate) struct SourceMap {
    pub file: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceMap {
    pub(crate) fn new(file: &str, text: &str) -> SourceMap {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceMap {
            file: file.to_owned(),
            text: text.to_owned(),
            line_starts,
        }
    }

    pub(crate) fn position(&self, offset: usize) -> Position {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        Position {
            file: self.file.clone(),
            line,
            column,
        }
    }

    pub(crate) fn error(&self, range: ruff_text_size::TextRange, kind: ErrorKind) -> FrontendError {
        FrontendError {
            at: self.position(range.start().to_usize()),
            kind,
        }
    }

    /// The source text of a range.
    pub(crate) fn snippet(&self, range: ruff_text_size::TextRange) -> &str {
        self.text
            .get(range.start().to_usize()..range.end().to_usize())
            .unwrap_or("")
    }

    /// The source text of a range as messages quote it
    /// ([`sdfg_ir::quote`]): in backticks, cut where it is long, with its
    /// length and position.
    pub(crate) fn quoted(&self, range: ruff_text_size::TextRange) -> String {
        let at = self.position(range.start().to_usize());
        sdfg_ir::quote(self.snippet(range))
            .located(at.line, at.column)
            .to_string()
    }
}
