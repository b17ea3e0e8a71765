//! User text quoted in messages, cut to a readable length.
//!
//! Errors quote the code, expression or condition they are about. Input is
//! not always short: a generated condition of 60,000 characters, quoted
//! whole, made a 60 KB message (twice over, where a message quoted the
//! text and the parser's error quoted it again). Every message that quotes
//! user text (the frontend, the DaCe-format reader, the symbolic parsers,
//! the validator, `sdfgc`) goes through [`quote`]: short text whole, long
//! text as its first [`MAX_QUOTED_CHARS`] characters (or the part around
//! the place the message is about), an ellipsis, and how long it is and
//! where the part shown is.

use std::fmt;

/// The most characters of user text a message shows.
pub const MAX_QUOTED_CHARS: usize = 80;

/// `text` as messages quote it, in backticks: whole where it is one line of
/// at most [`MAX_QUOTED_CHARS`] characters, else cut (see the module
/// docs). The full text stays with the caller; only the message is cut.
pub fn quote(text: &str) -> Quoted<'_> {
    Quoted {
        text,
        focus: None,
        at: None,
    }
}

/// User text quoted in a message ([`quote`]).
#[derive(Clone, Copy, Debug)]
pub struct Quoted<'a> {
    text: &'a str,
    /// The byte offset in `text` the message is about.
    focus: Option<usize>,
    /// Where `text` starts in its file (line and column, from 1).
    at: Option<(usize, usize)>,
}

impl<'a> Quoted<'a> {
    /// Shows the part of a long text around byte `offset` (where an error
    /// is), naming its line and column in the text.
    pub fn around(self, offset: usize) -> Quoted<'a> {
        Quoted {
            focus: Some(offset.min(self.text.len())),
            ..self
        }
    }

    /// Names where a long text starts in its file.
    pub fn located(self, line: usize, column: usize) -> Quoted<'a> {
        Quoted {
            at: Some((line, column)),
            ..self
        }
    }
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text;
        let length = text.chars().count();
        if length <= MAX_QUOTED_CHARS && !text.contains('\n') {
            return write!(f, "`{text}`");
        }
        // The part shown: the first line's head, or the focus's line around
        // the focus where the head does not reach it.
        let focus = self.focus.map(|o| floor_boundary(text, o));
        let first_line_end = text.find('\n').unwrap_or(text.len());
        let head_end = nth_boundary(text, 0, MAX_QUOTED_CHARS).min(first_line_end);
        let (start, end) = match focus {
            Some(o) if o >= head_end => {
                let line_start = text[..o].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[o..].find('\n').map_or(text.len(), |i| o + i);
                let before = back_boundary(text, o, MAX_QUOTED_CHARS / 2).max(line_start);
                let after = nth_boundary(text, before, MAX_QUOTED_CHARS).min(line_end);
                (before, after)
            }
            _ => (0, head_end),
        };
        let open = if start > 0 { "…" } else { "" };
        let close = if end < text.len() { "…" } else { "" };
        write!(
            f,
            "`{open}{}{close}` ({length} characters",
            &text[start..end]
        )?;
        let lines = text.lines().count();
        if lines > 1 {
            write!(f, ", {lines} lines")?;
        }
        match (focus, self.at) {
            (Some(o), _) => {
                let (line, column) = line_column(text, o);
                write!(f, "; at line {line} column {column} of it")?;
            }
            (None, Some((line, column))) => write!(f, ", at line {line} column {column}")?,
            (None, None) => {}
        }
        write!(f, ")")
    }
}

