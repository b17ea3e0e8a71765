//! Memlets: the data that moves along a dataflow edge.
//!
//! A memlet names a container and the part of it an edge reads or writes: a
//! [`Subset`], one [`Range`] per dimension. Ranges are *inclusive* of their end
//! internally (so an index `i` is the range `i..=i`, and propagation takes
//! minima and maxima of bounds without off-by-one adjustments), but their text
//! form is Python's slice syntax with an exclusive end, as DaCe users read it:
//! `0:N` is `0..=N-1`, `i` is one index, `0:N:2` has step 2.

use crate::dtype::{DType, Literal};
use crate::symbolic::{ParseError, SymExpr};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

/// The iteration or index range `begin, begin + step, ..` up to and including `end`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Range {
    /// First index.
    pub begin: SymExpr,
    /// Last index the range may reach (inclusive).
    pub end: SymExpr,
    /// Distance between consecutive indices; never zero.
    pub step: SymExpr,
}

impl Range {
    /// The inclusive range `begin..=end` with step 1.
    pub fn inclusive(begin: SymExpr, end: SymExpr) -> Range {
        Range {
            begin,
            end,
            step: SymExpr::int(1),
        }
    }

    /// The Python slice `begin:stop` (stop exclusive) with step 1.
    pub fn slice(begin: SymExpr, stop: SymExpr) -> Range {
        Range::inclusive(begin, stop - 1)
    }

    /// The single index `index`.
    pub fn index(index: SymExpr) -> Range {
        Range::inclusive(index.clone(), index)
    }

    /// The whole extent `0:extent` of a dimension.
    pub fn full(extent: &SymExpr) -> Range {
        Range::slice(SymExpr::int(0), extent.clone())
    }

    /// Whether the range is a single index (begin and end are the same expression).
    pub fn is_index(&self) -> bool {
        self.begin == self.end
    }

    /// Whether the step is a negative constant (a reversed range).
    fn is_descending(&self) -> bool {
        self.step.as_int().is_some_and(|s| s < 0)
    }

    /// The exclusive end used in the text form: `end + 1`, or `end - 1` for a
    /// negative constant step.
    pub fn stop(&self) -> SymExpr {
        if self.is_descending() {
            &self.end - 1
        } else {
            &self.end + 1
        }
    }

    /// Number of indices in the range, `(end - begin) // step + 1`.
    ///
    /// This is exact for non-empty ranges and gives 0 for the empty slice
    /// `k:k` (whose inclusive end is `k - 1`), which NumPy programs use (e.g.
    /// `A[i, :0]` in Cholesky). Ranges reversed by more than one step are
    /// rejected by the validator where decidable.
    pub fn num_elements(&self) -> SymExpr {
        (&self.end - &self.begin).floor_div(&self.step) + 1
    }

    /// Symbols the range depends on.
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = self.begin.free_symbols();
        out.extend(self.end.free_symbols());
        out.extend(self.step.free_symbols());
        out
    }

    /// [`SymExpr::any_symbol`] over the three bounds.
    pub fn any_symbol<'a>(&'a self, f: &mut impl FnMut(&'a str) -> bool) -> bool {
        self.begin.any_symbol(f) || self.end.any_symbol(f) || self.step.any_symbol(f)
    }

    /// Substitutes symbols in all three bounds.
    pub fn subs(&self, map: &BTreeMap<String, SymExpr>) -> Range {
        Range {
            begin: self.begin.subs(map),
            end: self.end.subs(map),
            step: self.step.subs(map),
        }
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_index() && self.step.as_int() == Some(1) {
            return write!(f, "{}", self.begin);
        }
        write!(f, "{}:{}", self.begin, self.stop())?;
        if self.step.as_int() != Some(1) {
            write!(f, ":{}", self.step)?;
        }
        Ok(())
    }
}

/// A rectangular (possibly strided) region of a container: one range per dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Subset {
    /// The ranges, outermost dimension first.
    pub ranges: Vec<Range>,
}

impl Subset {
    /// A subset from its ranges.
    pub fn new(ranges: Vec<Range>) -> Subset {
        Subset { ranges }
    }

    /// The single element at `indices`.
    pub fn at(indices: Vec<SymExpr>) -> Subset {
        Subset::new(indices.into_iter().map(Range::index).collect())
    }

    /// The whole of a container of the given shape.
    pub fn full(shape: &[SymExpr]) -> Subset {
        Subset::new(shape.iter().map(Range::full).collect())
    }

