//! The NumPy oracle of the `programs` target: each generated program also
//! runs as Python (`corpus/tools/fuzz_oracle.py`, one process for the whole
//! campaign), and the SDFG's outputs must be NumPy's.
//!
//! Host and offloaded runs agreeing proves placement, not semantics: a
//! lowering that computes the wrong thing computes it on both sides (a
//! loop in a `dace.map` body whose accumulator counted one iteration did).
//! This is the check that catches those. Without `python3` and NumPy the
//! target says so once and checks the other properties.

use sdfg_sim::ArrayValue;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running `fuzz_oracle.py`.
pub(super) struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Where programs, inputs and outputs are written for it.
    dir: PathBuf,
    count: usize,
}

impl Oracle {
    /// Starts the oracle, or says why it cannot run.
    pub(super) fn spawn(root: &Path, dir: &Path) -> Result<Oracle, String> {
        sdfg_harness::corpus::python_available()?;
        let script = root.join("corpus/tools/fuzz_oracle.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", script.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the oracle has no pipes".to_owned());
        };
        let dir = dir.join("oracle");
        std::fs::create_dir_all(&dir).map_err(|e| format!("`{}`: {e}", dir.display()))?;
        Ok(Oracle {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            dir,
            count: 0,
        })
    }

    /// Runs `program` of the Python `text` on `arrays` with `symbols`; the
    /// arrays after the call (and `__return`, if it returns a value).
    /// `Err` says why not: the program raised, or the oracle failed.
    pub(super) fn run(
        &mut self,
        text: &str,
        program: &str,
        symbols: &BTreeMap<String, i64>,
        arrays: &BTreeMap<String, ArrayValue>,
    ) -> Result<BTreeMap<String, ArrayValue>, String> {
        // A fresh file name per program: Python's bytecode cache keys on
        // the path and the modification time, which two programs written
        // within one second would share.
        self.count += 1;
        let case = self.dir.join(format!("p{}", self.count));
        let (inputs, outputs) = (case.join("in"), case.join("out"));
        let io = |e: std::io::Error| format!("oracle files: {e}");
        std::fs::create_dir_all(&inputs).map_err(io)?;
        std::fs::create_dir_all(&outputs).map_err(io)?;
        let file = case.join(format!("fuzz_{}.py", self.count));
        std::fs::write(&file, text).map_err(io)?;
        for (name, value) in arrays {
            sdfg_sim::npy::write(&inputs.join(format!("{name}.npy")), value)
                .map_err(|e| e.to_string())?;
        }
        let request = serde_json::json!({
            "file": file,
            "program": program,
            "symbols": symbols,
            "arrays": arrays.keys().collect::<Vec<_>>(),
            "inputs": inputs,
            "outputs": outputs,
        });
        let result = self.ask(&request).and_then(|()| {
            let mut out = BTreeMap::new();
            for name in arrays.keys().map(String::as_str).chain(["__return"]) {
                let path = outputs.join(format!("{name}.npy"));
                if path.exists() {
                    let value = sdfg_sim::npy::read(&path).map_err(|e| e.to_string())?;
                    out.insert(name.to_owned(), value);
                }
            }
            Ok(out)
        });
        let _ = std::fs::remove_dir_all(&case);
        result
    }

    fn ask(&mut self, request: &serde_json::Value) -> Result<(), String> {
        let dead = |e: std::io::Error| format!("the oracle died: {e}");
        writeln!(self.stdin, "{request}").map_err(dead)?;
        self.stdin.flush().map_err(dead)?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line).map_err(dead)? == 0 {
            return Err("the oracle exited".to_owned());
        }
        let reply: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("the oracle said `{line}`: {e}"))?;
        match reply.get("error").and_then(|e| e.as_str()) {
            Some(e) => Err(format!("NumPy: {e}")),
            None => Ok(()),
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
