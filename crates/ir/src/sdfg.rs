//! The SDFG: containers, symbols, arguments and a control-flow region.

use crate::control::{BlockKind, ControlBlock, Region};
use crate::data::DataDesc;
use crate::dtype::DType;
use crate::node::Node;
use crate::placement::MemoryModel;
use crate::state::State;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stateful dataflow multigraph: the unit of compilation.
///
/// Maps are `BTreeMap`s so that iteration, and therefore serialization and
/// every pass that walks containers, is deterministic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sdfg {
    /// Name of the program; becomes the name of the generated entry point.
    pub name: String,
    /// Integer symbols with their types: problem sizes, loop variables,
    /// symbols assigned on transitions. Map parameters are not listed here;
    /// they are defined by their map.
    pub symbols: BTreeMap<String, DType>,
    /// Named data containers.
    pub containers: BTreeMap<String, DataDesc>,
    /// The calling convention: names of non-transient containers and of
    /// symbols, in the order the entry point takes them.
    pub arguments: Vec<String>,
    /// The program.
    pub body: Region,
    /// Which memory host and device code may touch directly (separate
    /// memories unless the offload pass was told otherwise by its
    /// accelerator). An SDFG nested in another follows its root's.
    #[serde(default, skip_serializing_if = "MemoryModel::is_separate")]
    pub memory: MemoryModel,
}

/// The path of labels from the SDFG's root region to a block, for messages.
pub type BlockPath = Vec<String>;

/// Where a block sits, as seen by [`Sdfg::walk_blocks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockContext {
    /// Number of loops enclosing the block (within this SDFG).
    pub loop_depth: usize,
}

impl Sdfg {
    /// An empty SDFG named `name`.
    pub fn new(name: impl Into<String>) -> Sdfg {
        Sdfg {
            name: name.into(),
            symbols: BTreeMap::new(),
            containers: BTreeMap::new(),
            arguments: Vec::new(),
            body: Region::default(),
            memory: MemoryModel::default(),
        }
    }

    /// The container named `name`.
    pub fn container(&self, name: &str) -> Option<&DataDesc> {
        self.containers.get(name)
    }

    /// Serializes to pretty JSON. The output is a function of the SDFG alone
    /// (no ids, no hash-map order), so the same SDFG always gives the same bytes.
    pub fn to_json(&self) -> String {
        // Every field serializes infallibly (string keys, no non-finite floats
        // outside the literal helper), so an error here is a bug in this crate.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Parses JSON produced by [`to_json`](Self::to_json) (or written by hand).
    pub fn from_json(text: &str) -> Result<Sdfg, serde_json::Error> {
        // serde_json's own limit (128) is too low for the SDFGs this
        // project writes; a bound of our own, checked without recursion
        // before parsing, keeps a deeper text an error instead of a stack
        // overflow.
        if let Some(offset) = too_deep(text, MAX_JSON_DEPTH) {
            let line = text[..offset].matches('\n').count() + 1;
            return Err(<serde_json::Error as serde::de::Error>::custom(format!(
                "nested more than {MAX_JSON_DEPTH} levels deep (line {line})"
            )));
        }
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let sdfg = <Sdfg as serde::Deserialize>::deserialize(&mut de).map_err(shortened)?;
        de.end().map_err(shortened)?;
        Ok(sdfg)
    }

    /// Calls `f` on every block of this SDFG (not of nested SDFGs), parents
    /// before children, with the block's path and context.
    pub fn walk_blocks<'a>(
        &'a self,
        f: &mut dyn FnMut(&BlockPath, BlockContext, &'a ControlBlock),
    ) {
        fn walk<'a>(
            region: &'a Region,
            path: &mut BlockPath,
            ctx: BlockContext,
            f: &mut dyn FnMut(&BlockPath, BlockContext, &'a ControlBlock),
        ) {
            for block in &region.blocks {
                path.push(block.label.clone());
                f(path, ctx, block);
                match &block.kind {
                    BlockKind::Loop(l) => walk(
                        &l.body,
                        path,
                        BlockContext {
                            loop_depth: ctx.loop_depth + 1,
                        },
                        f,
                    ),
                    BlockKind::Conditional(c) => {
                        for (_, r) in &c.branches {
                            walk(r, path, ctx, f);
                        }
                        if let Some(r) = &c.otherwise {
                            walk(r, path, ctx, f);
                        }
                    }
                    _ => {}
                }
                path.pop();
            }
        }
        walk(
            &self.body,
            &mut Vec::new(),
            BlockContext { loop_depth: 0 },
            f,
        );
    }

    /// Whether where the SDFG's code runs is decided: some map or library
    /// call in it, or in an SDFG nested in it, is scheduled on a device.
    /// An SDFG with none is DaCe's input before a GPU transformation: its
    /// code may still go anywhere, so containers it keeps in device
    /// storage (arguments already on the GPU) are a constraint on the
    /// offload pass, not host code touching device memory (see
    /// [`validate`](crate::validate())).
    pub fn schedules_decided(&self) -> bool {
        self.states().into_iter().any(|(_, s)| {
            s.nodes().any(|(_, n)| match n {
                Node::MapEntry(m) => m.map.schedule.is_device(),
                Node::Library(l) => l.schedule.is_device(),
                Node::NestedSdfg(n) => n.sdfg.schedules_decided(),
                _ => false,
            })
        })
    }

    /// Every state of this SDFG (not of nested SDFGs) with its label, in program order.
    pub fn states(&self) -> Vec<(&str, &State)> {
        let mut out = Vec::new();
        self.walk_blocks(&mut |_, _, b| {
            if let BlockKind::State(s) = &b.kind {
                out.push((b.label.as_str(), s));
            }
        });
        out
    }
}

/// `e`, with the text it quotes cut to a readable length
/// ([`crate::quote::cut_quoted`]): serde's messages quote a wrong value
/// whole (a 60,000-character `dtype` made a 60 KB message). A cut message
/// is a new error, whose position is in its text.
fn shortened(e: serde_json::Error) -> serde_json::Error {
    let message = e.to_string();
    if message.len() <= 4 * crate::quote::MAX_QUOTED_CHARS {
        return e;
    }
    <serde_json::Error as serde::de::Error>::custom(crate::quote::cut_quoted(&message))
}

/// How deeply [`Sdfg::from_json`] lets arrays and objects nest: far more
/// than any SDFG the frontend writes (its deepest, a tasklet expression 64
/// levels deep, takes about 150), little enough for the recursive parser
/// on any thread's stack.
pub const MAX_JSON_DEPTH: usize = 512;

/// The byte offset where `text` first nests arrays and objects deeper than
/// `limit`, if it does (strings skipped, escapes honoured).
fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}
