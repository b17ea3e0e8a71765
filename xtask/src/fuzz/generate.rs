//! Programs of the supported subset, generated from their structure.
//!
//! One signature, `kernel(A: float64[N, M], B: float64[N, M], x:
//! float64[N], y: float64[M], s: float64[1])`, and a body of statements of
//! the kinds the corpus is made of: whole-array and sliced element-wise
//! assignments with broadcasting, NumPy ufuncs and `np.where`, reductions
//! (whole and along an axis, counts, arg-extrema, einsum), scans, reversed
//! views, triangles, matrix-vector products, `range` loops with
//! element updates and recurrences, `dace.map` loops (with locals,
//! conditions on data and inner loops), branches on symbols, augmented
//! assignments, and loops whose tests read what their bodies compute (which
//! become persistent kernels). Expressions nest a few levels (well
//! inside the frontend's nesting limit). Every generated program is valid
//! Python, valid DaCe and inside the subset, so the frontend must accept
//! it; proptest shrinks a failing one to a small program.

use proptest::prelude::*;

/// An element-wise expression of the shape of its target.
#[derive(Clone, Debug)]
enum Expr {
    /// An operand of the target's shape (or broadcast to it).
    Leaf(&'static str),
    /// A float literal.
    Lit(i32),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Call(&'static str, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
    Where(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    fn render(&self) -> String {
        match self {
            Expr::Leaf(l) => (*l).to_owned(),
            Expr::Lit(k) => format!("{:.1}", f64::from(*k) / 2.0),
            Expr::Binary(op, a, b) => format!("({} {op} {})", a.render(), b.render()),
            Expr::Call(f, a) => match *f {
                "sqrt" => format!("np.sqrt(np.abs({}))", a.render()),
                "exp" => format!("np.exp(-np.abs({}))", a.render()),
                "log1p" => format!("np.log1p(np.abs({}))", a.render()),
                "expm1" | "sinh" | "cosh" => format!("np.{f}(np.tanh({}))", a.render()),
                "clip" => format!("np.clip({}, -1.5, 2.0)", a.render()),
                f => format!("np.{f}({})", a.render()),
            },
            Expr::Max(a, b) => format!("np.maximum({}, {})", a.render(), b.render()),
            Expr::Where(a, b, c) => format!(
                "np.where({} > {}, {}, {})",
                a.render(),
                b.render(),
                b.render(),
                c.render()
            ),
        }
    }
}

/// Element-wise expressions over `leaves`, nesting at most three levels.
fn expr(leaves: &'static [&'static str]) -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        3 => proptest::sample::select(leaves).prop_map(Expr::Leaf),
        1 => (-6i32..7).prop_map(Expr::Lit),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            4 => (proptest::sample::select(&["+", "-", "*"][..]), inner.clone(), inner.clone())
                .prop_map(|(op, a, b)| Expr::Binary(op, Box::new(a), Box::new(b))),
            1 => (proptest::sample::select(&["sqrt", "exp", "abs", "sin", "tanh", "square", "sign", "cbrt", "log1p", "expm1", "sinh", "cosh", "clip", "trunc", "rint"][..]), inner.clone())
                .prop_map(|(f, a)| Expr::Call(f, Box::new(a))),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Max(Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone(), inner)
                .prop_map(|(a, b, c)| Expr::Where(Box::new(a), Box::new(b), Box::new(c))),
        ]
    })
}

/// Operands of shape (N, M): the matrices, and `y` broadcast along rows.
const MATRIX: &[&str] = &["A", "B", "y", "s[0]"];
/// Operands of shape (N,).
const VECTOR: &[&str] = &["x", "A[:, 0]", "B[:, 1]", "s[0]"];
/// Operands of shape (M,): rows.
const ROW: &[&str] = &["y", "A[0, :]", "B[N - 1, :]", "s[0]"];
/// Scalars at point `i` of a loop over `range(N)`.
const AT_I: &[&str] = &["x[i]", "A[i, 0]", "B[i, 1]", "s[0]"];
/// Scalars at point `(i, j)` of a map over `[0:N, 0:M]`.
const AT_IJ: &[&str] = &["A[i, j]", "B[i, j]", "x[i]", "y[j]"];
/// Scalars at iteration `k` of a loop over `range(M)` in a map over `[0:N]`
/// that writes `A[i, k]`.
const AT_IK: &[&str] = &["B[i, k]", "x[i]", "y[k]", "A[i, k]"];

