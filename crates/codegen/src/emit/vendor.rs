//! Calls to the vendor libraries: device-wide GEMM, GEMV and DOT as calls
//! to the dialect's BLAS, Cholesky factorizations and linear solves as
//! calls to its dense solver, the solver's grow-only workspace and the
//! factorization sites whose failures a run reports.
//!
//! Separate because vendor calls are host code of their own kind: column-
//! major calls on row-major data, with handles and workspaces the unit
//! creates only where a call needs them.

use super::{Emitter, unsupported};
use crate::cpp::{self, ctype, ident};
use crate::dialect::{LaunchGrid, LaunchPlan, PitchedCopy};
use crate::{EmitError, Memory};
use sdfg_accelerator::CopyKind;
use sdfg_ir::{DType, LibraryOp, Memlet, Node, NodeId, Side, State};
use std::collections::BTreeSet;
use std::fmt::Write;

/// A BLAS operand: its pointer, (count, element stride) per squeezed
/// dimension, and its dtype.
type BlasOperand = (String, Vec<(String, String)>, DType);

impl Emitter<'_> {
    /// A device-wide GEMM, GEMV or DOT as a call to the dialect's BLAS, a
    /// Cholesky factorization or a linear solve as calls to its dense
    /// solver. BLAS and LAPACK are column-major and our arrays row-major: a
    /// row-major `M x K` matrix with row stride `ld` is the column-major
    /// `K x M` matrix with leading dimension `ld`, so `C = A B` is computed as
    /// `C^T = B^T A^T`, and a solve factors `A^T` and solves with its
    /// transpose.
    pub(super) fn vendor_call(
        &mut self,
        label: &str,
        state: &State,
        n: NodeId,
        indent: usize,
        out: &mut String,
    ) -> Result<(), EmitError> {
        let pad = "  ".repeat(indent);
        let Some(Node::Library(l)) = state.node(n) else {
            return Ok(());
        };
        let refuse = |what: String| unsupported(what, &l.label, label);
        let memlet = |conn: &str, incoming: bool| -> Result<&Memlet, EmitError> {
            if incoming {
                state
                    .in_edges(n)
                    .find(|(_, _, e)| e.dst_conn.as_deref() == Some(conn))
                    .and_then(|(_, _, e)| e.memlet.as_ref())
            } else {
                state
                    .out_edges(n)
                    .find(|(_, _, e)| e.src_conn.as_deref() == Some(conn))
                    .and_then(|(_, _, e)| e.memlet.as_ref())
            }
            .ok_or_else(|| {
                refuse(format!(
                    "a `{}` without its `{conn}` connector",
                    l.op.name()
                ))
            })
        };
        let mut used = BTreeSet::new();
        let mut operand = |conn: &str, incoming: bool| -> Result<BlasOperand, EmitError> {
            let m = memlet(conn, incoming)?;
            let (offset, dims) = self.subset_geometry(&m.data, &m.subset, &mut used);
            let dtype = self.desc(&m.data).map_or(DType::Float64, |d| d.dtype);
            Ok((format!("{} + ({offset})", ident(&m.data)), dims, dtype))
        };
        let b = self.d.blas();
        let (p, c) = (b.prefix, b.constants);
        let letter = |t: DType| match t {
            DType::Float32 => Ok("S"),
            DType::Float64 => Ok("D"),
            other => Err(refuse(format!(
                "a vendor `{}` call on {other}",
                l.op.name()
            ))),
        };
        let scalar = |lit: &sdfg_ir::Literal| cpp::literal(lit);
        // Leading dimensions: BLAS and LAPACK require at least 1, also for
        // empty matrices.
        let ld = |e: &str| format!("(int)sdfg::imax(1, {e})");
        // The runtime calls the solver calls are wrapped in.
        let dialect = self.d;
        // A pitched copy of `sdfg_n` rows within device memory.
        let copy_rows = |dst: &str, dst_pitch: &str, src: &str, src_pitch: &str, width: &str| {
            dialect.copy_2d_async(&PitchedCopy {
                dst,
                dst_pitch,
                src,
                src_pitch,
                width,
                height: "sdfg_n",
                kind: CopyKind::DeviceToDevice,
                stream: "stream",
            })
        };
        let grow = self.workspace_growth(&format!("{pad}  "));
        let call = match &l.op {
            LibraryOp::Gemm {
                alpha,
                beta,
                trans_a: false,
                trans_b: false,
                ..
            } => {
                // BLAS updates C in place: an accumulated input must be the
                // output itself.
                let connectors = l.op.in_connectors();
                if connectors.contains(&"_cin") {
                    let (cin, c) = (memlet("_cin", true)?, memlet("_c", false)?);
                    if cin.data != c.data || cin.subset != c.subset {
                        return Err(refuse(format!(
                            "a GEMM accumulating `{}[{}]` into another array, `{}[{}]` (BLAS updates C in place)",
                            cin.data, cin.subset, c.data, c.subset
                        )));
                    }
                }
                // A scale read through a connector: the host reads it when
                // it issues the call.
                let scale = |lit: &sdfg_ir::Literal, conn: &str| -> Result<String, EmitError> {
                    let literal = scalar(lit);
                    if !connectors.contains(&conn) {
                        return Ok(literal);
                    }
                    let m = memlet(conn, true)?;
                    if self.desc(&m.data).and_then(|d| d.storage.side()) == Some(Side::Device) {
                        return Err(refuse(format!(
                            "a GEMM scaled by `{}`, which is in device memory (the host reads the scale)",
                            m.data
                        )));
                    }
                    let (offset, _) =
                        self.subset_geometry(&m.data, &m.subset, &mut BTreeSet::new());
                    Ok(format!("{literal} * {}[{offset}]", ident(&m.data)))
                };
                let al = scale(alpha, "_alpha")?;
                let be = scale(beta, "_beta")?;
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", true)?;
                let (cm, dc, _) = operand("_c", false)?;
                let (Some((m, lda)), Some((k, _)), Some((_, ldb)), Some((nn, _)), Some((_, ldc))) =
                    (da.first(), da.get(1), db.first(), db.get(1), dc.first())
                else {
                    return Err(refuse("a GEMM whose operands are not matrices".to_owned()));
                };
                // An empty C is no call; an empty inner dimension (k = 0)
                // is, as BLAS defines it: C = beta C.
                format!(
                    "{{\n{pad}  const {ty} sdfg_alpha = {al}, sdfg_beta = {be};\n\
                     {pad}  if ({nn} > 0 && {m} > 0) SDFG_BLAS_CHECK({p}{x}gemm(sdfg_blas, {c}_OP_N, {c}_OP_N, (int)({nn}), (int)({m}), (int)({k}), &sdfg_alpha, {bm}, {ldb}, {a}, {lda}, &sdfg_beta, {cm}, {ldc}));\n{pad}}}",
                    ty = ctype(t),
                    x = letter(t)?,
                    ldb = ld(ldb),
                    lda = ld(lda),
                    ldc = ld(ldc),
                )
            }
            LibraryOp::Gemv {
                alpha,
                beta,
                trans_a,
            } => {
                let (a, da, t) = operand("_a", true)?;
                let (x, dx, _) = operand("_x", true)?;
                let (y, dy, _) = operand("_y", false)?;
                let (Some((rows, lda)), Some((cols, _)), Some((_, incx)), Some((ylen, incy))) =
                    (da.first(), da.get(1), dx.first(), dy.first())
                else {
                    return Err(refuse("a GEMV of the wrong shapes".to_owned()));
                };
                // Row-major `rows x cols` is column-major `cols x rows`:
                // `A x` transposes it back, `x A` (trans_a) does not.
                let op = if *trans_a { "N" } else { "T" };
                let ty = ctype(t);
                // BLAS returns at once when A is empty, leaving y as it was;
                // the product's meaning over an empty inner dimension is
                // y = beta y, which a prelude kernel computes.
                let scale = self.prelude_launch(
                    format!("sdfg::scale<{ty}>"),
                    &["sdfg_len"],
                    &[256],
                    &["sdfg_y", "sdfg_len", "sdfg_inc", "sdfg_beta"],
                    &format!("{pad}    "),
                );
                format!(
                    "{{\n{pad}  const {ty} sdfg_alpha = {al}, sdfg_beta = {be};\n\
                     {pad}  if ({cols} > 0 && {rows} > 0) {{\n\
                     {pad}    SDFG_BLAS_CHECK({p}{xl}gemv(sdfg_blas, {c}_OP_{op}, (int)({cols}), (int)({rows}), &sdfg_alpha, {a}, {lda}, {x}, (int)({incx}), &sdfg_beta, {y}, (int)({incy})));\n\
                     {pad}  }} else if ({ylen} > 0) {{\n\
                     {pad}    {ty}* sdfg_y = {y};\n\
                     {pad}    int64_t sdfg_len = {ylen}, sdfg_inc = {incy};\n\
                     {scale}\
                     {pad}  }}\n{pad}}}",
                    xl = letter(t)?,
                    al = scalar(alpha),
                    be = scalar(beta),
                    lda = ld(lda),
                )
            }
            LibraryOp::Dot => {
                let (x, dx, t) = operand("_x", true)?;
                let (y, dy, _) = operand("_y", true)?;
                let (r, _, _) = operand("_result", false)?;
                let (Some((len, incx)), Some((_, incy))) = (dx.first(), dy.first()) else {
                    return Err(refuse("a DOT of operands that are not vectors".to_owned()));
                };
                // An empty DOT is a call too: BLAS gives 0.
                format!(
                    "{{\n{pad}  // The result stays on the device.\n{pad}  SDFG_BLAS_CHECK({p}SetPointerMode(sdfg_blas, {c}_POINTER_MODE_DEVICE));\n{pad}  SDFG_BLAS_CHECK({p}{xl}dot(sdfg_blas, (int)({len}), {x}, (int)({incx}), {y}, (int)({incy}), {r}));\n{pad}  SDFG_BLAS_CHECK({p}SetPointerMode(sdfg_blas, {c}_POINTER_MODE_HOST));\n{pad}}}",
                    xl = letter(t)?,
                )
            }
            LibraryOp::Cholesky { lower } => {
                let source = memlet("_a", true)?.data.clone();
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", false)?;
                let (Some((nrows, lda)), Some((_, ldb))) = (da.first(), db.first()) else {
                    return Err(refuse(
                        "a Cholesky factorization of non-matrices".to_owned(),
                    ));
                };
                let sv = self.d.solver();
                // The row-major lower factor L is the column-major upper U
                // (and the other way round): factor the other triangle.
                let (fill, zero_upper) = if *lower {
                    (sv.fill[0], 1)
                } else {
                    (sv.fill[1], 0)
                };
                let x = letter(t)?;
                let ty = ctype(t);
                let sp = sv.prefix;
                self.solver_used = true;
                let site = self.factorization_site(format!(
                    "the Cholesky factorization (potrf) of `{source}` (node `{}`) failed: the matrix is not positive definite",
                    l.label
                ));
                let site = site.to_string();
                let note = self.d.single_thread_launch(
                    "sdfg::note_failure",
                    &["sdfg_info", "sdfg_failed", &site],
                );
                let copy = copy_rows(
                    "sdfg_b",
                    &format!("sizeof({ty}) * sdfg_ldb"),
                    "sdfg_a",
                    &format!("sizeof({ty}) * sdfg_lda"),
                    &format!("sizeof({ty}) * sdfg_n"),
                );
                let zero = self.prelude_launch(
                    format!("sdfg::zero_triangle<{ty}>"),
                    &["sdfg_n", "sdfg_n"],
                    &[32, 8],
                    &["sdfg_b", "sdfg_n", "sdfg_ldb", "sdfg_upper"],
                    &format!("{pad}    "),
                );
                format!(
                    "{{\n{pad}  {ty}* sdfg_a = {a};\n{pad}  {ty}* sdfg_b = {bm};\n{pad}  int64_t sdfg_n = {nrows}, sdfg_lda = {lda}, sdfg_ldb = {ldb};\n\
                     {pad}  // potrf works in place: factor a copy of `_a` in `_b`.\n\
                     {pad}  if (sdfg_b != sdfg_a && sdfg_n > 0) SDFG_CHECK({copy});\n\
                     {pad}  int sdfg_lwork = 0;\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}potrf_bufferSize(sdfg_solver, {fill}, (int)sdfg_n, sdfg_b, (int)sdfg::imax(1, sdfg_ldb), &sdfg_lwork));\n\
                     {pad}  size_t sdfg_need = sizeof({ty}) * (size_t)sdfg_lwork;\n\
                     {grow}\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}potrf(sdfg_solver, {fill}, (int)sdfg_n, sdfg_b, (int)sdfg::imax(1, sdfg_ldb), ({ty}*)sdfg_work, sdfg_lwork, sdfg_info));\n\
                     {pad}  {note};\n\
                     {pad}  // The other triangle is zero, as in np.linalg.cholesky.\n\
                     {pad}  int sdfg_upper = {zero_upper};\n\
                     {pad}  if (sdfg_n > 0) {{\n\
                     {zero}\
                     {pad}  }}\n{pad}}}"
                )
            }
            LibraryOp::Solve => {
                let source = memlet("_a", true)?.data.clone();
                let (a, da, t) = operand("_a", true)?;
                let (bm, db, _) = operand("_b", true)?;
                let (xm, dx, _) = operand("_x", false)?;
                let (Some((nrows, lda)), Some((_, ldb)), Some((_, ldx))) =
                    (da.first(), db.first(), dx.first())
                else {
                    return Err(refuse("a solve of the wrong shapes".to_owned()));
                };
                // A vector right-hand side is one column; a matrix has `m`.
                let (nrhs, matrix) = match db.get(1) {
                    Some((m, _)) => (m.clone(), true),
                    None => ("1".to_owned(), false),
                };
                let sv = self.d.solver();
                let (x, vt) = match t {
                    DType::Float32 => ("S", "float"),
                    DType::Float64 => ("D", "double"),
                    DType::Complex64 => ("C", sv.complex[0]),
                    DType::Complex128 => ("Z", sv.complex[1]),
                    other => return Err(refuse(format!("a vendor solve on {other}"))),
                };
                let ty = ctype(t);
                let (sp, op_t) = (sv.prefix, sv.transpose);
                self.solver_used = true;
                let site = self.factorization_site(format!(
                    "the LU factorization (getrf) of `{source}` for the solve `{}` failed: the matrix is singular",
                    l.label
                ));
                let site = site.to_string();
                let note = self.d.single_thread_launch(
                    "sdfg::note_failure",
                    &["sdfg_info", "sdfg_failed", &site],
                );
                // Row-major A is column-major A^T: getrf factors A^T, and
                // getrs with the transpose solves A X = B. The right-hand
                // sides must be column-major: a vector is; a matrix is
                // transposed into the workspace and back.
                // dst = src^T on the stream, for src `rows x cols` (row
                // strides as named).
                let transpose = |dst: &str,
                                 ldd: &str,
                                 src: &str,
                                 lds: &str,
                                 rows: &str,
                                 cols: &str| {
                    let launch = self.prelude_launch(
                        format!("sdfg::transpose<{ty}>"),
                        &["sdfg_cols", "sdfg_rows"],
                        &[32, 8],
                        &[
                            dst,
                            "sdfg_ldd",
                            "sdfg_src",
                            "sdfg_lds",
                            "sdfg_rows",
                            "sdfg_cols",
                        ],
                        &format!("{pad}    "),
                    );
                    format!(
                        "{pad}  if ({rows} > 0 && {cols} > 0) {{\n\
                         {pad}    int64_t sdfg_rows = {rows}, sdfg_cols = {cols}, sdfg_ldd = {ldd}, sdfg_lds = {lds};\n\
                         {pad}    const {ty}* sdfg_src = {src};\n\
                         {launch}\
                         {pad}  }}\n"
                    )
                };
                // A strided vector copied (element strides as named).
                let column = |dst: &str, dstride: &str, src: &str, sstride: &str| {
                    let copy = copy_rows(
                        dst,
                        &format!("sizeof({ty}) * {dstride}"),
                        src,
                        &format!("sizeof({ty}) * {sstride}"),
                        &format!("sizeof({ty})"),
                    );
                    format!("{pad}  if (sdfg_n > 0) SDFG_CHECK({copy});\n")
                };
                let (to_rhs, from_rhs) = if matrix {
                    (
                        transpose(
                            "sdfg_rhs", "sdfg_n", "sdfg_b", "sdfg_ldb", "sdfg_n", "sdfg_m",
                        ),
                        transpose(
                            "sdfg_x", "sdfg_ldx", "sdfg_rhs", "sdfg_n", "sdfg_m", "sdfg_n",
                        ),
                    )
                } else {
                    (
                        column("sdfg_rhs", "1", "sdfg_b", "sdfg_ldb"),
                        column("sdfg_x", "sdfg_ldx", "sdfg_rhs", "1"),
                    )
                };
                let copy_lu = copy_rows(
                    "sdfg_lu",
                    &format!("sizeof({ty}) * sdfg_n"),
                    "sdfg_a",
                    &format!("sizeof({ty}) * sdfg_lda"),
                    &format!("sizeof({ty}) * sdfg_n"),
                );
                format!(
                    "{{\n{pad}  {ty}* sdfg_a = {a};\n{pad}  {ty}* sdfg_b = {bm};\n{pad}  {ty}* sdfg_x = {xm};\n\
                     {pad}  int64_t sdfg_n = {nrows}, sdfg_m = {nrhs}, sdfg_lda = {lda}, sdfg_ldb = {ldb}, sdfg_ldx = {ldx};\n\
                     {pad}  int sdfg_ldn = (int)sdfg::imax(1, sdfg_n);\n\
                     {pad}  // One workspace: getrf's scratch, the factors, the right-hand\n\
                     {pad}  // sides (column-major) and the pivots.\n\
                     {pad}  int sdfg_lwork = 0;\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrf_bufferSize(sdfg_solver, (int)sdfg_n, (int)sdfg_n, ({vt}*)sdfg_a, (int)sdfg::imax(1, sdfg_lda), &sdfg_lwork));\n\
                     {pad}  size_t sdfg_need = sizeof({ty}) * ((size_t)sdfg_lwork + (size_t)(sdfg_n * sdfg_n) + (size_t)(sdfg_n * sdfg_m)) + sizeof(int) * (size_t)sdfg_n;\n\
                     {grow}\
                     {pad}  {ty}* sdfg_scratch = ({ty}*)sdfg_work;\n\
                     {pad}  {ty}* sdfg_lu = sdfg_scratch + sdfg_lwork;\n\
                     {pad}  {ty}* sdfg_rhs = sdfg_lu + sdfg_n * sdfg_n;\n\
                     {pad}  int* sdfg_pivots = (int*)(sdfg_rhs + sdfg_n * sdfg_m);\n\
                     {pad}  if (sdfg_n > 0) SDFG_CHECK({copy_lu});\n\
                     {to_rhs}\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrf(sdfg_solver, (int)sdfg_n, (int)sdfg_n, ({vt}*)sdfg_lu, sdfg_ldn, ({vt}*)sdfg_scratch, sdfg_pivots, sdfg_info));\n\
                     {pad}  {note};\n\
                     {pad}  SDFG_SOLVER_CHECK({sp}{x}getrs(sdfg_solver, {op_t}, (int)sdfg_n, (int)sdfg_m, ({vt}*)sdfg_lu, sdfg_ldn, sdfg_pivots, ({vt}*)sdfg_rhs, sdfg_ldn, sdfg_info));\n\
                     {from_rhs}\
                     {pad}}}"
                )
            }
            other => {
                return Err(refuse(format!(
                    "the device-wide library node `{}` ({}): only GEMM, GEMV, DOT, Cholesky and Solve are vendor calls; lower the others first (sdfg_passes::lower_library_nodes)",
                    l.label,
                    other.name()
                )));
            }
        };
        let library = if matches!(l.op, LibraryOp::Cholesky { .. } | LibraryOp::Solve) {
            self.d.solver().prefix
        } else {
            self.blas_used = true;
            p
        };
        let _ = writeln!(out, "{pad}// {} `{}`: {library}", l.op.name(), l.label);
        let _ = writeln!(out, "{pad}{call}");
        Ok(())
    }

    /// Grows the solver workspace to `sdfg_need` bytes where it is smaller
    /// (reset before the old one is released, as in [`Self::reserve`]).
    pub(super) fn workspace_growth(&self, pad: &str) -> String {
        format!(
            "{pad}if (sdfg_need > sdfg_work_cap) {{\n\
             {pad}  void* sdfg_old = sdfg_work;\n\
             {pad}  sdfg_work = nullptr;\n\
             {pad}  sdfg_work_cap = 0;\n\
             {pad}  if (sdfg_old) SDFG_CHECK({});\n\
             {pad}  SDFG_CHECK({});\n\
             {pad}  sdfg_work_cap = sdfg_need;\n\
             {pad}}}\n",
            self.d.release(Memory::Device, "sdfg_old"),
            self.d.allocate(Memory::Device, "&sdfg_work", "sdfg_need")
        )
    }

    /// Registers a factorization call site (1-based) with the message a
    /// failure of it gives.
    pub(super) fn factorization_site(&mut self, message: String) -> usize {
        self.factorizations.push(message);
        self.factorizations.len()
    }

    /// The launch of the prelude's kernel `kernel` (a helper of a vendor
    /// call: scaling, zeroing a triangle, transposing) on blocks of `block`
    /// threads covering `extents` (C++, fastest axis first) with
    /// `arguments`, each line starting with `pad`.
    fn prelude_launch(
        &self,
        kernel: String,
        extents: &[&str],
        block: &[u32],
        arguments: &[&str],
        pad: &str,
    ) -> String {
        let plan = LaunchPlan {
            kernel,
            grid: LaunchGrid::Blocks(
                extents
                    .iter()
                    .zip(block)
                    .map(|(e, b)| {
                        format!(
                            "(unsigned)sdfg::imin(sdfg::ifloordiv({e} + {}, {b}), 65535)",
                            b - 1
                        )
                    })
                    .collect(),
            ),
            block: block.iter().map(u32::to_string).collect(),
            shared_bytes: "0".to_owned(),
            cooperative: false,
            synchronizing: false,
            arguments: arguments.iter().map(|a| (*a).to_owned()).collect(),
            guard: Vec::new(),
        };
        self.d.launch_statements(&plan, pad)
    }
}