    /// Parses the text form, e.g. `"i, 0:N, 0:M:2"`.
    pub fn parse(text: &str) -> Result<Subset, ParseError> {
        text.parse()
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.ranges.len()
    }

    /// Number of elements, the product of the ranges' lengths.
    pub fn num_elements(&self) -> SymExpr {
        self.ranges
            .iter()
            .fold(SymExpr::int(1), |acc, r| acc * r.num_elements())
    }

    /// Symbols the subset depends on.
    pub fn free_symbols(&self) -> BTreeSet<String> {
        self.ranges.iter().flat_map(Range::free_symbols).collect()
    }

    /// [`SymExpr::any_symbol`] over every range.
    pub fn any_symbol<'a>(&'a self, f: &mut impl FnMut(&'a str) -> bool) -> bool {
        self.ranges.iter().any(|r| r.any_symbol(f))
    }

    /// Substitutes symbols in every range.
    pub fn subs(&self, map: &BTreeMap<String, SymExpr>) -> Subset {
        Subset::new(self.ranges.iter().map(|r| r.subs(map)).collect())
    }

    /// The smallest step-1 box containing both subsets, or `None` when their
    /// ranks differ or a bound cannot be ordered symbolically, in which case
    /// [`SymExpr::min`]/[`SymExpr::max`] nodes keep the result exact.
    pub fn bounding_union(&self, other: &Subset) -> Option<Subset> {
        if self.rank() != other.rank() {
            return None;
        }
        let ranges = self
            .ranges
            .iter()
            .zip(&other.ranges)
            .map(|(a, b)| {
                if a == b {
                    return a.clone();
                }
                let (a_lo, a_hi) = ordered_bounds(a);
                let (b_lo, b_hi) = ordered_bounds(b);
                Range::inclusive(SymExpr::min(a_lo, b_lo), SymExpr::max(a_hi, b_hi))
            })
            .collect();
        Some(Subset::new(ranges))
    }
}

/// Lowest and highest index a range may touch, whatever the sign of its step.
fn ordered_bounds(r: &Range) -> (SymExpr, SymExpr) {
    if r.is_descending() {
        (r.end.clone(), r.begin.clone())
    } else {
        (r.begin.clone(), r.end.clone())
    }
}

impl fmt::Display for Subset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Splits `text` at top-level occurrences of `sep` (outside brackets and parentheses).
fn split_top_level(text: &str, sep: char) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push((start, &text[start..i]));
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push((start, &text[start..]));
    parts
}

fn parse_expr_at(text: &str, base: usize) -> Result<SymExpr, ParseError> {
    SymExpr::parse(text).map_err(|e| e.shifted(base))
}

impl FromStr for Range {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Range, ParseError> {
        let parts = split_top_level(text, ':');
        match parts.as_slice() {
            [(o, index)] => Ok(Range::index(parse_expr_at(index, *o)?)),
            [(ob, b), (oe, e)] => Ok(Range::slice(parse_expr_at(b, *ob)?, parse_expr_at(e, *oe)?)),
            [(ob, b), (oe, e), (os, s)] => {
                let begin = parse_expr_at(b, *ob)?;
                let stop = parse_expr_at(e, *oe)?;
                let step = parse_expr_at(s, *os)?;
                let end = if step.as_int().is_some_and(|s| s < 0) {
                    stop + 1
                } else {
                    stop - 1
                };
                Ok(Range { begin, end, step })
            }
            _ => Err(ParseError::custom(
                parts.get(3).map_or(0, |p| p.0),
                "a range `begin:stop[:step]` with at most two colons",
            )),
        }
    }
}

impl FromStr for Subset {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Subset, ParseError> {
        if text.trim().is_empty() {
            return Ok(Subset::default());
        }
        split_top_level(text, ',')
            .into_iter()
            .map(|(offset, part)| part.parse::<Range>().map_err(|e| e.shifted(offset)))
            .collect::<Result<Vec<_>, _>>()
            .map(Subset::new)
    }
}

impl Serialize for Range {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Range, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(|e: ParseError| {
            let quoted = crate::quote(&text).around(e.offset);
            serde::de::Error::custom(format!("range {quoted}: {e}"))
        })
    }
}

