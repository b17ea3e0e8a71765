//! DaCe's symbolic strings, read into and written from the IR's canonical
//! [`SymExpr`] and [`SymCond`].
//!
//! DaCe stores shapes, strides, subsets, volumes and symbol mappings as
//! the text of sympy expressions, in a spelling of its own: a symbol may
//! carry its type (`symbol($N, dtype=dace.int64)`), floor division is
//! `int_floor(a, b)` (or `//`, parsed to DaCe's `__int_floor`), ceiling
//! division `int_ceil(a, b)` or `ceiling(a/b)`, and sympy's functions
//! `Min`, `Max`, `Mod`, `floor`, `ceiling`, `Abs`, `Eq`, `Ne`, `And`, ...
//! appear by name. Loop conditions and interstate conditions are Python
//! (`(i < M)`, `i < N and j >= 2`). [`parse_expr`] and [`parse_cond`] read
//! all of these; [`write_expr`] and [`write_cond`] write the IR's values in
//! a form DaCe's `pystr_to_symbolic` reads back with the same meaning.
//!
//! Meanings are kept, not spellings: `%` in an SDFG is C's truncating
//! remainder to DaCe (`CMod`), which disagrees with Python's (the IR's
//! `Mod`) on negative operands, so it is refused by name instead of being
//! read as the IR's modulo; the IR's modulo is written as sympy's `Mod`,
//! which has Python's sign rule.
//!
//! The parser is separate from the IR's own (`SymExpr::parse`), which
//! reads the IR's Python spelling: DaCe's grammar gives `%` another
//! meaning, has quotients that are integers only under `floor` and
//! `ceiling`, and names sympy's functions, so rewriting DaCe's text into
//! the IR's would have to parse it anyway.

use sdfg_ir::symbolic::{Atom, CondView, MAX_READ_SIZE};
use sdfg_ir::{CmpOp, SymCond, SymExpr};
use std::fmt::Write;

/// Why a DaCe symbolic string cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot read the symbolic expression {} at byte {offset}: {message}",
    sdfg_ir::quote(.text).around(*.offset)
)]
pub struct SymbolicError {
    /// The whole string.
    pub text: String,
    /// Byte offset where the problem was found.
    pub offset: usize,
    /// What is wrong there.
    pub message: String,
}

/// Reads an integer expression (a shape, a subset bound, a symbol mapping).
pub fn parse_expr(text: &str) -> Result<SymExpr, SymbolicError> {
    exactly(text, || {
        let mut p = Parser::new(text)?;
        let v = p.or()?;
        p.finish()?;
        p.expr(v, 0)
    })
}

/// Reads a condition (a loop condition, a branch condition). An integer
/// expression stands for `expr != 0`, as in Python.
pub fn parse_cond(text: &str) -> Result<SymCond, SymbolicError> {
    exactly(text, || {
        let mut p = Parser::new(text)?;
        let v = p.or()?;
        p.finish()?;
        p.cond(v, 0)
    })
}

/// Runs a parse of `text` and refuses it where its arithmetic wrapped
/// around 64 bits ([`SymExpr::exact`]): sympy's integers do not wrap, so
/// `9223372036854775807 + 1` or `Abs(-9223372036854775807 - 1)` in a file
/// is a value the IR cannot hold, never `i64::MIN`.
fn exactly<T>(
    text: &str,
    parse: impl FnOnce() -> Result<T, SymbolicError>,
) -> Result<T, SymbolicError> {
    SymExpr::exact(parse).unwrap_or_else(|| {
        Err(SymbolicError {
            text: text.to_owned(),
            offset: 0,
            message: "its value does not fit in 64 bits (the arithmetic overflows)".to_owned(),
        })
    })
}

/// Writes an integer expression in DaCe's Python spelling: symbols by
/// their names, as in code blocks (loop statements, conditions) and
/// interstate assignments, which DaCe reads with `pystr_to_symbolic`.
pub fn write_expr(e: &SymExpr) -> String {
    let mut out = String::new();
    expr_into(&mut out, e, Spelling::Python);
    out
}

/// Writes a condition in DaCe's (Python) spelling.
pub fn write_cond(c: &SymCond) -> String {
    let mut out = String::new();
    cond_into(&mut out, c, Spelling::Python);
    out
}