/// `message` with each span quoted in backticks or double quotes that is
/// longer than [`MAX_QUOTED_CHARS`] cut to its head, an ellipsis and its
/// length: for messages of other libraries, which quote text whole
/// (serde's ``unknown variant `…` `` and `invalid type: string "…"`).
pub fn cut_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * MAX_QUOTED_CHARS));
    let mut rest = message;
    while let Some(open) = rest.find(['`', '"']) {
        let delimiter = &rest[open..open + 1];
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(delimiter) else {
            rest = after;
            continue;
        };
        let span = &after[..close];
        let length = span.chars().count();
        if length > MAX_QUOTED_CHARS {
            let head = &span[..nth_boundary(span, 0, MAX_QUOTED_CHARS)];
            out.push_str(&format!("{head}…{delimiter} ({length} characters)"));
        } else {
            out.push_str(span);
            out.push_str(delimiter);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// A message of another library, which may show the text it read whole
/// (a parser's frame around the error, serde's quoted values): its quoted
/// spans cut ([`cut_quoted`]), and where it is still longer than four
/// quotes or spans lines, its first line cut there, an ellipsis and its
/// length.
pub fn cut_message(message: &str) -> String {
    let cut = cut_quoted(message);
    let limit = 4 * MAX_QUOTED_CHARS;
    let first_line = cut.lines().next().unwrap_or("");
    if !cut.contains('\n') && cut.chars().count() <= limit {
        return cut;
    }
    let head = &first_line[..nth_boundary(first_line, 0, limit)];
    format!(
        "{head}… ({} characters, {} lines)",
        message.chars().count(),
        message.lines().count()
    )
}

/// The byte offset `count` characters after `from` (or the end).
fn nth_boundary(text: &str, from: usize, count: usize) -> usize {
    text[from..]
        .char_indices()
        .nth(count)
        .map_or(text.len(), |(i, _)| from + i)
}

/// The byte offset `count` characters before `to` (or the start).
fn back_boundary(text: &str, to: usize, count: usize) -> usize {
    text[..to]
        .char_indices()
        .rev()
        .nth(count.saturating_sub(1))
        .map_or(0, |(i, _)| i)
}

/// `offset`, moved back to a character boundary.
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut o = offset.min(text.len());
    while !text.is_char_boundary(o) {
        o -= 1;
    }
    o
}

/// The line and column (from 1, in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(quote("i < N").to_string(), "`i < N`");
        assert_eq!(quote("").to_string(), "``");
        assert_eq!(quote("i < N").around(2).to_string(), "`i < N`");
    }

    #[test]
    fn long_text_is_cut_with_its_length_and_place() {
        let long = "i + ".repeat(15_000) + "1";
        let q = quote(&long).to_string();
        assert!(q.starts_with("`i + i + "), "{q}");
        assert!(q.ends_with("…` (60001 characters)"), "{q}");
        assert!(q.len() < 140, "{q}");
        let q = quote(&long).located(5, 12).to_string();
        assert!(
            q.ends_with("(60001 characters, at line 5 column 12)"),
            "{q}"
        );
        // Around an offset past the head: the part there, and where it is.
        let q = quote(&long).around(40_000).to_string();
        assert!(q.starts_with("`…"), "{q}");
        assert!(q.contains("at line 1 column 40001 of it"), "{q}");
        assert!(q.len() < 160, "{q}");
        // An offset in the head shows the head.
        assert!(quote(&long).around(3).to_string().starts_with("`i + "));
    }

    #[test]
    fn multi_line_text_shows_its_first_line_or_the_focus_line() {
        let code = "a = 1\nb = (\n".to_owned() + &"c".repeat(500) + ")\n";
        let q = quote(&code).to_string();
        assert!(q.starts_with("`a = 1…` ("), "{q}");
        assert!(q.contains("3 lines"), "{q}");
        let at = code.find('c').unwrap() + 200;
        let q = quote(&code).around(at).to_string();
        assert!(q.starts_with("`…cccc"), "{q}");
        assert!(q.contains("at line 3 column 201 of it"), "{q}");
    }

    #[test]
    fn long_spans_of_other_messages_are_cut() {
        let long = "x".repeat(60_000);
        let m =
            format!("unknown variant `{long}`, expected one of `bool`, `int8` at line 1 column 9");
        let cut = cut_quoted(&m);
        assert!(cut.starts_with("unknown variant `xxxx"), "{cut}");
        assert!(
            cut.contains("…` (60000 characters), expected one of `bool`, `int8` at line 1"),
            "{cut}"
        );
        assert!(cut.len() < 300, "{cut}");
        let m = format!("invalid type: string \"{long}\", expected usize");
        assert!(cut_quoted(&m).ends_with("…\" (60000 characters), expected usize"));
        assert_eq!(cut_quoted("a `b` \"c\" `d"), "a `b` \"c\" `d");
        // A parser's frame around its error, showing a long line.
        let frame = format!("syntax error:  --> 1:23562\n  |\n1 | {long}\n  |");
        let cut = cut_message(&frame);
        assert!(cut.starts_with("syntax error:  --> 1:23562… ("), "{cut}");
        assert!(cut.len() < 100, "{cut}");
        assert_eq!(cut_message("No such file"), "No such file");
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "é".repeat(200);
        for offset in 0..text.len() {
            let q = quote(&text).around(offset).to_string();
            assert!(q.chars().filter(|c| *c == 'é').count() <= MAX_QUOTED_CHARS);
        }
    }
}
