//! Python text parsed with ruff within a nesting bound: the one door through
//! which the frontend (program files) and the DaCe-format reader (tasklet
//! code, interstate Python) read Python.
//!
//! ruff's parser guards its own recursion (it grows its stack on the heap),
//! but everything after it walks the syntax tree recursively: dropping it,
//! the frontend's lowering, the tasklet reader, and the IR's passes over
//! what they produce. A flat chain in the text is a deep tree: `A + A + ...`
//! with 140,000 terms is a left-nested sum 140,000 levels deep, and so are
//! long chains of unary operators, `**`, comparisons, subscripts,
//! attributes and conditional expressions. Such a tree overflowed the stack
//! (an abort, not an error) before any depth limit of the walks was
//! reached.
//!
//! So the text's nesting is bounded before anything walks the tree. The
//! bound is computed from ruff's tokens, iteratively, so that strings and
//! comments do not count (see the private `nesting` for the rule and why it bounds the
//! depth of the tree). Text nested more than [`MAX_NESTING`] levels is a
//! [`SyntaxError::TooDeep`] naming the token where the bound was passed; a
//! long but flat text (a list of 20,000 numbers, a call with thousands of
//! arguments) nests little and is read as before. Every tree this crate
//! returns is at most [`MAX_NESTING`] levels deep (give or take a constant
//! number of levels for statement wrappers), which every walk of it can take
//! on any thread's stack. A tree that is too deep is dropped on a thread
//! whose stack is sized from the bound, so refusing it cannot overflow
//! either.

use ruff_python_ast::token::{Token, TokenKind};
use ruff_python_ast::{Expr, Mod, ModModule};
use ruff_python_parser::{Mode, ParseOptions, Parsed};
use ruff_text_size::Ranged;

/// How deeply Python text may nest, counted by `nesting`. Far beyond
/// what people and DaCe write (the frontend lowers at most 64 levels, the
/// tasklet reader 128, and CPython refuses more than 200 nested brackets),
/// and little enough that the syntax tree and what is built from it can be
/// walked recursively on any thread's stack.
pub const MAX_NESTING: usize = 256;

/// Why Python text was not parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// The text is not Python: ruff's first error.
    #[error("{message}")]
    Invalid {
        /// Byte offset of the error in the text.
        offset: usize,
        /// ruff's description.
        message: String,
    },
    /// The text nests deeper than [`MAX_NESTING`] levels.
    #[error(
        "nested more than {MAX_NESTING} levels deep (brackets, operators, calls, indices, attributes, conditional expressions, blocks and `elif`s count a level each)"
    )]
    TooDeep {
        /// Byte offset of the token where the nesting passed the bound.
        offset: usize,
    },
}

impl SyntaxError {
    /// Byte offset in the text where the error is.
    pub fn offset(&self) -> usize {
        match self {
            SyntaxError::Invalid { offset, .. } | SyntaxError::TooDeep { offset } => *offset,
        }
    }
}

/// Parses a module (a program file, tasklet code) within [`MAX_NESTING`].
pub fn parse_module(text: &str) -> Result<Parsed<ModModule>, SyntaxError> {
    let parsed = parse(text, Mode::Module)?;
    // The mode is a module, so the syntax is one: `None` cannot happen, and
    // is reported rather than unwrapped.
    parsed.try_into_module().ok_or(SyntaxError::Invalid {
        offset: 0,
        message: "not a module".to_owned(),
    })
}

/// Parses one expression (a type written on the command line) within
/// [`MAX_NESTING`].
pub fn parse_expression(text: &str) -> Result<Expr, SyntaxError> {
    match parse(text, Mode::Expression)?.into_syntax() {
        Mod::Expression(e) => Ok(*e.body),
        Mod::Module(_) => Err(SyntaxError::Invalid {
            offset: 0,
            message: "not an expression".to_owned(),
        }),
    }
}

fn parse(text: &str, mode: Mode) -> Result<Parsed<Mod>, SyntaxError> {
    // The bound is checked on the lexer's tokens first, which is linear
    // and builds nothing: ruff's parser is safe on any nesting, but slow on
    // some (nested f-strings take time quadratic in their depth), and its
    // tree is what must not be walked when it is too deep.
    if lexed_too_deep(text, mode) {
        return Err(SyntaxError::TooDeep {
            offset: first_too_deep(text, mode),
        });
    }
    let parsed = ruff_python_parser::parse_unchecked(text, ParseOptions::from(mode));
    // The parser re-lexes where it recovers from errors, so its tokens are
    // checked too: the tree it built is refused where they pass the bound.
    let bound = nesting(tokens_at(parsed.tokens()), MAX_NESTING);
    if let Some(offset) = bound.first_over {
        drop_deep(parsed, bound.depth);
        return Err(SyntaxError::TooDeep { offset });
    }
    if let Some(e) = parsed.errors().first() {
        return Err(SyntaxError::Invalid {
            offset: e.location.start().to_usize(),
            message: e.error.to_string(),
        });
    }
    Ok(parsed)
}

