//! `sdfgc`: the command-line front door of the SDFG offloading toolchain.
//!
//! Exit status: 0 on success, 1 when the input is an invalid SDFG or the run
//! faults, 2 when the input cannot be read or parsed at all.

use clap::{Parser, Subcommand};
use sdfg_harness::{load_sdfg, parse_symbols_of};
use sdfg_sim::{Arguments, Simulator};
use std::path::PathBuf;
use std::process::ExitCode;

// The pipeline allocates many small, short-lived values (symbolic
// expressions, names, subsets): with mimalloc, programs of 10,000
// statements compile 10 to 30% faster than with the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "sdfgc", version, about = "Compile, inspect and run SDFGs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate an SDFG JSON file: prints every error; silent when valid.
    Validate {
        /// The SDFG, as written by `Sdfg::to_json` (or a DaCe `.sdfg` file).
        file: PathBuf,
    },
    /// Print an SDFG JSON file as Graphviz DOT.
    Dot {
        /// The SDFG, as written by `Sdfg::to_json` (or a DaCe `.sdfg` file).
        file: PathBuf,
    },
    /// Compile a DaCe-style Python program (or an SDFG JSON file) to an SDFG.
    Compile {
        /// The Python file, or an SDFG: this project's JSON (`.json`) or
        /// DaCe's (`.sdfg`), which goes through the same passes.
        file: PathBuf,
        /// The `@dace.program` to compile (default: the file's only program,
        /// or the one its `BENCHMARK` names).
        #[arg(long)]
        program: Option<String>,
        /// The type of a parameter the program leaves unannotated, as
        /// `NAME=TYPE` (`A=float64[N, M]`, `alpha=float64`), repeatable:
        /// DaCe types such parameters from the arguments of a call.
        #[arg(long = "signature", value_name = "NAME=TYPE")]
        signature: Vec<String>,
        /// What to print.
        #[arg(long, value_enum, default_value = "sdfg-json")]
        emit: Emit,
        /// Offload to this accelerator (`sim`, `cuda`, `hip`); without it the
        /// host SDFG is printed.
        #[arg(long)]
        backend: Option<String>,
        /// With `--emit source`: write the translation unit into this
        /// directory (created if missing) instead of printing it.
        #[arg(short = 'o', long = "out-dir")]
        out_dir: Option<PathBuf>,
        /// Maps that stay on the host: `none`, `auto`, or labels separated by commas.
        #[arg(long, default_value = "none")]
        host_maps: String,
        /// Print every offload decision to stderr.
        #[arg(long)]
        verbose: bool,
        /// The passes to run, by name, separated by commas (`list` prints
        /// the pipeline). Default: every pass with `--backend` (code
        /// generation adds `lower-library`), none without.
        #[arg(long)]
        passes: Option<String>,
        /// Turn off loop-to-map (to compare with it on).
        #[arg(long)]
        no_loop_to_map: bool,
        /// Keep loops whose tests read device data on the host: no
        /// persistent kernels (to compare, or for a code generator that
        /// does not take them all).
        #[arg(long)]
        no_persistent: bool,
        /// Every array argument's home is the device (DaCe's `GPU_Global`,
        /// `apply_gpu_storage`): the caller passes device pointers (a
        /// CuPy array), and nothing is copied in or out but what host code
        /// itself reads or writes.
        #[arg(long)]
        args_on_device: bool,
    },
    /// Offload an SDFG JSON file for an accelerator and write the offloaded
    /// SDFG as JSON: every pass up to offloading, as `compile --backend`
    /// runs them. Offloading its own output again changes nothing
    /// (idempotence), which this makes checkable on any SDFG.
    Offload {
        /// The SDFG, as written by `Sdfg::to_json`, a DaCe `.sdfg` file
        /// (written back in DaCe's format on standard output), or a Python
        /// program.
        file: PathBuf,
        /// The accelerator (`sim`, `cuda`, `hip`).
        #[arg(long)]
        backend: String,
        /// Where to write the offloaded SDFG (default: standard output):
        /// in DaCe's format where the name ends in `.sdfg` (`.sdfgz`
        /// gzip-compressed), as this project's JSON otherwise.
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
        /// Maps that stay on the host: `none`, `auto`, or labels separated by commas.
        #[arg(long, default_value = "none")]
        host_maps: String,
        /// Keep loops whose tests read device data on the host: no
        /// persistent kernels (DaCe's code generator takes only those
        /// whose device maps share a dimensionality).
        #[arg(long)]
        no_persistent: bool,
        /// Every array argument's home is the device (DaCe's `GPU_Global`,
        /// `apply_gpu_storage`): the caller passes device pointers (a
        /// CuPy array), and nothing is copied in or out but what host code
        /// itself reads or writes.
        #[arg(long)]
        args_on_device: bool,
    },
    /// Run an SDFG on the simulated accelerator and print the run report.
    ///
    /// Each argument `x` is read from `INPUTS/x.npy`; where that file does
    /// not exist (or no input directory is given) it is filled
    /// deterministically (see `sdfg_sim::deterministic_fill`). Every
    /// non-transient container is written to `OUTPUTS/x.npy` after the run.
    Run {
        /// The SDFG, as written by `Sdfg::to_json` (or a DaCe `.sdfg` file).
        file: PathBuf,
        /// Symbol values, e.g. `N=10,M=20`.
        #[arg(long, default_value = "")]
        symbols: String,
        /// Directory with one `.npy` file per argument.
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// Directory to write the outputs to (created if missing).
        #[arg(long)]
        outputs: Option<PathBuf>,
        /// The most memory the run may allocate, arguments included: bytes,
        /// or with a suffix `K`, `M`, `G`, `T` (powers of 1024); `none` for
        /// no limit.
        #[arg(long, default_value = "8G", value_parser = parse_memory)]
        max_memory: MemoryLimit,
    },
}