/// One statement, as lines of Python at four spaces of indentation.
fn statement() -> impl Strategy<Value = Vec<String>> {
    let target_matrix = proptest::sample::select(&["A", "B"][..]);
    prop_oneof![
        (target_matrix, expr(MATRIX)).prop_map(|(t, e)| vec![format!("{t}[:] = {}", e.render())]),
        expr(VECTOR).prop_map(|e| vec![format!("x[:] = {}", e.render())]),
        expr(MATRIX).prop_map(|e| vec![format!("A[1:N, :] = A[0:N - 1, :] + {}", slice_rows(&e))]),
        (-6i32..7).prop_map(|k| vec![format!(
            "x[1:N - 1] = x[0:N - 2] * 0.5 + x[2:N] * {:.1}",
            f64::from(k) / 2.0
        )]),
        proptest::sample::select(
            &[
                "np.sum(A)",
                "np.max(B)",
                "np.mean(A)",
                "np.min(x)",
                "np.argmax(x) * 0.5",
                "np.count_nonzero(A > 0.0) * 1.0",
                "np.trace(A[0:2, 0:2])",
                "np.einsum('ij,ij->', A, B)",
                "np.any(B > 1.0) * 2.0"
            ][..]
        )
        .prop_map(|r| vec![format!("s[0] = {r}")]),
        proptest::sample::select(
            &[
                "np.sum(A, axis=0)",
                "np.max(B, axis=0)",
                "A[0, :] * 2.0",
                "np.argmin(A, axis=0) * 1.0",
                "np.flip(y)",
                "y[::-1] + A[N - 1, :]"
            ][..]
        )
        .prop_map(|r| vec![format!("y[:] = {r}")]),
        proptest::sample::select(
            &[
                "A @ y",
                "B @ y + x",
                "np.sum(A, axis=1)",
                "np.cumsum(x)",
                "x[::-1]",
                "np.einsum('ij,j->i', A, y)",
                "np.concatenate((x[0:2], x[2:N] * 0.5))"
            ][..]
        )
        .prop_map(|r| vec![format!("x[:] = {r}")]),
        // Functions of whole matrices: scans, views and triangles.
        (
            proptest::sample::select(&["A", "B"][..]),
            proptest::sample::select(
                &[
                    "np.cumsum(A, axis=0)",
                    "np.flip(B, 1)",
                    "np.tril(A)",
                    "np.triu(B, 1)",
                    "A[::-1, :]",
                    "np.rot90(np.rot90(A))",
                    "np.clip(B, -1.0, 1.0)",
                    "np.fliplr(np.flipud(A))",
                    "np.cumprod(np.sign(B), axis=1)"
                ][..]
            )
        )
            .prop_map(|(t, r)| vec![format!("{t}[:] = {r}")]),
        expr(AT_I).prop_map(|e| vec![
            "for i in range(N):".to_owned(),
            format!("    x[i] = {}", e.render()),
        ]),
        expr(AT_I).prop_map(|e| vec![
            "for i in range(1, N):".to_owned(),
            format!("    x[i] = x[i - 1] * 0.5 + {}", e.render()),
        ]),
        expr(AT_IJ).prop_map(|e| vec![
            "for i, j in dace.map[0:N, 0:M]:".to_owned(),
            format!("    B[i, j] = {}", e.render()),
        ]),
        // A map body with a local, updated under a condition on data (a
        // predicated assignment).
        (expr(AT_IJ), expr(AT_IJ)).prop_map(|(a, b)| vec![
            "for i, j in dace.map[0:N, 0:M]:".to_owned(),
            format!("    t = {}", a.render()),
            "    if t > 0.25:".to_owned(),
            format!("        t = t * 0.5 - {}", b.render()),
            "    B[i, j] = t + A[i, j]".to_owned(),
        ]),
        // A loop inside a map body, writing the point's row.
        expr(AT_IK).prop_map(|e| vec![
            "for i in dace.map[0:N]:".to_owned(),
            "    for k in range(M):".to_owned(),
            format!("        A[i, k] = {}", e.render()),
        ]),
        expr(MATRIX).prop_map(|e| vec![
            "if N > M:".to_owned(),
            format!("    A[:] = {}", e.render()),
            "else:".to_owned(),
            "    A[:] = A * 0.5".to_owned(),
        ]),
        expr(VECTOR).prop_map(|e| vec![format!("x += {}", e.render())]),
        persistent_loop(),
    ]
}