impl Serialize for Subset {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Subset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Subset, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(|e: ParseError| {
            let quoted = crate::quote(&text).around(e.offset);
            serde::de::Error::custom(format!("subset {quoted}: {e}"))
        })
    }
}

/// How concurrent writes to the same element are combined (write-conflict resolution).
///
/// A memlet with a WCR does not overwrite its target: it combines the written
/// value with the value already there. On a device this becomes an atomic
/// operation; in a sequential loop a read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wcr {
    /// `old + new`.
    Sum,
    /// `old * new`.
    Product,
    /// `min(old, new)`.
    Min,
    /// `max(old, new)`.
    Max,
    /// `old & new` (integers and booleans).
    BitAnd,
    /// `old | new` (integers and booleans).
    BitOr,
    /// `old ^ new` (integers and booleans).
    BitXor,
}

impl fmt::Display for Wcr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Wcr::Sum => "sum",
            Wcr::Product => "product",
            Wcr::Min => "min",
            Wcr::Max => "max",
            Wcr::BitAnd => "bit_and",
            Wcr::BitOr => "bit_or",
            Wcr::BitXor => "bit_xor",
        })
    }
}

impl Wcr {
    /// The identity of the combination for `dtype`: where an accumulation
    /// starts, so that combining it with any value gives that value (`+inf`
    /// for a float minimum, the largest value for an integer one). The
    /// reduction expansions start from it, and the emitter's block
    /// reductions start each thread's partial from it.
    pub fn identity(self, dtype: DType) -> Literal {
        let int = |v: i64| Literal::Int { value: v, dtype };
        // The largest value of an unsigned type: every bit set.
        let all_ones = |t: DType| match t {
            DType::UInt8 => u8::MAX.into(),
            DType::UInt16 => u16::MAX.into(),
            DType::UInt32 => u32::MAX.into(),
            _ => u64::MAX,
        };
        let float = |v: f64| Literal::Float { value: v, dtype };
        match (self, dtype) {
            (Wcr::Sum, t) if t.is_float() => float(0.0),
            (Wcr::Product, t) if t.is_float() => float(1.0),
            (Wcr::Min, t) if t.is_float() => float(f64::INFINITY),
            (Wcr::Max, t) if t.is_float() => float(f64::NEG_INFINITY),
            (Wcr::Sum, t) if t.is_complex() => Literal::Complex {
                re: 0.0,
                im: 0.0,
                dtype,
            },
            (Wcr::Product, t) if t.is_complex() => Literal::Complex {
                re: 1.0,
                im: 0.0,
                dtype,
            },
            (Wcr::BitOr | Wcr::BitXor, DType::Bool) => Literal::Bool(false),
            (Wcr::BitAnd, DType::Bool) => Literal::Bool(true),
            (Wcr::BitOr | Wcr::BitXor, t) if t.is_unsigned_integer() => {
                Literal::UInt { value: 0, dtype }
            }
            (Wcr::BitAnd, t) if t.is_unsigned_integer() => Literal::UInt {
                value: all_ones(t),
                dtype,
            },
            // Every bit set, of a signed integer: -1.
            (Wcr::BitAnd, _) => int(-1),
            (Wcr::BitOr | Wcr::BitXor, _) => int(0),
            (Wcr::Sum, t) if t.is_unsigned_integer() => Literal::UInt { value: 0, dtype },
            (Wcr::Product, t) if t.is_unsigned_integer() => Literal::UInt { value: 1, dtype },
            (Wcr::Min, t) if t.is_unsigned_integer() => Literal::UInt {
                value: all_ones(t),
                dtype,
            },
            (Wcr::Max, t) if t.is_unsigned_integer() => Literal::UInt { value: 0, dtype },
            (Wcr::Sum, _) => int(0),
            (Wcr::Product, _) => int(1),
            (Wcr::Min, t) => int(match t {
                DType::Int8 => i8::MAX.into(),
                DType::Int16 => i16::MAX.into(),
                DType::Int32 => i32::MAX.into(),
                DType::Bool => 1,
                _ => i64::MAX,
            }),
            (Wcr::Max, t) => int(match t {
                DType::Int8 => i8::MIN.into(),
                DType::Int16 => i16::MIN.into(),
                DType::Int32 => i32::MIN.into(),
                DType::Bool => 0,
                _ => i64::MIN,
            }),
        }
    }
}

