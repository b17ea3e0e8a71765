//! GT4Py's timers, the C++ tasklets the import reads (`cpp.rs`): read as
//! the IR's clock and written back as GT4Py writes them; other C++ is not
//! read.

use sdfg_dace_format::cpp::{read_timer, write_timer};
use sdfg_ir::DType;

/// What gt4py.next's `run_dace_gpu` writes (its CPU backend: the same
/// without the synchronization).
const START: &str = "cudaDeviceSynchronize();\nauto now = std::chrono::high_resolution_clock::now();\ntime = std::chrono::duration_cast<std::chrono::nanoseconds>(\n        now.time_since_epoch()\n    ).count();\n        ";
const STOP: &str = "/* The SDFG execution should already be synchronized */\nauto now = std::chrono::high_resolution_clock::now();\nauto run_cpp_end_time = std::chrono::duration_cast<std::chrono::nanoseconds>(\n        now.time_since_epoch()\n    ).count();\nduration = static_cast<double>(run_cpp_end_time - run_cpp_start_time) * 1.e-9;\n        ";

#[test]
fn gt4pys_timers_read_as_the_clock_and_write_back_as_gt4py_writes_them() {
    let start = read_timer(START, &[], &[("time".into(), DType::Int64)]).expect("the start");
    let stop = read_timer(
        STOP,
        &[("run_cpp_start_time".into(), DType::Int64)],
        &[("duration".into(), DType::Float64)],
    )
    .expect("the stop");
    for body in [&start, &stop] {
        let text = write_timer(body).expect("written");
        assert!(
            text.contains("std::chrono::high_resolution_clock::now()"),
            "{text}"
        );
        let ins: Vec<(String, DType)> = if body.len() == 2 {
            vec![("run_cpp_start_time".into(), DType::Int64)]
        } else {
            Vec::new()
        };
        let out = if body.len() == 2 { "duration" } else { "time" };
        let t = if body.len() == 2 {
            DType::Float64
        } else {
            DType::Int64
        };
        assert_eq!(
            &read_timer(&text, &ins, &[(out.into(), t)]).expect("read back"),
            body
        );
    }
    // The clock's reads are host code.
    let tasklet = sdfg_ir::node::Tasklet {
        label: "gt_start_timer".into(),
        inputs: vec![],
        outputs: vec![sdfg_ir::node::Connector::scalar("time", DType::Int64)],
        body: start,
    };
    assert!(tasklet.host_only());
}

#[test]
fn other_cpp_is_not_read() {
    let out = [("time".into(), DType::Int64)];
    for code in [
        "time = 42;",
        "auto now = std::chrono::high_resolution_clock::now();\ntime = 7;",
        "auto now = std::chrono::steady_clock::now();\ntime = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();",
    ] {
        assert!(read_timer(code, &[], &out).is_none(), "{code}");
    }
}
