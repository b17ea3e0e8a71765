//! A runner for the emulated GPU and nothing else: serves one request
//! (`sdfg-exec-child __sdfg-exec-child DIR`; see `sdfg_exec::child`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match sdfg_exec::child::dispatch(&args) {
        Some(code) => std::process::exit(code),
        None => {
            eprintln!(
                "usage: sdfg-exec-child {} DIR (run by the emulated GPU)",
                sdfg_exec::child::CHILD_FLAG
            );
            std::process::exit(2);
        }
    }
}