/// Each token's kind, with its offset in the text.
fn tokens_at(tokens: &[Token]) -> impl Iterator<Item = (TokenKind, usize)> + '_ {
    tokens.iter().map(|t| (t.kind(), t.start().to_usize()))
}

/// The tokens of `text` as ruff's lexer reads them, each with its index
/// (the lexer gives no offsets), up to the end of the text.
fn lexed(text: &str, mode: Mode) -> impl Iterator<Item = (TokenKind, usize)> + '_ {
    let mut lexer = ruff_python_parser::lexer::lex(text, mode);
    (0..)
        .map(move |i| (lexer.next_token(), i))
        .take_while(|(kind, _)| *kind != TokenKind::EndOfFile)
}

/// Whether the lexer's tokens of `text` nest deeper than [`MAX_NESTING`].
fn lexed_too_deep(text: &str, mode: Mode) -> bool {
    nesting(lexed(text, mode), MAX_NESTING).first_over.is_some()
}

/// The offset of the token where `text`, which nests too deeply, passes the
/// bound. The lexer gives no offsets and the parser takes long on some
/// deep texts, so the parser reads the shortest prefix (doubling its
/// length) that passes the bound already: its tokens up to that token are
/// the whole text's, and it nests little beyond.
fn first_too_deep(text: &str, mode: Mode) -> usize {
    let mut length = 256;
    let prefix = loop {
        let mut end = length.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &text[..end];
        if end == text.len() || lexed_too_deep(prefix, mode) {
            break prefix;
        }
        length *= 2;
    };
    let parsed = ruff_python_parser::parse_unchecked(prefix, ParseOptions::from(mode));
    let bound = nesting(tokens_at(parsed.tokens()), MAX_NESTING);
    drop_deep(parsed, bound.depth);
    bound.first_over.unwrap_or(0)
}

/// Stack bytes a thread needs, per level of [`nesting`], to drop a syntax
/// tree: 48 suffice for every kind of chain in debug builds
/// (`deep_trees_drop_on_a_thread_sized_from_the_bound`); five times that
/// leaves room for shapes not measured.
const DROP_STACK_PER_LEVEL: usize = 256;

/// Drops a syntax tree `depth` levels deep (by [`nesting`]) on a thread
/// whose stack holds that many levels. Where the system refuses such a
/// thread, the tree is leaked instead: a leak is recoverable, an overflow
/// is not.
fn drop_deep<T: Send + 'static>(tree: T, depth: usize) {
    let stack = (1 << 20) + depth.saturating_mul(DROP_STACK_PER_LEVEL);
    let (send, receive) = std::sync::mpsc::channel::<T>();
    let dropper = std::thread::Builder::new()
        .name("drop-deep-syntax".to_owned())
        .stack_size(stack)
        .spawn(move || drop(receive.recv()));
    match dropper {
        Ok(handle) => match send.send(tree) {
            Ok(()) => {
                let _ = handle.join();
            }
            // The thread is gone before receiving (it cannot be, short of
            // a failure to start): the tree comes back and is leaked.
            Err(std::sync::mpsc::SendError(tree)) => std::mem::forget(tree),
        },
        Err(_) => std::mem::forget(tree),
    }
}

/// The bound [`nesting`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Nesting {
    /// The deepest nesting of any logical line: an upper bound of the
    /// syntax tree's depth (up to a constant).
    depth: usize,
    /// The position of the first token at which the nesting passed the
    /// limit.
    first_over: Option<usize>,
}

/// One open bracket (or the logical line itself, the outermost group).
///
/// Its items are the segments between its commas. A segment's depth is at
/// most the number of operator tokens in it plus the depth of its deepest
/// bracket: every node on a path down the tree below the segment is an
/// operator of the segment (a binary or unary operator, a keyword, a `.`,
/// a call's or subscript's bracket, a `:` or `=`) or lies inside one of its
/// brackets, and distinct nodes on a path are distinct tokens. The group
/// itself (a tuple, list, call's arguments, f-string) adds one.
#[derive(Clone, Copy, Debug, Default)]
struct Group {
    /// The deepest finished segment.
    best: usize,
    /// Operators in the current segment so far.
    ops: usize,
    /// The deepest finished bracket in the current segment.
    child: usize,
    /// `lambda`s whose parameters are open: their commas separate
    /// parameters of one node, not items of the group, so they do not end
    /// a segment (`lambda a, b: lambda c, d: ...` nests).
    lambdas: usize,
}

impl Group {
    /// The group's depth, with a bracket of depth `open` still open inside
    /// its current segment.
    fn depth(&self, open: usize) -> usize {
        1 + self.best.max(self.ops + self.child.max(open))
    }

    fn end_segment(&mut self) {
        self.best = self.best.max(self.ops + self.child);
        self.ops = 0;
        self.child = 0;
    }
}

/// The indented block a logical line is in.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// How deeply its statements nest.
    base: usize,
    /// `elif`s so far in the `if` statement being read at this level: a
    /// reader that nests them (`else: if ...`) makes the last clause's body
    /// as deep as that many nested blocks.
    elifs: usize,
}