/// Writes the condition of a `for` loop over `var` with the variable
/// alone on the left (`(i) < (N)`), the form DaCe's loop analysis reads
/// the loop's end from; other conditions as [`write_cond`].
pub fn write_loop_cond(c: &SymCond, var: &str) -> String {
    if let CondView::Cmp(e, op) = c.view()
        && let Some((k, rest)) = e.linear_in(var)
        && let Some(k @ (1 | -1)) = k.as_int()
        && let Some(bound) = SymExpr::exact(|| {
            if k == 1 {
                SymExpr::ZERO - rest.clone()
            } else {
                rest.clone()
            }
        })
    {
        // `var + rest op 0` is `var op -rest`; `-var + rest op 0` is `var op' rest`.
        let op = if k == 1 { op } else { swapped(op) };
        return format!("({var}) {} ({})", op.as_str(), write_expr(&bound));
    }
    write_cond(c)
}

/// The comparison that holds of `(b, a)` where `op` holds of `(a, b)`.
fn swapped(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// Writes an integer expression in the spelling of DaCe's symbolic
/// properties (shapes, strides, subsets, volumes, symbol mappings), which
/// DaCe 2.0 (files of `dace_version` 2.0.0a4 and later) reads with
/// `deserialize_symbolic`: every symbol marked with `$` (`-1 + $N`).
/// `None` where the expression reads a container (`A[i]`), which that
/// spelling cannot hold.
pub fn write_serialized_expr(e: &SymExpr) -> Option<String> {
    if e.has_reads() {
        return None;
    }
    let mut out = String::new();
    expr_into(&mut out, e, Spelling::Serialized);
    Some(out)
}

/// How symbols are written: DaCe has two spellings (see
/// [`write_serialized_expr`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    Python,
    Serialized,
}

fn expr_into(out: &mut String, e: &SymExpr, sp: Spelling) {
    let mut first = true;
    for term in e.terms() {
        if term.coeff() == i64::MIN {
            // `i64::MIN` as a literal does not fit in 64 bits, so no reader
            // takes it back; written as a difference, it reads back exactly.
            out.push_str(if first { "" } else { " + " });
            out.push_str("(-9223372036854775807 - 1)*");
            first = false;
        } else {
            let coeff = match (first, term.coeff()) {
                (false, c) if c < 0 => {
                    out.push_str(" - ");
                    i128::from(c).abs()
                }
                (false, c) => {
                    out.push_str(" + ");
                    i128::from(c)
                }
                (true, c) => i128::from(c),
            };
            first = false;
            match coeff {
                1 => {}
                -1 => out.push('-'),
                c => {
                    let _ = write!(out, "{c}*");
                }
            }
        }
        for (i, (atom, power)) in term.factors().iter().enumerate() {
            if i > 0 {
                out.push('*');
            }
            if *power == 1 {
                atom_into(out, atom, sp);
            } else {
                out.push('(');
                atom_into(out, atom, sp);
                let _ = write!(out, ")**{power}");
            }
        }
    }
    let c = e.constant_term();
    if c == i64::MIN {
        // See the coefficients above.
        out.push_str(if first {
            "-9223372036854775807 - 1"
        } else {
            " - 9223372036854775807 - 1"
        });
    } else if first {
        let _ = write!(out, "{c}");
    } else if c < 0 {
        let _ = write!(out, " - {}", i128::from(c).abs());
    } else if c > 0 {
        let _ = write!(out, " + {c}");
    }
}

fn list_into(out: &mut String, items: &[SymExpr], sp: Spelling) {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        expr_into(out, e, sp);
    }
}

fn atom_into(out: &mut String, atom: &Atom, sp: Spelling) {
    let call = |out: &mut String, name: &str, args: &[SymExpr]| {
        out.push_str(name);
        out.push('(');
        list_into(out, args, sp);
        out.push(')');
    };
    match atom {
        Atom::Symbol(name) => {
            if sp == Spelling::Serialized {
                out.push('$');
            }
            out.push_str(name);
        }
        Atom::Read(data, index) => {
            out.push_str(data);
            out.push('[');
            list_into(out, index, sp);
            out.push(']');
        }
        Atom::FloorDiv(ops) => call(out, "int_floor", ops.as_slice()),
        Atom::Mod(ops) => call(out, "Mod", ops.as_slice()),
        Atom::Pow(ops) => {
            let [base, exp] = ops.as_ref();
            out.push('(');
            expr_into(out, base, sp);
            out.push_str(")**(");
            expr_into(out, exp, sp);
            out.push(')');
        }
        Atom::Min(args) => call(out, "Min", args),
        Atom::Max(args) => call(out, "Max", args),
    }
}