/// A loop whose tests read what its body computes on the device, around
/// parallel work: the offload pass runs it as one persistent kernel, whose
/// threads share the values its tests read (`docs/codegen.md`). Shapes of
/// mandelbrot2's and channel_flow's `while` on a reduction, issue #39's
/// probe (a branch on device data around a loop of branches on data that
/// may run no state) and an early `break` on data. Values stay in
/// `[-1, 1]` (`np.tanh`) over the iterations, and the reduction a test
/// reads is a maximum, exact in any order, so that NumPy takes the same
/// branches.
fn persistent_loop() -> impl Strategy<Value = Vec<String>> {
    let limit = || (-4i32..5).prop_map(|k| f64::from(k) / 4.0);
    let rounds = || 2u32..5;
    prop_oneof![
        (expr(VECTOR), limit(), rounds()).prop_map(|(e, c, r)| vec![
            "it = 0".to_owned(),
            format!("while np.max(np.abs(x)) > {c:.2} and it < {r}:"),
            format!("    x[:] = np.tanh({}) * 0.75", e.render()),
            "    it += 1".to_owned(),
        ]),
        (expr(ROW), limit(), limit(), rounds()).prop_map(|(e, c, d, r)| vec![
            format!("for k in range(1, {r}):"),
            format!("    y[:] = np.tanh({})", e.render()),
            format!("    if y[0] > {c:.2}:"),
            "        for m in range(1, N):".to_owned(),
            // Signs alternating with `m`: the inputs grow slowly, and the
            // race needs a false test followed by a true one.
            format!("            if x[m] * (m % 3 - 1) > {d:.2}:"),
            "                A[m, :] = A[m - 1, :] * 0.5 + y * k".to_owned(),
        ]),
        (expr(MATRIX), limit(), rounds()).prop_map(|(e, c, r)| vec![
            format!("for k in range({r}):"),
            format!("    B[:] = np.tanh({})", e.render()),
            format!("    if B[0, 0] > {c:.2}:"),
            "        break".to_owned(),
            "    s[0] = s[0] + 1.0".to_owned(),
        ]),
    ]
}

/// `e` with its matrix operands restricted to rows `1:N` (the shape of
/// `A[1:N, :]`).
fn slice_rows(e: &Expr) -> String {
    e.render()
        .replace("A", "A[1:N, :]")
        .replace("B", "B[1:N, :]")
}

/// A whole program: one to eight statements.
pub(super) fn program() -> impl Strategy<Value = String> {
    proptest::collection::vec(statement(), 1..9).prop_map(|stmts| {
        let mut text = String::from(
            "import dace\nimport numpy as np\n\nN = dace.symbol('N')\nM = dace.symbol('M')\n\n\n@dace.program\ndef kernel(A: dace.float64[N, M], B: dace.float64[N, M], x: dace.float64[N], y: dace.float64[M], s: dace.float64[1]):\n",
        );
        for lines in stmts {
            for l in lines {
                text.push_str("    ");
                text.push_str(&l);
                text.push('\n');
            }
        }
        text
    })
}
