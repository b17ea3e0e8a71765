//! Recursive-descent parser for the Python-syntax text form.
//!
//! One grammar serves both types; each level knows whether it produced an integer expression
//! or a condition and reports a type error where the other was required:
//!
//! ```text
//! or      := and ("or" and)*
//! and     := not ("and" not)*
//! not     := "not" not | cmp
//! cmp     := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)*     (chains like Python)
//! sum     := term (("+" | "-") term)*
//! term    := unary (("*" | "//" | "%") unary)*
//! unary   := ("-" | "+") unary | power
//! power   := primary ("**" unary)?                                  (right-associative)
//! primary := INT | "True" | "False" | "true" | "false" | "(" or ")"
//!          | ("min" | "max" | "Min" | "Max") "(" or ("," or)* ")"
//!          | IDENT "[" (or ("," or)*)? "]" | IDENT
//! ```

use std::str::FromStr;

use super::cond::{CmpOp, SymCond};
use super::expr::{MAX_READ_SIZE, SymExpr};

/// A syntax or type error in the text form of a [`SymExpr`] or [`SymCond`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected} at byte {offset}, found {found}")]
pub struct ParseError {
    /// Byte offset into the input where the error was detected.
    pub offset: usize,
    /// What the parser expected there.
    pub expected: &'static str,
    /// What it found instead.
    pub found: String,
}

/// Maximum nesting of parentheses, unary operators and argument lists:
/// each level is a dozen recursive calls, over 20 KiB of stack in debug
/// builds, so 64 levels take under 1.5 MiB, within a test thread's 2 MiB
/// (`the_deepest_nesting_parses_on_a_small_stack`; 128 levels, the bound
/// before, did not fit). Far beyond what SDFGs hold.
const MAX_DEPTH: u32 = 64;