fn cond_into(out: &mut String, c: &SymCond, sp: Spelling) {
    let join = |out: &mut String, ops: &[SymCond], word: &str| {
        for (i, op) in ops.iter().enumerate() {
            if i > 0 {
                let _ = write!(out, " {word} ");
            }
            out.push('(');
            cond_into(out, op, sp);
            out.push(')');
        }
    };
    match c.view() {
        CondView::Const(b) => out.push_str(if b { "True" } else { "False" }),
        CondView::Cmp(e, op) => {
            // `(i) < (N)` rather than `(i - N) < 0`: the terms of each
            // sign on their own side, as people (and DaCe) write it.
            let (l, r) = e.split_signs();
            out.push('(');
            expr_into(out, &l, sp);
            let _ = write!(out, ") {} (", op.as_str());
            expr_into(out, &r, sp);
            out.push(')');
        }
        CondView::Pair(l, op, r) => {
            out.push('(');
            expr_into(out, l, sp);
            let _ = write!(out, ") {} (", op.as_str());
            expr_into(out, r, sp);
            out.push(')');
        }
        CondView::And(ops) => join(out, ops, "and"),
        CondView::Or(ops) => join(out, ops, "or"),
    }
}

/// How deeply parentheses, operators and calls may nest: far beyond what
/// DaCe writes, little enough for the recursive parser on any stack.
const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Ident(String),
    Punct(&'static str),
    End,
}

/// A parsed value: sympy mixes integers, conditions and (inside `floor`
/// and `ceiling` only) exact quotients in one grammar.
enum Val {
    Expr(SymExpr),
    Cond(SymCond),
    Ratio(SymExpr, SymExpr),
}