/// An upper bound of the depth of the syntax tree of `tokens` (ruff's
/// tokens of a text, trivia included, each with its position), computed in
/// one pass without recursion, and the position of the token where it
/// first passes `limit`.
///
/// The rule: a logical line nests as deeply as its block (two levels per
/// indentation, one per `elif` before it in its `if` statement), plus one
/// for the statement, plus the depth of the line as a [`Group`]: each
/// bracket (and f-string) is a group inside the segment it opens in, each
/// other token that is not a name, number, string or separator counts one
/// level of the segment it is in, and a bracket right after an operand (a
/// call or a subscript) counts one more. Commas separate segments, so a
/// long list is as shallow as its deepest item, while a chain of `n`
/// operators of any kind (`a + a + ...`, `- - - x`, `x[0][0]...`,
/// `a.b.c...`, `a if c else b if c else ...`, `not not ...`) counts `n`.
///
/// The bound over-counts where precedence keeps a tree shallower than its
/// operators (`a*b + c*d` is 2 levels, counted 3); [`MAX_NESTING`] leaves
/// room for that.
fn nesting(tokens: impl Iterator<Item = (TokenKind, usize)>, limit: usize) -> Nesting {
    use TokenKind as K;
    let mut blocks = vec![Block { base: 0, elifs: 0 }];
    let mut groups = vec![Group::default()];
    // Whether the next token starts a logical line, and how deeply the
    // current line's statement nests.
    let mut line_start = true;
    let mut statement = 0usize;
    // Whether the previous token ends an operand, which makes a bracket
    // after it a call or a subscript.
    let mut after_operand = false;
    let mut deepest = 0usize;
    let mut first_over = None;
    let line_depth = |statement: usize, groups: &[Group]| {
        statement + 1 + groups.iter().rev().fold(0, |open, g| g.depth(open))
    };
    for (kind, at) in tokens {
        match kind {
            K::Comment | K::NonLogicalNewline => continue,
            K::Indent => {
                // Two levels: the statement, and the clause of it that
                // holds the block (`else:`, `except:`, `case`), a node of
                // its own in the tree.
                blocks.push(Block {
                    base: statement + 2,
                    elifs: 0,
                });
                continue;
            }
            K::Dedent => {
                if blocks.len() > 1 {
                    blocks.pop();
                }
                continue;
            }
            K::Newline | K::EndOfFile | K::Semi => {
                deepest = deepest.max(line_depth(statement, &groups));
                groups.clear();
                groups.push(Group::default());
                // Statements after a `;` are on the same line, in the same
                // block.
                line_start = kind != K::Semi;
                after_operand = false;
                continue;
            }
            _ => {}
        }
        let mut grew = false;
        if line_start {
            line_start = false;
            if let Some(block) = blocks.last_mut() {
                match kind {
                    K::Elif => block.elifs += 1,
                    K::Else => {}
                    _ => block.elifs = 0,
                }
                statement = block.base + block.elifs;
            }
            grew = true;
        }
        let Some(group) = groups.last_mut() else {
            continue;
        };
        match kind {
            K::Lpar | K::Lsqb | K::Lbrace | K::FStringStart | K::TStringStart => {
                if after_operand && matches!(kind, K::Lpar | K::Lsqb | K::Lbrace) {
                    group.ops += 1;
                }
                // An f-string is two nodes around its fields (the string
                // and its part), a field one more (its `{`).
                let ops = usize::from(matches!(kind, K::FStringStart | K::TStringStart));
                groups.push(Group {
                    ops,
                    ..Group::default()
                });
                after_operand = false;
                grew = true;
            }
            K::Rpar | K::Rsqb | K::Rbrace | K::FStringEnd | K::TStringEnd => {
                // An unmatched closing bracket closes nothing (ruff reports
                // it).
                if groups.len() > 1
                    && let Some(closed) = groups.pop()
                    && let Some(parent) = groups.last_mut()
                {
                    parent.child = parent.child.max(closed.depth(0));
                }
                after_operand = true;
            }
            K::Comma => {
                if group.lambdas == 0 {
                    group.end_segment();
                }
                after_operand = false;
            }
            K::Lambda => {
                group.lambdas += 1;
                group.ops += 1;
                after_operand = false;
                grew = true;
            }
            K::Colon => {
                group.lambdas = group.lambdas.saturating_sub(1);
                group.ops += 1;
                after_operand = false;
                grew = true;
            }
            K::Name
            | K::Int
            | K::Float
            | K::Complex
            | K::String
            | K::True
            | K::False
            | K::None
            | K::Ellipsis => after_operand = true,
            // Text between an f-string's fields: its fields are siblings.
            K::FStringMiddle | K::TStringMiddle => after_operand = false,
            _ => {
                group.ops += 1;
                after_operand = false;
                grew = true;
            }
        }
        if grew && first_over.is_none() && line_depth(statement, &groups) > limit {
            first_over = Some(at);
        }
    }
    deepest = deepest.max(line_depth(statement, &groups));
    Nesting {
        depth: deepest,
        first_over,
    }
}

#[cfg(test)]
mod tests;
