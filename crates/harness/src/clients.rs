//! Cases of DaCe's users' tools: SDFGs that GT4Py and DaCe's Fortran
//! frontend write, with the tools' own answers
//! (`corpus/clients/README.md`).
//!
//! A case is a folder a driver (`corpus/tools/clients/`) wrote: the SDFG
//! exactly as the tool wrote it, a value for each of its arguments, the
//! tool's reference answer for what it writes, and the symbols of the
//! call. [`crate::corpus::run_client`] takes it through the corpus's
//! stages, with the import of the SDFG where the corpus compiles Python
//! and the tool's reference where the corpus runs NumPy.

use crate::corpus::{Metadata, Tolerance};
use sdfg_sim::ArrayValue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a driver wrote about a case (`case.json`).
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseMeta {
    /// The tool (`gt4py`, `fortran`).
    pub client: String,
    /// The program's name.
    pub program: String,
    /// How the tool wrote it (`dace:cpu`, `dace:gpu`, `next:cpu`, ...).
    pub variant: String,
    /// The program's file, relative to the workspace.
    pub source: String,
    /// Why the tool itself wrote no SDFG, where it could not.
    #[serde(default)]
    pub refused: Option<String>,
    /// Why DaCe's validation refuses the SDFG the tool wrote, where it
    /// does (GT4Py 1.1.12's nested SDFGs in DaCe's convention before 2.0,
    /// which DaCe 2.0.0b1 refuses): the case is that SDFG, as DaCe saved
    /// it on refusing it.
    #[serde(default)]
    pub dace_refused: Option<String>,
    /// Whose answer `expected/` holds.
    #[serde(default)]
    pub reference: Option<String>,
    /// Every free symbol of the SDFG, strides included: an integer for
    /// the IR's symbols, a float (written with a fraction or exponent)
    /// for a symbol DaCe types as a float, which the import keeps in a
    /// scalar container (gt4py.next passes scalar arguments so).
    #[serde(default)]
    pub symbols: BTreeMap<String, serde_json::Number>,
    /// The containers the program writes, compared after the run.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// The comparison's tolerance.
    #[serde(default)]
    pub tolerance: BTreeMap<String, f64>,
}

/// One case: its folder and what `case.json` says.
#[derive(Clone, Debug)]
pub struct ClientCase {
    /// `client/program.variant`, the row's name.
    pub name: String,
    /// The case's folder.
    pub dir: PathBuf,
    /// `case.json`.
    pub meta: CaseMeta,
}

impl ClientCase {
    /// Reads the case in `dir`.
    pub fn read(dir: &Path) -> Result<ClientCase, String> {
        let path = dir.join("case.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let meta: CaseMeta = serde_json::from_str(&text)
            .map_err(|e| format!("`{}` is not a client case: {e}", path.display()))?;
        Ok(ClientCase {
            name: format!("{}/{}.{}", meta.client, meta.program, meta.variant),
            dir: dir.to_owned(),
            meta,
        })
    }

    /// Every case under `root` (`root/<client>/<case>/case.json`), sorted.
    pub fn discover(root: &Path) -> Result<Vec<ClientCase>, String> {
        let mut out = Vec::new();
        let list = |d: &Path| -> Result<Vec<PathBuf>, String> {
            let mut v: Vec<PathBuf> = std::fs::read_dir(d)
                .map_err(|e| format!("cannot read `{}`: {e}", d.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            v.sort();
            Ok(v)
        };
        for client in list(root)? {
            for case in list(&client)? {
                if case.join("case.json").is_file() {
                    out.push(ClientCase::read(&case)?);
                }
            }
        }
        Ok(out)
    }

    /// The SDFG file as the tool wrote it.
    pub fn sdfg_file(&self) -> PathBuf {
        self.dir.join("program.sdfg")
    }

    /// Where the offloaded SDFG for `backend` is written, in DaCe's format.
    pub fn offloaded_file(&self, backend: &str) -> PathBuf {
        self.dir.join(format!("offloaded.{backend}.sdfg"))
    }

    /// The case as the corpus's metadata: its symbols, outputs and
    /// tolerance (tight by default: the tools compute what we compute, in
    /// the same order of operations).
    pub fn metadata(&self) -> Metadata {
        let tol = |k: &str, d: f64| self.meta.tolerance.get(k).copied().unwrap_or(d);
        let mut symbols = BTreeMap::new();
        let mut scalars = BTreeMap::new();
        for (name, v) in &self.meta.symbols {
            match v.as_i64() {
                Some(i) => {
                    symbols.insert(name.clone(), i);
                }
                None => {
                    scalars.insert(name.clone(), v.as_f64().unwrap_or(f64::NAN));
                }
            }
        }
        Metadata {
            program: self.meta.program.clone(),
            init: None,
            scalars,
            outputs: self.meta.outputs.clone(),
            symbols,
            tolerance: Tolerance {
                rtol: tol("rtol", 1e-12),
                atol: tol("atol", 1e-12),
                norm_error: tol("norm_error", 1e-12),
            },
            signature: BTreeMap::new(),
        }
    }

    /// The arguments' values before the call (`inputs/`).
    pub fn inputs(&self) -> Result<BTreeMap<String, ArrayValue>, String> {
        read_arrays(&self.dir.join("inputs"))
    }

    /// The tool's answer (`expected/`).
    pub fn expected(&self) -> Result<BTreeMap<String, ArrayValue>, String> {
        read_arrays(&self.dir.join("expected"))
    }
}

/// The `.npy` files of `dir`, by file stem.
fn read_arrays(dir: &Path) -> Result<BTreeMap<String, ArrayValue>, String> {
    let mut out = BTreeMap::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "npy") {
            let name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let value =
                sdfg_sim::npy::read(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
            out.insert(name, value);
        }
    }
    Ok(out)
}