const PUNCTS: [&str; 22] = [
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "(", ")", "[", "]", ",",
    "$", "=", ".", "~",
];

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(usize, Tok)>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Result<Parser<'a>, SymbolicError> {
        let mut toks = Vec::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        'outer: while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if c.is_ascii_digit() {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let value = text[start..i].parse::<i64>().map_err(|_| SymbolicError {
                    text: text.to_owned(),
                    offset: start,
                    message: format!(
                        "the integer {} does not fit in 64 bits",
                        sdfg_ir::quote(&text[start..i])
                    ),
                })?;
                toks.push((start, Tok::Int(value)));
                continue;
            }
            if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                toks.push((start, Tok::Ident(text[start..i].to_owned())));
                continue;
            }
            for p in PUNCTS {
                if text[i..].starts_with(p) {
                    toks.push((i, Tok::Punct(p)));
                    i += p.len();
                    continue 'outer;
                }
            }
            let found = text[i..].chars().next().unwrap_or('?');
            return Err(SymbolicError {
                text: text.to_owned(),
                offset: i,
                message: format!("unexpected character `{found}`"),
            });
        }
        toks.push((text.len(), Tok::End));
        Ok(Parser {
            text,
            toks,
            pos: 0,
            depth: 0,
        })
    }

    fn err(&self, offset: usize, message: impl Into<String>) -> SymbolicError {
        SymbolicError {
            text: self.text.to_owned(),
            offset,
            message: message.into(),
        }
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].1
    }

    fn offset(&self) -> usize {
        self.toks[self.pos].0
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.pos].1.clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Tok::Punct(q) if *q == p) {
            self.next();
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Tok::Ident(q) if q == w) {
            self.next();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), SymbolicError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.err(self.offset(), format!("expected `{p}`")))
        }
    }

    fn finish(&self) -> Result<(), SymbolicError> {
        match self.peek() {
            Tok::End => Ok(()),
            _ => Err(self.err(self.offset(), "unexpected text after the expression")),
        }
    }

    fn enter(&mut self) -> Result<(), SymbolicError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(
                self.offset(),
                format!("nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    /// Refuses, at `offset`, an operation whose result (or work) would be
    /// larger than [`MAX_READ_SIZE`]: canonical arithmetic expands, and a
    /// short text could otherwise ask for the machine.
    fn bounded(&self, size: usize, offset: usize) -> Result<(), SymbolicError> {
        if size <= MAX_READ_SIZE {
            return Ok(());
        }
        Err(self.err(
            offset,
            format!("the expression grows past {MAX_READ_SIZE} terms and factors"),
        ))
    }

    fn expr(&self, v: Val, offset: usize) -> Result<SymExpr, SymbolicError> {
        match v {
            Val::Expr(e) => Ok(e),
            Val::Cond(_) => Err(self.err(offset, "a condition where an integer is needed")),
            Val::Ratio(..) => Err(self.err(
                offset,
                "a true division `/` outside `floor` or `ceiling` (not an integer)",
            )),
        }
    }

    fn cond(&self, v: Val, offset: usize) -> Result<SymCond, SymbolicError> {
        match v {
            Val::Cond(c) => Ok(c),
            v => Ok(SymCond::cmp(
                self.expr(v, offset)?,
                CmpOp::Ne,
                SymExpr::int(0),
            )),
        }
    }

    fn or(&mut self) -> Result<Val, SymbolicError> {
        self.enter()?;
        let at = self.offset();
        let mut v = self.and()?;
        while self.eat_word("or") || self.eat("|") {
            let at2 = self.offset();
            let rhs = self.and()?;
            v = Val::Cond(self.cond(v, at)?.or(self.cond(rhs, at2)?));
        }
        self.depth -= 1;
        Ok(v)
    }

    fn and(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        let mut v = self.not()?;
        while self.eat_word("and") {
            let at2 = self.offset();
            let rhs = self.not()?;
            v = Val::Cond(self.cond(v, at)?.and(self.cond(rhs, at2)?));
        }
        Ok(v)
    }

    fn not(&mut self) -> Result<Val, SymbolicError> {
        if self.eat_word("not") || self.eat("~") {
            self.enter()?;
            let at = self.offset();
            let v = self.not()?;
            self.depth -= 1;
            return Ok(Val::Cond(self.cond(v, at)?.not()));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        let first = self.sum()?;
        let mut result: Option<SymCond> = None;
        let mut lhs = first;
        loop {
            let op = match self.peek() {
                Tok::Punct("==") => CmpOp::Eq,
                Tok::Punct("!=") => CmpOp::Ne,
                Tok::Punct("<") => CmpOp::Lt,
                Tok::Punct("<=") => CmpOp::Le,
                Tok::Punct(">") => CmpOp::Gt,
                Tok::Punct(">=") => CmpOp::Ge,
                _ => break,
            };
            self.next();
            let at2 = self.offset();
            let rhs = self.sum()?;
            let l = self.expr(lhs, at)?;
            let r = self.expr(rhs, at2)?;
            let c = SymCond::cmp(l, op, r.clone());
            result = Some(match result {
                Some(prev) => prev.and(c),
                None => c,
            });
            lhs = Val::Expr(r);
        }
        Ok(match result {
            Some(c) => Val::Cond(c),
            None => lhs,
        })
    }

    fn sum(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        let mut v = self.term()?;
        loop {
            let sub = if self.eat("+") {
                false
            } else if self.eat("-") {
                true
            } else {
                break;
            };
            let at2 = self.offset();
            let rhs = self.term()?;
            let (l, r) = (self.expr(v, at)?, self.expr(rhs, at2)?);
            let sum = if sub { l - r } else { l + r };
            self.bounded(sum.size(), at2)?;
            v = Val::Expr(sum);
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        let mut v = self.unary()?;
        while let Tok::Punct(p @ ("*" | "//" | "/" | "%")) = self.peek() {
            let op = *p;
            let op_at = self.offset();
            self.next();
            let at2 = self.offset();
            let rhs = self.unary()?;
            if op == "%" {
                return Err(self.err(
                    op_at,
                    "`%` is C's truncating remainder in an SDFG (DaCe's `CMod`), which differs from Python's modulo on negative operands; write `Mod(a, b)` for Python's",
                ));
            }
            let r = self.expr(rhs, at2)?;
            // Products expand: bounded before they are computed.
            let product = |p: &Self, a: SymExpr, b: SymExpr| -> Result<SymExpr, SymbolicError> {
                p.bounded(a.product_size(&b), op_at)?;
                Ok(a * b)
            };
            v = match (op, v) {
                ("/", Val::Expr(l)) => Val::Ratio(l, r),
                ("/", Val::Ratio(n, d)) => Val::Ratio(n, product(self, d, r)?),
                ("*", Val::Ratio(n, d)) => Val::Ratio(product(self, n, r)?, d),
                (op, v) => {
                    let l = self.expr(v, at)?;
                    let e = match op {
                        "*" => product(self, l, r)?,
                        _ => l.floor_div(&r),
                    };
                    self.bounded(e.size(), op_at)?;
                    Val::Expr(e)
                }
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<Val, SymbolicError> {
        if self.eat("-") {
            self.enter()?;
            let at = self.offset();
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(match v {
                Val::Ratio(n, d) => Val::Ratio(-n, d),
                v => Val::Expr(-self.expr(v, at)?),
            });
        }
        if self.eat("+") {
            self.enter()?;
            let v = self.unary();
            self.depth -= 1;
            return v;
        }
        self.power()
    }

    fn power(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        let base = self.primary()?;
        if self.eat("**") {
            self.enter()?;
            let at2 = self.offset();
            let exp = self.unary()?;
            self.depth -= 1;
            let (b, e) = (self.expr(base, at)?, self.expr(exp, at2)?);
            self.bounded(b.power_size(&e), at)?;
            return Ok(Val::Expr(b.pow(&e)));
        }
        Ok(base)
    }

    fn args(&mut self, close: &str) -> Result<Vec<(usize, Val)>, SymbolicError> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            let at = self.offset();
            args.push((at, self.or()?));
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> Result<Val, SymbolicError> {
        let at = self.offset();
        match self.next() {
            Tok::Int(v) => Ok(Val::Expr(SymExpr::int(v))),
            Tok::Punct("(") => {
                let v = self.or()?;
                self.expect(")")?;
                Ok(v)
            }
            // DaCe 2.0's serialized spelling of a symbol (`$N`).
            Tok::Punct("$") => match self.next() {
                Tok::Ident(name) => Ok(Val::Expr(SymExpr::symbol(name))),
                _ => Err(self.err(at, "expected a symbol's name after `$`")),
            },
            Tok::Ident(name) => match name.as_str() {
                "True" | "true" => Ok(Val::Cond(SymCond::TRUE)),
                "False" | "false" => Ok(Val::Cond(SymCond::FALSE)),
                "symbol" if self.eat("(") => self.typed_symbol(),
                _ if self.eat("(") => {
                    self.enter()?;
                    let args = self.args(")")?;
                    self.depth -= 1;
                    self.call(&name, at, args)
                }
                _ if self.eat("[") => {
                    let args = self.args("]")?;
                    let index = args
                        .into_iter()
                        .map(|(a, v)| self.expr(v, a))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Val::Expr(SymExpr::read(name, index)))
                }
                _ => Ok(Val::Expr(SymExpr::symbol(name))),
            },
            Tok::End => Err(self.err(at, "the expression ends too early")),
            Tok::Punct(p) => Err(self.err(at, format!("unexpected `{p}`"))),
        }
    }

    /// `symbol($N, dtype=dace.int64)`, DaCe's spelling of a typed symbol
    /// (the `(` already read): the symbol `N`.
    fn typed_symbol(&mut self) -> Result<Val, SymbolicError> {
        self.eat("$");
        let at = self.offset();
        let Tok::Ident(name) = self.next() else {
            return Err(self.err(at, "expected a symbol's name"));
        };
        // `dtype=dace.int64`, `nonnegative=True`, ...: assumptions sympy
        // keeps about the symbol, which the IR's symbols (64-bit integers)
        // do not need.
        while self.eat(",") {
            let at = self.offset();
            if !matches!(self.next(), Tok::Ident(_)) || !self.eat("=") {
                return Err(self.err(at, "expected `name=value` in `symbol(...)`"));
            }
            while !matches!(self.peek(), Tok::Punct(")" | ",") | Tok::End) {
                self.next();
            }
        }
        self.expect(")")?;
        Ok(Val::Expr(SymExpr::symbol(name)))
    }

    fn call(&self, name: &str, at: usize, args: Vec<(usize, Val)>) -> Result<Val, SymbolicError> {
        let count = args.len();
        let arity = |n: usize| -> Result<(), SymbolicError> {
            if count == n {
                Ok(())
            } else {
                Err(self.err(at, format!("`{name}` takes {n} arguments, got {count}")))
            }
        };
        let exprs = |args: Vec<(usize, Val)>| -> Result<Vec<SymExpr>, SymbolicError> {
            args.into_iter().map(|(a, v)| self.expr(v, a)).collect()
        };
        let conds = |args: Vec<(usize, Val)>| -> Result<Vec<SymCond>, SymbolicError> {
            args.into_iter().map(|(a, v)| self.cond(v, a)).collect()
        };
        let compare = |op: CmpOp, e: Vec<SymExpr>| {
            let [l, r]: [SymExpr; 2] = e.try_into().expect("arity checked");
            Ok(Val::Cond(SymCond::cmp(l, op, r)))
        };
        match name {
            "int_floor" | "__int_floor" => {
                arity(2)?;
                let e = exprs(args)?;
                Ok(Val::Expr(e[0].floor_div(&e[1])))
            }
            "int_ceil" => {
                arity(2)?;
                let e = exprs(args)?;
                Ok(Val::Expr(ceil_div(&e[0], &e[1])))
            }
            "floor" | "ceiling" => {
                arity(1)?;
                let (a, v) = args.into_iter().next().expect("arity checked");
                Ok(Val::Expr(match v {
                    Val::Ratio(n, d) if name == "floor" => n.floor_div(&d),
                    Val::Ratio(n, d) => ceil_div(&n, &d),
                    // sympy keeps `ceiling(R**i)` where it cannot tell that
                    // the power is an integer; the IR's powers are.
                    v => self.expr(v, a)?,
                }))
            }
            "Min" | "min" | "Max" | "max" if !args.is_empty() => {
                let e = exprs(args)?;
                let v = if name.eq_ignore_ascii_case("min") {
                    SymExpr::min_all(e)
                } else {
                    SymExpr::max_all(e)
                };
                Ok(Val::Expr(v.expect("at least one argument")))
            }
            "Abs" | "abs" => {
                arity(1)?;
                let e = exprs(args)?.remove(0);
                Ok(Val::Expr(e.clone().max(-e)))
            }
            "Mod" | "PyMod" | "FtnModulo" => {
                arity(2)?;
                let e = exprs(args)?;
                Ok(Val::Expr(e[0].modulo(&e[1])))
            }
            "CMod" | "FtnMod" => Err(self.err(
                at,
                format!(
                    "`{name}` is C's truncating remainder, which differs from Python's modulo (the IR's) on negative operands"
                ),
            )),
            "Eq" | "Ne" | "Lt" | "Le" | "Gt" | "Ge" | "StrictLessThan" | "LessThan"
            | "StrictGreaterThan" | "GreaterThan" | "Unequality" | "Equality" => {
                arity(2)?;
                let op = match name {
                    "Eq" | "Equality" => CmpOp::Eq,
                    "Ne" | "Unequality" => CmpOp::Ne,
                    "Lt" | "StrictLessThan" => CmpOp::Lt,
                    "Le" | "LessThan" => CmpOp::Le,
                    "Gt" | "StrictGreaterThan" => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                compare(op, exprs(args)?)
            }
            "And" | "AND" => Ok(Val::Cond(SymCond::and_all(conds(args)?))),
            "Or" | "OR" => Ok(Val::Cond(SymCond::or_all(conds(args)?))),
            "Not" => {
                arity(1)?;
                Ok(Val::Cond(conds(args)?.remove(0).not()))
            }
            _ => Err(self.err(
                at,
                format!("the function `{name}` is not part of the supported subset"),
            )),
        }
    }
}

/// `ceil(a / b)` in floor divisions: `-((-a) // b)`.
fn ceil_div(a: &SymExpr, b: &SymExpr) -> SymExpr {
    -(-a).floor_div(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> SymExpr {
        SymExpr::parse(s).unwrap()
    }

    #[test]
    fn reads_dace_spellings() {
        let cases = [
            (
                "symbol($NI, dtype=dace.int64)*symbol($NJ, dtype=dace.int64)",
                "NI*NJ",
            ),
            ("-1 + symbol($N, dtype=dace.int64)", "N - 1"),
            ("int_floor(-4 + H, 2)", "(H - 4) // 2"),
            ("N // 2", "N // 2"),
            ("int_ceil(N, 4)", "-((-N) // 4)"),
            ("ceiling(N/4)", "-((-N) // 4)"),
            ("floor(N/4)", "N // 4"),
            ("R*ceiling(R**i)", "R * R**i"),
            ("Max(k, -1 + N)", "max(k, N - 1)"),
            ("Min(M, N)", "min(N, M)"),
            ("Mod(N + 1, 3)", "(N + 1) % 3"),
            ("(A_row[i + 1])", "A_row[i + 1]"),
            ("Abs(N - 3)", "max(N - 3, 3 - N)"),
            ("2**3*N", "8*N"),
        ];
        for (dace, ours) in cases {
            assert_eq!(parse_expr(dace).unwrap(), e(ours), "{dace}");
        }
    }

    #[test]
    fn reads_conditions() {
        let c = |s: &str| SymCond::parse(s).unwrap();
        assert_eq!(parse_cond("(i < M)").unwrap(), c("i < M"));
        assert_eq!(
            parse_cond("i < M and j >= 2").unwrap(),
            c("i < M and j >= 2")
        );
        assert_eq!(parse_cond("not (i == 2)").unwrap(), c("i != 2"));
        assert_eq!(parse_cond("Ne(i, 2)").unwrap(), c("i != 2"));
        assert_eq!(
            parse_cond("AND(i < M, j >= 2)").unwrap(),
            c("i < M and j >= 2")
        );
        assert_eq!(parse_cond("True").unwrap(), SymCond::TRUE);
        assert_eq!(parse_cond("flag[0]").unwrap(), c("flag[0] != 0"));
        assert_eq!(parse_cond("0 <= i < N").unwrap(), c("0 <= i and i < N"));
    }

    #[test]
    fn refuses_by_name() {
        for (text, needle) in [
            ("N % 2", "`%` is C's truncating remainder"),
            ("CMod(N, 2)", "`CMod`"),
            ("sin(N)", "the function `sin`"),
            ("N / 2", "true division"),
            ("i < N + (j < 2)", "a condition where an integer is needed"),
            ("99999999999999999999", "does not fit in 64 bits"),
            ("N +", "ends too early"),
            ("N ? 2", "unexpected character `?`"),
            ("Min()", "the function `Min`"),
            ("int_floor(N)", "takes 2 arguments"),
        ] {
            let err = parse_expr(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let deep = format!("{}N{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(
            parse_expr(&deep)
                .unwrap_err()
                .to_string()
                .contains("levels deep")
        );
    }

    #[test]
    fn the_deepest_nesting_parses_on_a_small_stack_and_sizes_are_bounded() {
        // 63 levels of each kind on a thread of 1.5 MiB (a test thread
        // has 2), and the refusal past 64.
        for (open, close) in [
            ("(", ")"),
            ("-", ""),
            ("not ", ""),
            ("Max(1, ", ")"),
            ("i**", ""),
        ] {
            let text = format!("{}i{}", open.repeat(63), close.repeat(63));
            let deeper = format!("{}i{}", open.repeat(200), close.repeat(200));
            let refused = std::thread::Builder::new()
                .stack_size(1536 << 10)
                .spawn(move || {
                    let _ = parse_cond(&text);
                    parse_cond(&deeper).is_err()
                })
                .expect("spawn")
                .join()
                .expect("no panic");
            assert!(refused, "{open}");
        }
        // Canonical arithmetic expands: refused once it passes the bound.
        let sum: Vec<String> = (0..20_000).map(|k| format!("a{k}")).collect();
        let products: Vec<String> = (0..40).map(|k| format!("(a{k} + 1)")).collect();
        for text in [sum.join(" + "), products.join(" * ")] {
            let err = parse_expr(&text).unwrap_err().to_string();
            assert!(err.contains("grows past 4096 terms"), "{err}");
            assert!(err.len() < 400, "{err}");
        }
    }

    #[test]
    fn written_text_reads_back_equal() {
        for s in [
            "0",
            "-7",
            "N",
            "2*N*M - 1",
            "N**2 + 3*N*M**3 - 4",
            "(N + 1) // 2 - (M % 3)",
            "min(N, M - 1) + max(2, K)",
            "A_row[i + 1] - A_row[i]",
            "N**K",
            "-(N // -3)",
        ] {
            let x = e(s);
            assert_eq!(
                parse_expr(&write_expr(&x)).unwrap(),
                x,
                "{s}: {}",
                write_expr(&x)
            );
        }
        for s in [
            "i < N",
            "i >= 2 and (j != 3 or k == N - 1)",
            "True",
            "False",
            "not (i < 2)",
        ] {
            let c = SymCond::parse(s).unwrap();
            assert_eq!(
                parse_cond(&write_cond(&c)).unwrap(),
                c,
                "{s}: {}",
                write_cond(&c)
            );
        }
    }
}