/// The data moved along one dataflow edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memlet {
    /// The container read or written.
    pub data: String,
    /// The part of `data` that is accessed.
    pub subset: Subset,
    /// For an edge between two access nodes (a copy): the part of the *other*
    /// container that is written or read. `None` means the same subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_subset: Option<Subset>,
    /// Write-conflict resolution for writes, `None` for plain writes and reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wcr: Option<Wcr>,
    /// Number of elements moved (an upper bound when `dynamic`).
    pub volume: SymExpr,
    /// True when the access is data-dependent: the subset bounds it, but what
    /// is touched is only known at run time (indirect access, conditional writes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dynamic: bool,
}

impl Memlet {
    /// A memlet of `data[subset]` with the volume of the subset.
    pub fn new(data: impl Into<String>, subset: Subset) -> Memlet {
        let volume = subset.num_elements();
        Memlet {
            data: data.into(),
            subset,
            other_subset: None,
            wcr: None,
            volume,
            dynamic: false,
        }
    }

    /// Parses `data` and a subset in text form, e.g. `Memlet::parse("A", "i, 0:N")`.
    pub fn parse(data: impl Into<String>, subset: &str) -> Result<Memlet, ParseError> {
        Ok(Memlet::new(data, Subset::parse(subset)?))
    }

    /// The whole of a container of the given shape.
    pub fn full(data: impl Into<String>, shape: &[SymExpr]) -> Memlet {
        Memlet::new(data, Subset::full(shape))
    }

    /// Sets write-conflict resolution.
    #[must_use]
    pub fn with_wcr(mut self, wcr: Wcr) -> Memlet {
        self.wcr = Some(wcr);
        self
    }

    /// Sets the other subset of a copy.
    #[must_use]
    pub fn with_other_subset(mut self, other: Subset) -> Memlet {
        self.other_subset = Some(other);
        self
    }

    /// Marks the memlet dynamic (data-dependent access within `subset`).
    #[must_use]
    pub fn into_dynamic(mut self) -> Memlet {
        self.dynamic = true;
        self
    }

    /// The (source, destination) subsets of a copy from container `src`
    /// that this memlet carries between two access nodes. The memlet's own
    /// subset belongs to `self.data` (one of the two containers); the other
    /// container's is `other_subset`, which defaults to the same subset when
    /// the ranks agree and to the whole other container (of shape
    /// `other_shape`) otherwise. The simulator, the offload pass and the
    /// emitters all read copies through this one rule.
    pub fn copy_subsets(&self, src: &str, other_shape: &[SymExpr]) -> (Subset, Subset) {
        let other = self.other_end(other_shape);
        if self.data == src {
            (self.subset.clone(), other)
        } else {
            (other, self.subset.clone())
        }
    }

    /// The subset of the end of a copy that `data` does not name, in the
    /// coordinates of that other container (of shape `other_shape`):
    /// `other_subset`, or where it is `None` the same subset when the ranks
    /// agree and the whole other container otherwise. This is the IR's
    /// default, which [`copy_subsets`](Self::copy_subsets) applies; DaCe's
    /// default for a missing other subset differs, so DaCe's format writes
    /// this subset out for every copy (`sdfg-dace-format`).
    pub fn other_end(&self, other_shape: &[SymExpr]) -> Subset {
        match &self.other_subset {
            Some(o) => o.clone(),
            None if other_shape.len() == self.subset.rank() => self.subset.clone(),
            None => Subset::full(other_shape),
        }
    }

    /// Symbols the memlet depends on.
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = self.subset.free_symbols();
        if let Some(o) = &self.other_subset {
            out.extend(o.free_symbols());
        }
        out.extend(self.volume.free_symbols());
        out
    }

    /// [`SymExpr::any_symbol`] over the subsets and the volume: what
    /// [`free_symbols`](Self::free_symbols) collects, without the set.
    pub fn any_symbol<'a>(&'a self, f: &mut impl FnMut(&'a str) -> bool) -> bool {
        self.subset.any_symbol(f)
            || self.other_subset.as_ref().is_some_and(|o| o.any_symbol(f))
            || self.volume.any_symbol(f)
    }
}

impl fmt::Display for Memlet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.data, self.subset)?;
        if let Some(o) = &self.other_subset {
            write!(f, " -> [{o}]")?;
        }
        if let Some(w) = self.wcr {
            write!(f, " (wcr: {w})")?;
        }
        if self.dynamic {
            f.write_str(" (dynamic)")?;
        }
        Ok(())
    }
}
