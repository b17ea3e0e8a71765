//! Copies between containers: between access nodes at a state's top level
//! as runtime copies (one call for a contiguous run, two-dimensional
//! copies, loops of them for the rest), and element by element inside a
//! scope (a tile staged into shared memory, a result written back).
//!
//! Separate because copies have their own geometry (runs, pitches,
//! coalesced dimensions) that neither kernels nor control flow share.

use super::{Emitter, unsupported};
use crate::EmitError;
use crate::cpp::{ctype, ident};
use sdfg_ir::{DataDesc, Memlet, Node, NodeId, Side, State, Subset, SymExpr, VIEW_CONNECTOR};
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

impl Emitter<'_> {
    /// A copy between two access nodes, as one, two-dimensional or nested
    /// two-dimensional runtime copies; returns whether it is device to host.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy(
        &self,
        label: &str,
        state: &State,
        src: NodeId,
        dst: NodeId,
        m: &Memlet,
        indent: usize,
        out: &mut String,
    ) -> Result<bool, EmitError> {
        let pad = "  ".repeat(indent);
        let (Some(a), Some(b)) = (
            state.node(src).and_then(Node::as_access),
            state.node(dst).and_then(Node::as_access),
        ) else {
            return Ok(false);
        };
        let (sa, sb) = m.copy_subsets(a, &self.shape(if m.data == a { b } else { a }));
        let (sa, sb) = (&sa, &sb);
        let (Some(da), Some(db)) = (self.desc(a), self.desc(b)) else {
            return Err(EmitError::Invalid(format!(
                "copy `{a}` -> `{b}` in `{label}`"
            )));
        };
        let side = |d: &DataDesc| d.storage.side().unwrap_or(Side::Host);
        let kind = match (side(da), side(db)) {
            (Side::Host, Side::Device) => "MemcpyHostToDevice",
            (Side::Device, Side::Host) => "MemcpyDeviceToHost",
            (Side::Device, Side::Device) => "MemcpyDeviceToDevice",
            (Side::Host, Side::Host) => "MemcpyHostToHost",
        };
        let mut used = BTreeSet::new();
        let (oa, dims_a) = self.subset_geometry(a, sa, &mut used);
        let (ob, dims_b) = self.subset_geometry(b, sb, &mut used);
        let t = ctype(da.dtype);
        let api = self.api("MemcpyAsync");
        let (ext_a, ext_b) = (self.subset_extents(a, sa), self.subset_extents(b, sb));
        // Both sides one run of consecutive elements, each coalesced on its
        // own (a reshape: `(R, M)` into `(R * M,)`): one call, whatever the
        // shapes, decided on the canonical symbolic forms.
        if let (Some(run), Some(other)) = (contiguous_run(&ext_a), contiguous_run(&ext_b))
            && run.joined_powers() == other.joined_powers()
        {
            let mut p = self.sym();
            let count = p.expr(&run);
            let kind = self.api(kind);
            let _ = writeln!(
                out,
                "{pad}SDFG_CHECK({api}({} + ({ob}), {} + ({oa}), sizeof({t}) * {count}, {kind}, stream));",
                ident(b),
                ident(a)
            );
            return Ok(kind.ends_with("DeviceToHost"));
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
        let mut dims: Vec<(String, String, String)> = dims_a
            .into_iter()
            .zip(dims_b)
            .map(|((c, s1), (_, s2))| (c, s1, s2))
            .collect();
        let (mut ext_a, mut ext_b) = (ext_a, ext_b);
        let mut run = "1LL".to_owned();
        let mut run_elements = SymExpr::int(1);
        while let (Some((c, _, _)), Some((count_a, stride_a)), Some((count_b, stride_b))) =
            (dims.last().cloned(), ext_a.last(), ext_b.last())
        {
            if !(*stride_a == run_elements && *stride_b == run_elements && count_a == count_b) {
                break;
            }
            run_elements = &run_elements * count_a;
            run = format!("{run} * {c}");
            dims.pop();
            ext_a.pop();
            ext_b.pop();
        }
        let api2 = self.api("Memcpy2DAsync");
        let kind = self.api(kind);
        let mut loops = String::new();
        let mut close = String::new();
        let (mut off_a, mut off_b) = (format!("({oa})"), format!("({ob})"));
        let height = dims.pop();
        for (k, (c, s1, s2)) in dims.iter().enumerate() {
            let v = format!("sdfg_c{k}");
            let _ = writeln!(loops, "{pad}for (int64_t {v} = 0; {v} < {c}; ++{v}) {{");
            close.push_str(&format!("{pad}}}\n"));
            off_a = format!("{off_a} + {v} * {s1}");
            off_b = format!("{off_b} + {v} * {s2}");
        }
        out.push_str(&loops);
        match height {
            None => {
                let _ = writeln!(
                    out,
                    "{pad}SDFG_CHECK({api}({} + {off_b}, {} + {off_a}, sizeof({t}) * ({run}), {kind}, stream));",
                    ident(b),
                    ident(a)
                );
            }
            Some((c, s1, s2)) => {
                let _ = writeln!(
                    out,
                    "{pad}SDFG_CHECK({api2}({} + {off_b}, sizeof({t}) * {s2}, {} + {off_a}, sizeof({t}) * {s1}, sizeof({t}) * ({run}), {c}, {kind}, stream));",
                    ident(b),
                    ident(a)
                );
            }
        }
        out.push_str(&close);
        Ok(kind.ends_with("DeviceToHost"))
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
