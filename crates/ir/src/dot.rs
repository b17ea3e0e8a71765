//! Graphviz DOT export, for looking at an SDFG.
//!
//! Each state is a cluster, nested in clusters for the loops and
//! conditionals around it. Access nodes are filled with the colour of their
//! container's storage (see [`storage_colour`]), map scopes are clusters of
//! their own (device kernels drawn in green, thread-block maps in yellow), and
//! *copies*, edges between two access nodes whose containers live on
//! different sides, are drawn thick and red, so data movement between host
//! and device stands out.

use crate::control::{BlockKind, Region};
use crate::node::{Node, NodeId};
use crate::placement::{Schedule, Storage};
use crate::sdfg::Sdfg;
use crate::state::State;
use std::fmt::Write;

/// Fill colour of access nodes by storage kind.
pub fn storage_colour(storage: Storage) -> &'static str {
    match storage {
        Storage::Default => "white",
        Storage::Host => "lightblue",
        Storage::HostPinned => "lightskyblue",
        Storage::DeviceGlobal => "palegreen",
        Storage::DeviceShared => "khaki",
        Storage::Register => "lightgrey",
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\l")
}

/// Renders the SDFG (nested SDFGs included, as boxes labelled with their name) as DOT.
pub fn to_dot(sdfg: &Sdfg) -> String {
    let mut w = DotWriter {
        sdfg,
        out: String::new(),
        clusters: 0,
        states: 0,
    };
    w.line(0, &format!("digraph \"{}\" {{", escape(&sdfg.name)));
    w.line(1, "compound=true;");
    w.line(1, "node [fontname=\"Helvetica\", fontsize=10];");
    w.line(1, "edge [fontname=\"Helvetica\", fontsize=9];");
    w.line(
        1,
        &format!("label=\"SDFG {}\"; labelloc=t;", escape(&sdfg.name)),
    );
    w.region(&sdfg.body, 1);
    w.line(0, "}");
    w.out
}

struct DotWriter<'a> {
    sdfg: &'a Sdfg,
    out: String,
    clusters: usize,
    states: usize,
}

