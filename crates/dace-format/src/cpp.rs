//! The C++ tasklets DaCe's users' tools write: GT4Py's timers.
//!
//! Tasklet code in C++ is opaque to the IR, whose tasklets are typed
//! statements; GT4Py's `gt4py.next` backends (`run_dace_cpu`,
//! `run_dace_gpu`) write two C++ tasklets around every program, its
//! timing instrumentation: one reads the host's clock in nanoseconds, the
//! other the clock again and the seconds since the first. Those two forms
//! are read as the IR's statements on [`Intrinsic::WallClockNs`] (host
//! code only, read once the device's work before it is done: the GPU
//! backends' `cudaDeviceSynchronize()` first), and written back as
//! GT4Py's CPU backend writes them; any other C++ is refused by name by
//! the import.

use sdfg_ir::DType;
use sdfg_ir::code::{BinaryOp, Expr, Intrinsic, Stmt};

/// GT4Py's read of the clock, whitespace and comments aside.
const NOW: &str = "autonow=std::chrono::high_resolution_clock::now();";
/// The nanoseconds since the clock's epoch of that read.
const NANOSECONDS: &str =
    "=std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();";

/// `code` without comments and whitespace (C++ needs none between these
/// tokens but after `auto`, which the patterns spell joined).
fn squeezed(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |k| &r[k + 2..]);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |k| &r[k..]);
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next()
                && !c.is_whitespace()
            {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    out
}

/// Whether `name` is a C++ identifier.
fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// GT4Py's timer tasklets as the IR's statements: `out = clock`, or
/// `out = double(clock - start) * 1e-9` (seconds since `start`), with
/// the connectors' types (`(name, type)`; GT4Py's are int64 and float64,
/// others are converted to as C++ converts). `None`: other C++.
pub fn read_timer(
    code: &str,
    inputs: &[(String, DType)],
    outputs: &[(String, DType)],
) -> Option<Vec<Stmt>> {
    let s = squeezed(code);
    // The GPU backends wait for the device before reading the clock,
    // which the IR's clock does anyway.
    let s = ["cudaDeviceSynchronize();", "hipDeviceSynchronize();"]
        .iter()
        .find_map(|sync| s.strip_prefix(sync))
        .unwrap_or(&s);
    let body = s.strip_prefix(NOW)?;
    let clock = || Expr::call(Intrinsic::WallClockNs, Vec::new());
    let as_type = |e: Expr, from: DType, to: DType| if from == to { e } else { Expr::cast(to, e) };
    match (inputs, outputs) {
        ([], [(out, t)]) => (body == format!("{out}{NANOSECONDS}")).then(|| {
            vec![Stmt::assign(
                out.clone(),
                as_type(clock(), DType::Int64, *t),
            )]
        }),
        ([(start, st)], [(out, t)]) => {
            let (end, rest) = body.strip_prefix("auto")?.split_once(NANOSECONDS)?;
            let seconds = format!("{out}=static_cast<double>({end}-{start})*1.e-9;");
            (identifier(end) && rest == seconds).then(|| {
                vec![
                    Stmt::Let {
                        name: end.to_owned(),
                        dtype: DType::Int64,
                        value: clock(),
                    },
                    Stmt::assign(
                        out.clone(),
                        as_type(
                            Expr::binary(
                                BinaryOp::Mul,
                                Expr::cast(
                                    DType::Float64,
                                    Expr::binary(
                                        BinaryOp::Sub,
                                        Expr::var(end),
                                        as_type(Expr::var(start.as_str()), *st, DType::Int64),
                                    ),
                                ),
                                Expr::f64(1e-9),
                            ),
                            DType::Float64,
                            *t,
                        ),
                    ),
                ]
            })
        }
        _ => None,
    }
}

/// The C++ GT4Py writes for a body [`read_timer`] reads; `None` for any
/// other body.
pub fn write_timer(body: &[Stmt]) -> Option<String> {
    let now = "auto now = std::chrono::high_resolution_clock::now();\n";
    let nanoseconds = " = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();\n";
    let is_clock = |e: &Expr| matches!(e, Expr::Call { func: Intrinsic::WallClockNs, args } if args.is_empty());
    match body {
        [Stmt::Assign { target, value }] if is_clock(value) => {
            Some(format!("{now}{target}{nanoseconds}"))
        }
        [
            Stmt::Let {
                name,
                dtype: DType::Int64,
                value,
            },
            Stmt::Assign {
                target,
                value:
                    Expr::Binary {
                        op: BinaryOp::Mul,
                        lhs,
                        rhs,
                    },
            },
        ] if is_clock(value) => {
            let Expr::Cast {
                dtype: DType::Float64,
                arg,
            } = &**lhs
            else {
                return None;
            };
            let Expr::Binary {
                op: BinaryOp::Sub,
                lhs: end,
                rhs: start,
            } = &**arg
            else {
                return None;
            };
            let (Expr::Var(end), Expr::Var(start)) = (&**end, &**start) else {
                return None;
            };
            (end == name && **rhs == Expr::f64(1e-9)).then(|| {
                format!(
                    "{now}auto {end}{nanoseconds}{target} = static_cast<double>({end} - {start}) * 1.e-9;\n"
                )
            })
        }
        _ => None,
    }
}