/// A `--max-memory` value: bytes, or no limit.
#[derive(Clone, Copy, Debug)]
struct MemoryLimit(Option<u64>);

fn parse_memory(text: &str) -> Result<MemoryLimit, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(MemoryLimit(None));
    }
    let (digits, shift) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => {
                    return Err(format!(
                        "{}: the suffix must be K, M, G or T",
                        sdfg_ir::quote(text)
                    ));
                }
            };
            (&text[..i], shift)
        }
        _ => (text, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .map(|n| MemoryLimit(Some(n)))
        .ok_or_else(|| {
            format!(
                "{} is not a size in bytes (e.g. 512M, 8G, none)",
                sdfg_ir::quote(text)
            )
        })
}

/// Outputs of `sdfgc compile`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Emit {
    /// The SDFG as JSON.
    SdfgJson,
    /// The SDFG in DaCe's `.sdfg` format, for DaCe, its viewer and its
    /// transformations (`docs/dace-format.md`).
    DaceSdfg,
    /// The SDFG as Graphviz DOT.
    Dot,
    /// The offload report: every placement and copy with its reason.
    Report,
    /// The translation unit of a code-generating backend (`cuda`, `hip`).
    Source,
}

fn main() -> ExitCode {
    // This executable is also a runner of the emulated GPU (sdfg_exec::child).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = sdfg_exec::child::dispatch(&args) {
        return ExitCode::from(u8::try_from(code).unwrap_or(2));
    }
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// The SDFG of `file`: loaded and validated where it is SDFG JSON (a
/// `.json` file), else lowered from the Python program `program` (default:
/// the file's only program, or the one its `BENCHMARK` names).
fn load_program(
    file: &std::path::Path,
    program: Option<String>,
    signature: &[String],
) -> Result<sdfg_ir::Sdfg, String> {
    if file.extension().is_some_and(|e| e == "json") || sdfg_harness::is_dace_file(file) {
        if program.is_some() || !signature.is_empty() {
            return Err(
                "`--program` and `--signature` apply to a Python file, not to an SDFG".to_owned(),
            );
        }
        let sdfg = load_sdfg(file).map_err(|e| e.to_string())?;
        sdfg_ir::validate(&sdfg)
            .map_err(|errors| format!("`{}` is an invalid SDFG:\n{errors}", file.display()))?;
        return Ok(sdfg);
    }
    let text = sdfg_harness::read_text(file).map_err(|e| e.to_string())?;
    let module = sdfg_frontend::Module::parse(&file.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let name = match program {
        Some(p) => p,
        None => sdfg_harness::default_program(&module).ok_or_else(|| {
            if module.programs().is_empty() {
                format!("`{}` has no `@dace.program`", file.display())
            } else {
                format!(
                    "`{}` has several programs; choose one with --program",
                    file.display()
                )
            }
        })?,
    };
    let mut types = std::collections::BTreeMap::new();
    for entry in signature {
        let (param, ty) = entry
            .split_once('=')
            .ok_or_else(|| format!("`--signature {entry}` is not NAME=TYPE"))?;
        let param = param.trim();
        if types
            .insert(param.to_owned(), ty.trim().to_owned())
            .is_some()
        {
            return Err(format!("`--signature` gives `{param}` twice"));
        }
    }
    module
        .compile_with(&name, &types)
        .map_err(|e| e.to_string())
}

/// `sdfg` in DaCe's `.sdfg` format.
fn dace_text(sdfg: &sdfg_ir::Sdfg) -> Result<String, String> {
    sdfg_dace_format::to_dace_string(sdfg).map_err(|e| e.to_string())
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Offload {
            file,
            backend,
            out,
            host_maps,
            no_persistent,
            args_on_device,
        } => {
            let sdfg = load_program(&file, None, &[])?;
            let options = sdfg_harness::driver::Options {
                backend,
                host_maps,
                persistent: !no_persistent,
                args_on_device,
            };
            let (sdfg, _) =
                sdfg_harness::driver::offload(sdfg, &options).map_err(|e| e.to_string())?;
            // The output's format follows its file's extension (DaCe's for
            // `.sdfg`), or on standard output the input's: DaCe in, DaCe out.
            let dace = match &out {
                Some(p) => sdfg_harness::is_dace_file(p),
                None => sdfg_harness::is_dace_file(&file),
            };
            if let Some(path) = out
                .as_ref()
                .filter(|p| sdfg_harness::is_compressed_dace_file(p))
            {
                let bytes = sdfg_dace_format::to_dace_gz(&sdfg).map_err(|e| e.to_string())?;
                std::fs::write(path, bytes)
                    .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
                return Ok(ExitCode::SUCCESS);
            }
            let json = if dace {
                dace_text(&sdfg)?
            } else {
                sdfg.to_json()
            };
            match out {
                Some(path) => std::fs::write(&path, json + "\n")
                    .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?,
                None => println!("{json}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { file } => {
            let sdfg = load_sdfg(&file).map_err(|e| e.to_string())?;
            Ok(match sdfg_ir::validate(&sdfg) {
                Ok(_) => ExitCode::SUCCESS,
                Err(errors) => {
                    for e in &errors.0 {
                        println!("error: {e}");
                    }
                    ExitCode::from(1)
                }
            })
        }
        Command::Compile {
            file,
            program,
            signature,
            emit,
            backend,
            out_dir,
            host_maps,
            verbose,
            passes,
            no_loop_to_map,
            no_persistent,
            args_on_device,
        } => {
            if passes.as_deref() == Some("list") {
                for p in sdfg_passes::Pass::ALL {
                    println!("{:<14} {}", p.name(), p.describe());
                }
                return Ok(ExitCode::SUCCESS);
            }
            let mut sdfg = load_program(&file, program, &signature)?;
            if args_on_device {
                sdfg_harness::arguments_on_device(&mut sdfg);
            }
            let backend = backend.map(|b| sdfg_harness::backend(&b)).transpose()?;
            let mut options = sdfg_harness::driver::pipeline_options(
                &sdfg_harness::driver::Options {
                    backend: String::new(),
                    host_maps,
                    persistent: !no_persistent,
                    args_on_device,
                },
                verbose,
            );
            if no_loop_to_map {
                options = options.without(sdfg_passes::Pass::LoopToMap);
            }
            use sdfg_passes::Pass;
            let selected: Vec<Pass> = match &passes {
                Some(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        Pass::from_name(p).ok_or_else(|| {
                            format!("unknown pass `{p}` (`--passes list` shows them)")
                        })
                    })
                    .collect::<Result<_, _>>()?,
                None if backend.is_some() => Pass::TO_OFFLOAD.to_vec(),
                None => Vec::new(),
            };
            let codegen = matches!(emit, Emit::Source);
            let mut selected = selected;
            if codegen && !selected.contains(&Pass::LowerLibrary) {
                selected.push(Pass::LowerLibrary);
            }
            let (sdfg, report) = sdfg_passes::pipeline::run_owned(
                sdfg,
                backend.as_ref().map(|b| b.accelerator()),
                &options,
                &selected,
            )
            .map_err(|e| e.to_string())?;
            if verbose && let Some(l) = &report.loops {
                eprint!("{l}");
            }
            match emit {
                Emit::SdfgJson => println!("{}", sdfg.to_json()),
                Emit::DaceSdfg => println!("{}", dace_text(&sdfg)?),
                Emit::Dot => print!("{}", sdfg_ir::dot::to_dot(&sdfg)),
                Emit::Report => {
                    if report.ran.is_empty() {
                        return Err("`--emit report` needs `--backend` or `--passes`".to_owned());
                    }
                    print!("{report}");
                }
                Emit::Source => {
                    let Some(sdfg_harness::Backend::Code(target)) = backend else {
                        return Err(
                            "`--emit source` needs a code-generating backend (`--backend cuda` or `hip`)"
                                .to_owned(),
                        );
                    };
                    if !report.ran.contains(&Pass::Offload) {
                        return Err("`--emit source` needs the `offload` pass".to_owned());
                    }
                    let unit = sdfg_codegen::emit_validated(sdfg.validated(), target.dialect)
                        .map_err(|e| e.to_string())?;
                    match out_dir {
                        Some(dir) => {
                            std::fs::create_dir_all(&dir)
                                .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
                            // Named after the program's file: corpus kernels
                            // are all called `kernel`.
                            let stem = file.file_stem().map_or_else(
                                || unit.file_name.clone(),
                                |s| {
                                    format!(
                                        "{}.{}",
                                        s.to_string_lossy(),
                                        target.dialect.source_extension()
                                    )
                                },
                            );
                            let path = dir.join(stem);
                            std::fs::write(&path, &unit.source)
                                .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
                            println!("{}", path.display());
                        }
                        None => print!("{}", unit.source),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Dot { file } => {
            let sdfg = load_sdfg(&file).map_err(|e| e.to_string())?;
            print!("{}", sdfg_ir::dot::to_dot(&sdfg));
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            file,
            symbols,
            inputs,
            outputs,
            max_memory: MemoryLimit(limit),
        } => {
            let sdfg = load_sdfg(&file).map_err(|e| e.to_string())?;
            let valid = match sdfg_ir::validate(&sdfg) {
                Ok(v) => v,
                Err(errors) => {
                    for e in &errors.0 {
                        println!("error: {e}");
                    }
                    return Ok(ExitCode::from(1));
                }
            };
            let symbols = parse_symbols_of(&symbols, &sdfg).map_err(|e| e.to_string())?;
            let shapes =
                sdfg_sim::argument_shapes(&sdfg, &symbols, limit).map_err(|e| e.to_string())?;
            let mut args = Arguments {
                symbols,
                ..Arguments::default()
            };
            for (name, (dtype, shape)) in shapes {
                let path = inputs.as_ref().map(|d| d.join(format!("{name}.npy")));
                let value = match path.filter(|p| p.exists()) {
                    Some(p) => sdfg_sim::npy::read(&p).map_err(|e| e.to_string())?,
                    None => {
                        println!("filling `{name}` deterministically ({dtype}, shape {shape:?})");
                        sdfg_sim::deterministic_fill(&name, dtype, shape)
                            .map_err(|e| e.to_string())?
                    }
                };
                args.arrays.insert(name, value);
            }
            let result = match Simulator::new().max_memory(limit).run(valid, &args) {
                Ok(r) => r,
                Err(e) => {
                    println!("fault: {e}");
                    return Ok(ExitCode::from(1));
                }
            };
            if let Some(dir) = outputs {
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
                for (name, value) in &result.outputs {
                    sdfg_sim::npy::write(&dir.join(format!("{name}.npy")), value)
                        .map_err(|e| e.to_string())?;
                }
            }
            print!("{}", result.report);
            Ok(ExitCode::SUCCESS)
        }
    }
}
