//! Copies between containers: between access nodes at a state's top level
//! as runtime copies (one call for a contiguous run, two-dimensional
//! copies, loops of them for the rest), and element by element inside a
//! scope (a tile staged into shared memory, a result written back).
//!
//! Separate because copies have their own geometry (runs, pitches,
//! coalesced dimensions) that neither kernels nor control flow share, and
//! because a top-level copy is decided from the IR first, into a
//! [`CopyPlan`] (containers, direction, geometry), and printed after: the
//! state asks the plan, not the printed call, whether the host must wait
//! for a copy back.

use super::{Emitter, unsupported};
use crate::EmitError;
use crate::cpp::{ctype, ident};
use crate::dialect::PitchedCopy;
use sdfg_accelerator::CopyKind;
use sdfg_ir::{
    DType, DataDesc, Memlet, Node, NodeId, State, Storage, Subset, SymExpr, VIEW_CONNECTOR,
};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The elements of a box that is one run of consecutive elements (each
/// dimension's stride the elements of those inside it), from its
/// `(elements, stride)` per dimension; `None` when it is not one run.
fn contiguous_run(extents: &[(SymExpr, SymExpr)]) -> Option<SymExpr> {
    let mut run = SymExpr::int(1);
    for (count, stride) in extents.iter().rev() {
        if *stride != run {
            return None;
        }
        run = &run * count;
    }
    Some(run)
}

/// A copy between two access nodes at a state's top level, decided from
/// the IR: what it copies, between which memories, and in what geometry.
/// [`Emitter::copy`] prints it; the state asks it, not the printed call,
/// whether the host must wait for a copy back.
pub(super) struct CopyPlan {
    /// The source container (IR name).
    pub(super) src: String,
    /// The destination container (IR name).
    pub(super) dst: String,
    /// Between which memories it copies.
    pub(super) kind: CopyKind,
    /// The element type.
    pub(super) dtype: DType,
    /// The element offset of the first source element (C++).
    pub(super) src_offset: String,
    /// The element offset of the first destination element (C++).
    pub(super) dst_offset: String,
    /// How the elements lie.
    pub(super) shape: CopyShape,
}

/// How the elements of a [`CopyPlan`] lie on both sides.
pub(super) enum CopyShape {
    /// Both sides one run of consecutive elements, of this many: one call,
    /// whatever the shapes (a reshape).
    Run(SymExpr),
    /// Rows of `row` consecutive elements (C++), the innermost dimensions
    /// coalesced: `rows` of them a pitched copy, each point of `loops`
    /// (outermost first) one copy.
    Pitched {
        /// The outer dimensions, each a loop of copies.
        loops: Vec<CopyDim>,
        /// The dimension a pitched copy covers, if any is left.
        rows: Option<CopyDim>,
        /// The elements of one row.
        row: String,
    },
}

/// One dimension of a copy (C++ expressions): its count, and the element
/// strides between consecutive points on each side.
pub(super) struct CopyDim {
    count: String,
    src_stride: String,
    dst_stride: String,
}

impl Emitter<'_> {
    /// The copy a memlet between two access nodes at a state's top level
    /// stands for (`None`: an edge between other nodes).
    pub(super) fn plan_copy(
        &self,
        label: &str,
        state: &State,
        src: NodeId,
        dst: NodeId,
        m: &Memlet,
    ) -> Result<Option<CopyPlan>, EmitError> {
        let (Some(a), Some(b)) = (
            state.node(src).and_then(Node::as_access),
            state.node(dst).and_then(Node::as_access),
        ) else {
            return Ok(None);
        };
        let (sa, sb) = m.copy_subsets(a, &self.shape(if m.data == a { b } else { a }));
        let (sa, sb) = (&sa, &sb);
        let (Some(da), Some(db)) = (self.desc(a), self.desc(b)) else {
            return Err(EmitError::Invalid(format!(
                "copy `{a}` -> `{b}` in `{label}`"
            )));
        };
        // How the copy is issued is the accelerator's answer, the one
        // placement asked when it made the copy; a register at a state's
        // top level is a host value.
        let storage = |d: &DataDesc| match d.storage.side() {
            Some(_) => d.storage,
            None => Storage::Host,
        };
        let (from, to) = (storage(da), storage(db));
        let kind = self
            .d
            .copy(from, to)
            .ok_or_else(|| EmitError::Unsupported {
                what: format!(
                    "a copy from {from} to {to} storage, which the `{}` accelerator cannot issue",
                    self.d.name()
                ),
                node: format!("{a} -> {b}"),
                state: label.to_owned(),
            })?;
        let mut used = BTreeSet::new();
        let (oa, dims_a) = self.subset_geometry(a, sa, &mut used);
        let (ob, dims_b) = self.subset_geometry(b, sb, &mut used);
        let plan = |shape| CopyPlan {
            src: a.to_owned(),
            dst: b.to_owned(),
            kind,
            dtype: da.dtype,
            src_offset: oa.clone(),
            dst_offset: ob.clone(),
            shape,
        };
        let (ext_a, ext_b) = (self.subset_extents(a, sa), self.subset_extents(b, sb));
        // Both sides one run of consecutive elements, each coalesced on its
        // own (a reshape: `(R, M)` into `(R * M,)`): one call, whatever the
        // shapes, decided on the canonical symbolic forms.
        if let (Some(run), Some(other)) = (contiguous_run(&ext_a), contiguous_run(&ext_b))
            && run.joined_powers() == other.joined_powers()
        {
            return Ok(Some(plan(CopyShape::Run(run))));
        }
        if dims_a.len() != dims_b.len() {
            return Err(unsupported(
                format!("a copy `{a}` -> `{b}` between subsets of different shapes"),
                a,
                label,
            ));
        }
        // Innermost dimensions, contiguous on both sides, coalesce into one
        // run: a dimension whose stride is the elements of the run so far,
        // on both sides, decided on the canonical symbolic forms (a whole
        // array of any rank is one copy).
        let mut dims: Vec<CopyDim> = dims_a
            .into_iter()
            .zip(dims_b)
            .map(|((count, src_stride), (_, dst_stride))| CopyDim {
                count,
                src_stride,
                dst_stride,
            })
            .collect();
        let (mut ext_a, mut ext_b) = (ext_a, ext_b);
        let mut row = "1LL".to_owned();
        let mut run_elements = SymExpr::int(1);
        while let (Some(d), Some((count_a, stride_a)), Some((count_b, stride_b))) =
            (dims.last(), ext_a.last(), ext_b.last())
        {
            if !(*stride_a == run_elements && *stride_b == run_elements && count_a == count_b) {
                break;
            }
            run_elements = &run_elements * count_a;
            row = format!("{row} * {}", d.count);
            dims.pop();
            ext_a.pop();
            ext_b.pop();
        }
        let rows = dims.pop();
        Ok(Some(plan(CopyShape::Pitched {
            loops: dims,
            rows,
            row,
        })))
    }

    /// Prints `plan` as one, two-dimensional or nested two-dimensional
    /// runtime copies, queued on the stream.
    pub(super) fn copy(&self, plan: &CopyPlan, indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent);
        let t = ctype(plan.dtype);
        let (a, b) = (ident(&plan.src), ident(&plan.dst));
        let (oa, ob) = (&plan.src_offset, &plan.dst_offset);
        let (loops, rows, row) = match &plan.shape {
            CopyShape::Run(run) => {
                let count = self.sym().expr(run);
                let call = self.d.copy_async(
                    &format!("{b} + ({ob})"),
                    &format!("{a} + ({oa})"),
                    &format!("sizeof({t}) * {count}"),
                    plan.kind,
                    "stream",
                );
                let _ = writeln!(out, "{pad}SDFG_CHECK({call});");
                return;
            }
            CopyShape::Pitched { loops, rows, row } => (loops, rows, row),
        };
        let mut close = String::new();
        let (mut off_a, mut off_b) = (format!("({oa})"), format!("({ob})"));
        for (k, d) in loops.iter().enumerate() {
            let v = format!("sdfg_c{k}");
            let _ = writeln!(
                out,
                "{pad}for (int64_t {v} = 0; {v} < {c}; ++{v}) {{",
                c = d.count
            );
            close.push_str(&format!("{pad}}}\n"));
            off_a = format!("{off_a} + {v} * {}", d.src_stride);
            off_b = format!("{off_b} + {v} * {}", d.dst_stride);
        }
        let (dst, src) = (format!("{b} + {off_b}"), format!("{a} + {off_a}"));
        let width = format!("sizeof({t}) * ({row})");
        let call = match rows {
            None => self.d.copy_async(&dst, &src, &width, plan.kind, "stream"),
            Some(d) => self.d.copy_2d_async(&PitchedCopy {
                dst: &dst,
                dst_pitch: &format!("sizeof({t}) * {}", d.dst_stride),
                src: &src,
                src_pitch: &format!("sizeof({t}) * {}", d.src_stride),
                width: &width,
                height: &d.count,
                kind: plan.kind,
                stream: "stream",
            }),
        };
        let _ = writeln!(out, "{pad}SDFG_CHECK({call});");
        out.push_str(&close);
    }

    /// A copy inside a scope, element by element, from `a[sa]` to `b[sb]`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn element_copy(
        &self,
        label: &str,
        (a, sa): (&str, &Subset),
        (b, sb): (&str, &Subset),
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let pad = "  ".repeat(indent);
        let mut used = BTreeSet::new();
        let (oa, da) = self.subset_geometry(a, sa, &mut used);
        let (ob, db) = self.subset_geometry(b, sb, &mut used);
        if da.len() != db.len() {
            return Err(unsupported(
                format!("a copy `{a}` -> `{b}` between subsets of different shapes"),
                a,
                label,
            ));
        }
        let (mut ia, mut ib) = (format!("({oa})"), format!("({ob})"));
        let mut close = String::new();
        for (k, ((c, s1), (_, s2))) in da.iter().zip(&db).enumerate() {
            let v = format!("sdfg_e{k}");
            let _ = writeln!(out, "{pad}for (int64_t {v} = 0; {v} < {c}; ++{v}) {{");
            close.push_str(&format!("{pad}}}\n"));
            ia = format!("{ia} + {v} * {s1}");
            ib = format!("{ib} + {v} * {s2}");
        }
        let _ = writeln!(out, "{pad}  {}[{ib}] = {}[{ia}];", ident(b), ident(a));
        out.push_str(&close);
        Ok(used)
    }

    /// The copies an access node inside a scope stands for: from another
    /// access node, from data entering the scope (a tile staged into shared
    /// memory), and back out through the scope's exit.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scope_copies(
        &self,
        label: &str,
        state: &State,
        n: NodeId,
        x: &str,
        indent: usize,
        out: &mut String,
    ) -> Result<BTreeSet<String>, EmitError> {
        let mut used = BTreeSet::new();
        let view_edge = |e: &sdfg_ir::Edge| {
            e.dst_conn.as_deref() == Some(VIEW_CONNECTOR)
                || e.src_conn.as_deref() == Some(VIEW_CONNECTOR)
        };
        for (_, src, e) in state.in_edges(n) {
            let Some(m) = e.memlet.as_ref().filter(|_| !view_edge(e)) else {
                continue;
            };
            match state.node(src) {
                Some(Node::Access(a)) => {
                    let other = if m.data == a.data { x } else { &a.data };
                    let (sa, sb) = m.copy_subsets(&a.data, &self.shape(other));
                    used.extend(self.element_copy(label, (&a.data, &sa), (x, &sb), indent, out)?);
                }
                Some(Node::MapEntry(_)) if m.data != x => {
                    let (sa, sb) = m.copy_subsets(&m.data, &self.shape(x));
                    used.extend(self.element_copy(label, (&m.data, &sa), (x, &sb), indent, out)?);
                }
                _ => {}
            }
        }
        for (_, dst, e) in state.out_edges(n) {
            let Some(m) = e.memlet.as_ref().filter(|_| !view_edge(e)) else {
                continue;
            };
            if matches!(state.node(dst), Some(Node::MapExit(_))) && m.data != x {
                let (sa, sb) = m.copy_subsets(x, &self.shape(x));
                used.extend(self.element_copy(label, (x, &sa), (&m.data, &sb), indent, out)?);
            }
        }
        Ok(used)
    }
}