impl DotWriter<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        let _ = writeln!(self.out, "{}{}", "  ".repeat(indent), text);
    }

    fn open_cluster(&mut self, indent: usize, label: &str, style: &str) {
        self.clusters += 1;
        let n = self.clusters;
        self.line(indent, &format!("subgraph cluster_{n} {{"));
        self.line(indent + 1, &format!("label=\"{}\"; {style}", escape(label)));
    }

    fn region(&mut self, region: &Region, indent: usize) {
        for block in &region.blocks {
            match &block.kind {
                BlockKind::State(state) => {
                    self.open_cluster(indent, &format!("state {}", block.label), "style=rounded;");
                    self.state(state, indent + 1);
                    self.line(indent, "}");
                }
                BlockKind::Loop(l) => {
                    let header = match (&l.variable, &l.init, &l.update) {
                        (Some(v), Some(i), Some(u)) => {
                            format!("for {v} = {i}; {}; {v} = {u}", l.condition)
                        }
                        _ => format!("while {}", l.condition),
                    };
                    self.open_cluster(
                        indent,
                        &format!("{}: {header}", block.label),
                        "style=dashed;",
                    );
                    self.region(&l.body, indent + 1);
                    self.placeholder_if_empty(&l.body, indent + 1);
                    self.line(indent, "}");
                }
                BlockKind::Conditional(c) => {
                    self.open_cluster(indent, &block.label, "style=dashed;");
                    for (cond, body) in &c.branches {
                        self.open_cluster(indent + 1, &format!("if {cond}"), "style=dotted;");
                        self.region(body, indent + 2);
                        self.placeholder_if_empty(body, indent + 2);
                        self.line(indent + 1, "}");
                    }
                    if let Some(body) = &c.otherwise {
                        self.open_cluster(indent + 1, "else", "style=dotted;");
                        self.region(body, indent + 2);
                        self.placeholder_if_empty(body, indent + 2);
                        self.line(indent + 1, "}");
                    }
                    self.line(indent, "}");
                }
                BlockKind::Break | BlockKind::Continue | BlockKind::Return => {
                    self.clusters += 1;
                    let n = self.clusters;
                    self.line(
                        indent,
                        &format!("jump_{n} [label=\"{}\", shape=cds];", block.kind.name()),
                    );
                }
            }
            if !block.transition.is_empty() {
                let text: Vec<String> = block
                    .transition
                    .assignments
                    .iter()
                    .map(|a| format!("{} = {}", a.symbol, a.value))
                    .collect();
                self.clusters += 1;
                let n = self.clusters;
                self.line(
                    indent,
                    &format!(
                        "assign_{n} [label=\"{}\", shape=plaintext];",
                        escape(&text.join("; "))
                    ),
                );
            }
        }
    }

    fn placeholder_if_empty(&mut self, region: &Region, indent: usize) {
        if region.blocks.is_empty() {
            self.clusters += 1;
            let n = self.clusters;
            self.line(
                indent,
                &format!("empty_{n} [label=\"(empty)\", shape=plaintext];"),
            );
        }
    }

    fn state(&mut self, state: &State, indent: usize) {
        self.states += 1;
        let s = self.states;
        let id = |n: NodeId| format!("s{s}_n{}", n.index());
        match state.scope_tree() {
            Ok(tree) => self.scope(state, &tree, None, indent, &id),
            Err(_) => {
                for (n, _) in state.nodes() {
                    self.node(state, n, indent, &id);
                }
            }
        }
        for (_, src, dst, edge) in state.edges() {
            let mut attrs = Vec::new();
            match &edge.memlet {
                None => attrs.push("style=dotted".to_owned()),
                Some(m) => {
                    attrs.push(format!("label=\"{}\"", escape(&m.to_string())));
                    let copy = match (state.node(src), state.node(dst)) {
                        (Some(Node::Access(a)), Some(Node::Access(b))) => {
                            let side =
                                |d: &str| self.sdfg.container(d).and_then(|c| c.storage.side());
                            Some(side(&a.data) != side(&b.data))
                        }
                        _ => None,
                    };
                    if copy == Some(true) {
                        attrs.push("color=red, penwidth=2.5, fontcolor=red".to_owned());
                    }
                }
            }
            if edge.src_conn.as_deref() == Some(crate::VIEW_CONNECTOR)
                || edge.dst_conn.as_deref() == Some(crate::VIEW_CONNECTOR)
            {
                attrs.push("style=dashed".to_owned());
            }
            self.line(
                indent,
                &format!("{} -> {} [{}];", id(src), id(dst), attrs.join(", ")),
            );
        }
    }

    fn scope(
        &mut self,
        state: &State,
        tree: &crate::state::ScopeTree,
        entry: Option<NodeId>,
        indent: usize,
        id: &dyn Fn(NodeId) -> String,
    ) {
        for n in tree.children(entry) {
            match state.node(n) {
                Some(Node::MapEntry(m)) => {
                    let style = match m.map.schedule {
                        Schedule::DeviceKernel => "style=filled; fillcolor=\"#e6f5e6\";",
                        Schedule::DeviceThreadBlock => "style=filled; fillcolor=\"#fdf6d8\";",
                        Schedule::DevicePersistent => "style=filled; fillcolor=\"#d6ecf5\";",
                        _ => "style=solid;",
                    };
                    self.open_cluster(
                        indent,
                        &format!("map {} [{}]", m.map.label, m.map.schedule),
                        style,
                    );
                    self.node(state, n, indent + 1, id);
                    self.scope(state, tree, Some(n), indent + 1, id);
                    self.line(indent, "}");
                }
                _ => self.node(state, n, indent, id),
            }
        }
    }

    fn node(&mut self, state: &State, n: NodeId, indent: usize, id: &dyn Fn(NodeId) -> String) {
        let Some(node) = state.node(n) else { return };
        let attrs = match node {
            Node::Access(a) => {
                let desc = self.sdfg.container(&a.data);
                let storage = desc.map_or(Storage::Default, |d| d.storage);
                let style = if desc.is_some_and(|d| d.transient) {
                    "filled,dashed"
                } else {
                    "filled"
                };
                format!(
                    "label=\"{}\\n{}\", shape=ellipse, style=\"{style}\", fillcolor={}",
                    escape(&a.data),
                    storage,
                    storage_colour(storage)
                )
            }
            Node::MapEntry(m) => {
                let dims: Vec<String> = m.map.dims().map(|(p, r)| format!("{p}={r}")).collect();
                format!(
                    "label=\"[{}]\", shape=invtrapezium",
                    escape(&dims.join(", "))
                )
            }
            Node::MapExit(x) => format!("label=\"{}\", shape=trapezium", escape(&x.label)),
            Node::Tasklet(t) => {
                let mut body = String::new();
                let _ = crate::code::write_body(&mut body, &t.body, 0);
                format!(
                    "label=\"{}\\n{}\", shape=octagon",
                    escape(&t.label),
                    escape(&body)
                )
            }
            Node::NestedSdfg(ns) => format!(
                "label=\"{}\\nSDFG {}\", shape=doubleoctagon",
                escape(&ns.label),
                escape(&ns.sdfg.name)
            ),
            Node::Library(l) => format!(
                "label=\"{}\\n{} [{}]\", shape=box3d",
                escape(&l.label),
                l.op.name(),
                l.schedule
            ),
            Node::Callback(c) => format!(
                "label=\"{}\\ncallback {}\", shape=note",
                escape(&c.label),
                escape(&c.callee)
            ),
        };
        self.line(indent, &format!("{} [{attrs}];", id(n)));
    }
}