/// Longest first, so that `**` is not lexed as two `*`.
const PUNCTS: [&str; 17] = [
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "%", "<", ">", "(", ")", "[", "]", ",",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Int(i64),
    Ident(&'a str),
    Punct(&'static str),
    End,
}

enum Val {
    Expr(SymExpr),
    Cond(SymCond),
}

type Res<T> = Result<T, ParseError>;

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: u32,
    /// Set by a unary `-` directly before the literal `9223372036854775808`
    /// (2**63, lexed as `i64::MIN`): the one place that literal fits.
    negated_literal: bool,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    /// Skips whitespace and returns the offset of the next token.
    fn start(&mut self) -> usize {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
        self.pos
    }

    /// The next token and the offset just past it, without consuming it.
    fn peek(&mut self) -> Res<(Tok<'a>, usize)> {
        let start = self.start();
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let Some(&c) = bytes.first() else {
            return Ok((Tok::End, start));
        };
        let word = |pred: fn(&u8) -> bool| {
            let len = bytes.iter().take_while(|b| pred(b)).count();
            (rest.get(..len).unwrap_or(""), start + len)
        };
        if c.is_ascii_digit() {
            let (digits, end) = word(u8::is_ascii_digit);
            // 2**63 is accepted and wraps to i64::MIN, so that `-9223372036854775808` parses.
            return match digits.parse::<u64>() {
                Ok(v) if v <= 1 << 63 => Ok((Tok::Int(v as i64), end)),
                _ => Err(self.error(start, "an integer literal of at most 2**63", digits)),
            };
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let (ident, end) = word(|b| b.is_ascii_alphanumeric() || *b == b'_');
            return Ok((Tok::Ident(ident), end));
        }
        match PUNCTS.into_iter().find(|p| rest.starts_with(p)) {
            Some(p) => Ok((Tok::Punct(p), start + p.len())),
            None => {
                let ch = rest.chars().next().map(String::from).unwrap_or_default();
                Err(self.error(start, "a number, name, operator or bracket", &ch))
            }
        }
    }

    fn error(&self, offset: usize, expected: &'static str, found: &str) -> ParseError {
        ParseError {
            offset,
            expected,
            found: crate::quote(found).to_string(),
        }
    }

    /// An error describing the next token.
    fn unexpected(&mut self, expected: &'static str) -> ParseError {
        match self.peek() {
            Ok((Tok::End, at)) => ParseError {
                offset: at,
                expected,
                found: "end of input".into(),
            },
            Ok((_, end)) => {
                let text = self.src.get(self.pos..end).unwrap_or("");
                self.error(self.pos, expected, text)
            }
            Err(e) => e,
        }
    }

    fn eat(&mut self, tok: Tok<'_>) -> Res<bool> {
        let (next, end) = self.peek()?;
        let hit = next == tok;
        if hit {
            self.pos = end;
        }
        Ok(hit)
    }

    fn expect(&mut self, punct: &'static str, expected: &'static str) -> Res<()> {
        if self.eat(Tok::Punct(punct))? {
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// Consumes the next token if it is one of `ops`.
    fn eat_op(&mut self, ops: &[&'static str]) -> Res<Option<&'static str>> {
        let (tok, end) = self.peek()?;
        Ok(match tok {
            Tok::Punct(p) if ops.contains(&p) => {
                self.pos = end;
                Some(p)
            }
            _ => None,
        })
    }

    fn nest<T>(&mut self, f: impl FnOnce(&mut Self) -> Res<T>) -> Res<T> {
        if self.depth >= MAX_DEPTH {
            const _: () = assert!(MAX_DEPTH == 64, "the message names the bound");
            return Err(self.unexpected("at most 64 levels of nesting"));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn expr(v: Val, at: usize) -> Res<SymExpr> {
        match v {
            Val::Expr(e) => Ok(e),
            Val::Cond(_) => Err(ParseError {
                offset: at,
                expected: "an integer expression",
                found: "a condition".into(),
            }),
        }
    }

    fn cond(v: Val, at: usize) -> Res<SymCond> {
        match v {
            Val::Cond(c) => Ok(c),
            Val::Expr(_) => Err(ParseError {
                offset: at,
                expected: "a condition",
                found: "an integer expression".into(),
            }),
        }
    }

    /// A sub-level parsed to an expression, with type errors reported at its start.
    fn sub_expr(&mut self, level: fn(&mut Self) -> Res<Val>) -> Res<SymExpr> {
        let at = self.start();
        Self::expr(level(self)?, at)
    }

    fn sub_cond(&mut self, level: fn(&mut Self) -> Res<Val>) -> Res<SymCond> {
        let at = self.start();
        Self::cond(level(self)?, at)
    }

    fn or(&mut self) -> Res<Val> {
        self.junction("or", Self::and, SymCond::or)
    }

    fn and(&mut self) -> Res<Val> {
        self.junction("and", Self::not, SymCond::and)
    }

    fn junction(
        &mut self,
        keyword: &str,
        level: fn(&mut Self) -> Res<Val>,
        join: fn(SymCond, SymCond) -> SymCond,
    ) -> Res<Val> {
        let at = self.start();
        let first = level(self)?;
        if !self.eat(Tok::Ident(keyword))? {
            return Ok(first);
        }
        let mut acc = Self::cond(first, at)?;
        loop {
            acc = join(acc, self.sub_cond(level)?);
            if !self.eat(Tok::Ident(keyword))? {
                return Ok(Val::Cond(acc));
            }
        }
    }

    fn not(&mut self) -> Res<Val> {
        if self.eat(Tok::Ident("not"))? {
            let c = self.nest(|p| p.sub_cond(Self::not))?;
            return Ok(Val::Cond(c.not()));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Res<Val> {
        const OPS: [(&str, CmpOp); 6] = [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<", CmpOp::Lt),
            ("<=", CmpOp::Le),
            (">", CmpOp::Gt),
            (">=", CmpOp::Ge),
        ];
        let names = OPS.map(|(s, _)| s);
        let op_of = |s| {
            OPS.iter()
                .find(|(n, _)| *n == s)
                .map_or(CmpOp::Eq, |(_, op)| *op)
        };
        let at = self.start();
        let first = self.sum()?;
        let Some(mut op) = self.eat_op(&names)?.map(op_of) else {
            return Ok(first);
        };
        let mut lhs = Self::expr(first, at)?;
        let mut acc = SymCond::TRUE;
        loop {
            let rhs = self.sub_expr(Self::sum)?;
            // `a < b < c` means `a < b and b < c`, as in Python.
            match self.eat_op(&names)?.map(op_of) {
                Some(next) => {
                    acc = acc.and(SymCond::cmp(lhs, op, rhs.clone()));
                    (lhs, op) = (rhs, next);
                }
                None => return Ok(Val::Cond(acc.and(SymCond::cmp(lhs, op, rhs)))),
            }
        }
    }

    fn binary(
        &mut self,
        ops: &[&'static str],
        level: fn(&mut Self) -> Res<Val>,
        apply: fn(SymExpr, &str, SymExpr) -> SymExpr,
    ) -> Res<Val> {
        let at = self.start();
        let first = level(self)?;
        let Some(mut op) = self.eat_op(ops)? else {
            return Ok(first);
        };
        let mut acc = Self::expr(first, at)?;
        loop {
            let at = self.start();
            let rhs = self.sub_expr(level)?;
            if op == "*" {
                Self::bounded(acc.product_size(&rhs), at)?;
            }
            acc = apply(acc, op, rhs);
            Self::bounded(acc.size(), at)?;
            match self.eat_op(ops)? {
                Some(next) => op = next,
                None => return Ok(Val::Expr(acc)),
            }
        }
    }

    /// Refuses, at `at`, an operation whose result (or work) would be
    /// larger than [`MAX_READ_SIZE`].
    fn bounded(size: usize, at: usize) -> Res<()> {
        const _: () = assert!(MAX_READ_SIZE == 4096, "the message below names the bound");
        if size <= MAX_READ_SIZE {
            return Ok(());
        }
        Err(ParseError {
            offset: at,
            expected: "an expression of at most 4096 terms and factors",
            found: "one that grows larger".into(),
        })
    }

    fn sum(&mut self) -> Res<Val> {
        self.binary(&["+", "-"], Self::term, |a, op, b| {
            if op == "+" { a + b } else { a - b }
        })
    }

    fn term(&mut self) -> Res<Val> {
        self.binary(&["*", "//", "%"], Self::unary, |a, op, b| match op {
            "*" => a * b,
            "//" => a.floor_div(&b),
            _ => a.modulo(&b),
        })
    }

    fn unary(&mut self) -> Res<Val> {
        match self.eat_op(&["-", "+"])? {
            Some(op) => {
                let min_literal = op == "-" && matches!(self.peek()?.0, Tok::Int(i64::MIN));
                self.negated_literal = min_literal;
                let e = self.nest(|p| p.sub_expr(Self::unary))?;
                self.negated_literal = false;
                Ok(Val::Expr(match op {
                    // `-9223372036854775808` is `i64::MIN`, the literal's
                    // encoding; negating it would note a wraparound.
                    "-" if min_literal && e.as_int() == Some(i64::MIN) => e,
                    "-" => -e,
                    _ => e,
                }))
            }
            None => self.power(),
        }
    }

    fn power(&mut self) -> Res<Val> {
        let at = self.start();
        let base = self.primary()?;
        if !self.eat(Tok::Punct("**"))? {
            return Ok(base);
        }
        let base = Self::expr(base, at)?;
        let exp = self.nest(|p| p.sub_expr(Self::unary))?;
        Self::bounded(base.power_size(&exp), at)?;
        Ok(Val::Expr(base.pow(&exp)))
    }

    /// Comma-separated expressions up to `close` (which is consumed).
    fn list(&mut self, close: &'static str, expected: &'static str) -> Res<Vec<SymExpr>> {
        let mut out = Vec::new();
        if self.eat(Tok::Punct(close))? {
            return Ok(out);
        }
        loop {
            out.push(self.sub_expr(Self::or)?);
            if self.eat(Tok::Punct(close))? {
                return Ok(out);
            }
            self.expect(",", expected)?;
        }
    }

    fn primary(&mut self) -> Res<Val> {
        let (tok, end) = self.peek()?;
        let c = match tok {
            Tok::Int(v) => {
                if v == i64::MIN && !std::mem::take(&mut self.negated_literal) {
                    return Err(self.error(
                        self.pos,
                        "an integer literal below 2**63 (2**63 only negated)",
                        "9223372036854775808",
                    ));
                }
                self.pos = end;
                return Ok(Val::Expr(SymExpr::int(v)));
            }
            Tok::Punct("(") => {
                self.pos = end;
                let v = self.nest(Self::or)?;
                self.expect(")", "`)`")?;
                return Ok(v);
            }
            Tok::Ident("True" | "true") => SymCond::TRUE,
            Tok::Ident("False" | "false") => SymCond::FALSE,
            Tok::Ident(name) if !matches!(name, "and" | "or" | "not") => {
                return self.named(name, end);
            }
            _ => return Err(self.unexpected("a number, name, `(`, `-` or `not`")),
        };
        self.pos = end;
        Ok(Val::Cond(c))
    }

    /// A symbol, a read `name[...]` or a call `min(...)`/`max(...)`.
    fn named(&mut self, name: &'a str, end: usize) -> Res<Val> {
        self.pos = end;
        let is_max = matches!(name, "max" | "Max");
        if (is_max || matches!(name, "min" | "Min")) && self.eat(Tok::Punct("("))? {
            let at = self.start();
            let args = self.nest(|p| p.list(")", "`,` or `)`"))?;
            let e = if is_max {
                SymExpr::max_all(args)
            } else {
                SymExpr::min_all(args)
            };
            return e.map(Val::Expr).ok_or(ParseError {
                offset: at,
                expected: "at least one argument",
                found: "`)`".into(),
            });
        }
        if self.eat(Tok::Punct("["))? {
            let index = self.nest(|p| p.list("]", "`,` or `]`"))?;
            return Ok(Val::Expr(SymExpr::read(name, index)));
        }
        Ok(Val::Expr(SymExpr::symbol(name)))
    }
}

/// Parses a whole input at the top level.
fn parse_all(src: &str) -> Res<(Val, usize)> {
    let mut p = Parser {
        src,
        pos: 0,
        depth: 0,
        negated_literal: false,
    };
    let at = p.start();
    let v = p.or()?;
    match p.peek()? {
        (Tok::End, _) => Ok((v, at)),
        _ => Err(p.unexpected("an operator or the end of input")),
    }
}

impl SymExpr {
    /// Parses the Python-syntax text form (see the module docs).
    pub fn parse(src: &str) -> Result<SymExpr, ParseError> {
        let (v, at) = exactly(src)?;
        Parser::expr(v, at)
    }
}

impl SymCond {
    /// Parses the Python-syntax text form of a condition.
    pub fn parse(src: &str) -> Result<SymCond, ParseError> {
        let (v, at) = exactly(src)?;
        Parser::cond(v, at)
    }
}

/// [`parse_all`], refusing text whose arithmetic does not fit in 64 bits
/// (`10**18 * 10**18`): folded with wrapping, it would mean another number.
fn exactly(src: &str) -> Res<(Val, usize)> {
    SymExpr::exact(|| parse_all(src)).unwrap_or_else(|| {
        Err(ParseError {
            offset: 0,
            expected: "arithmetic whose values fit in 64 bits",
            found: crate::quote(src).to_string(),
        })
    })
}

impl FromStr for SymExpr {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<SymExpr, ParseError> {
        SymExpr::parse(s)
    }
}

impl FromStr for SymCond {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<SymCond, ParseError> {
        SymCond::parse(s)
    }
}

impl ParseError {
    /// An error at `offset` where `expected` was expected, for parsers of
    /// larger text forms (subsets, memlets) built on this one.
    pub fn custom(offset: usize, expected: &'static str) -> ParseError {
        ParseError {
            offset,
            expected,
            found: "something else".to_owned(),
        }
    }

    /// The same error with its offset moved by `by` bytes, for text parsed
    /// as a slice of a larger input.
    #[must_use]
    pub fn shifted(mut self, by: usize) -> ParseError {
        self.offset += by;
        self
    }
}
