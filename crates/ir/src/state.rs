//! States: acyclic dataflow multigraphs.

use crate::memlet::Memlet;
use crate::node::{AccessNode, Edge, EdgeId, Node, NodeId};
use petgraph::Direction;
use petgraph::stable_graph::StableDiGraph;
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use serde::{Deserialize, Serialize};

/// A state: an acyclic multigraph of dataflow nodes and memlet edges.
///
/// The graph is a petgraph [`StableDiGraph`], so node and edge ids survive the
/// removal of other nodes (passes delete and insert freely) and serialize as
/// they are, holes included, which keeps JSON output deterministic.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// The dataflow graph.
    pub graph: StableDiGraph<Node, Edge, u32>,
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.nodes().eq(other.nodes()) && self.edges().eq(other.edges())
    }
}

impl State {
    /// An empty state.
    pub fn new() -> State {
        State::default()
    }

    /// Adds a node.
    pub fn add_node(&mut self, node: Node) -> NodeId {
        self.graph.add_node(node)
    }

    /// Adds an access node for `data`.
    pub fn add_access(&mut self, data: impl Into<String>) -> NodeId {
        self.add_node(Node::Access(AccessNode { data: data.into() }))
    }

    /// Adds an edge carrying `memlet` from `src`'s connector `src_conn` to `dst`'s `dst_conn`.
    pub fn add_edge(
        &mut self,
        src: NodeId,
        src_conn: Option<&str>,
        dst: NodeId,
        dst_conn: Option<&str>,
        memlet: Memlet,
    ) -> EdgeId {
        self.graph
            .add_edge(src, dst, Edge::new(src_conn, dst_conn, memlet))
    }

    /// Adds an empty memlet ordering `dst` after `src`.
    pub fn add_empty_edge(&mut self, src: NodeId, dst: NodeId) -> EdgeId {
        self.graph.add_edge(src, dst, Edge::empty())
    }

    /// The node with the given id, if it exists.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.graph.node_weight(id)
    }

    /// All nodes with their ids, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.graph.node_indices().map(|n| (n, &self.graph[n]))
    }

    /// All edges as `(id, source, target, edge)`, in id order.
    pub fn edges(&self) -> impl Iterator<Item = (EdgeId, NodeId, NodeId, &Edge)> {
        self.graph
            .edge_references()
            .map(|e| (e.id(), e.source(), e.target(), e.weight()))
    }

    /// Edges entering `node`, as `(id, source, edge)`.
    pub fn in_edges(&self, node: NodeId) -> impl Iterator<Item = (EdgeId, NodeId, &Edge)> {
        self.graph
            .edges_directed(node, Direction::Incoming)
            .map(|e| (e.id(), e.source(), e.weight()))
    }

    /// Edges leaving `node`, as `(id, target, edge)`.
    pub fn out_edges(&self, node: NodeId) -> impl Iterator<Item = (EdgeId, NodeId, &Edge)> {
        self.graph
            .edges_directed(node, Direction::Outgoing)
            .map(|e| (e.id(), e.target(), e.weight()))
    }

    /// The exit node of the map whose entry is `entry`.
    pub fn exit_of(&self, entry: NodeId) -> Option<NodeId> {
        self.nodes().find_map(|(id, n)| match n {
            Node::MapExit(x) if x.entry == entry => Some(id),
            _ => None,
        })
    }

    /// Containers accessed by access nodes of this state (sorted, deduplicated).
    pub fn accessed_containers(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.nodes().filter_map(|(_, n)| n.as_access()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The nodes in a topological order (every edge goes forward), or `None`
    /// when the graph has a cycle. Ties are broken by node id, so the order is
    /// deterministic.
    pub fn topological_order(&self) -> Option<Vec<NodeId>> {
        petgraph::algo::toposort(&self.graph, None).ok()
    }

    /// Whether a path of edges leads from `from` to `to` (a node reaches
    /// itself): whether `to` depends on `from` within the state.
    pub fn reaches(&self, from: NodeId, to: NodeId) -> bool {
        petgraph::algo::has_path_connecting(&self.graph, from, to, None)
    }

    /// Computes the scope tree: for every node, the map entry whose scope it is in.
    pub fn scope_tree(&self) -> Result<ScopeTree, ScopeError> {
        ScopeTree::compute(self)
    }
}

/// For every node of a state, the innermost map scope that contains it.
///
/// A map exit belongs to the scope of its own entry; a map entry to the scope
/// around it. Nodes outside every map have no parent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeTree {
    /// By node index (the graph's indices, holes included): `None` for no
    /// node, `Some(None)` at top level, `Some(Some(entry))` inside a map.
    /// A vector, not a map: passes compute trees of every state they
    /// visit, and lookups by index cost nothing.
    parent: Vec<Option<Option<NodeId>>>,
}

/// Why a state's map scopes are not well nested.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// The graph has a cycle through this node.
    #[error("the dataflow graph has a cycle through node {node:?}")]
    Cycle {
        /// A node on the cycle.
        node: NodeId,
    },
    /// The node's inputs come from different scopes.
    #[error("node {node:?} has inputs from different scopes ({first:?} and {second:?})")]
    Conflict {
        /// The node.
        node: NodeId,
        /// One scope (map entry), `None` for the top level.
        first: Option<NodeId>,
        /// Another.
        second: Option<NodeId>,
    },
    /// A map exit that is not fed from inside its own scope.
    #[error("map exit {node:?} is not fed from inside the scope of its entry")]
    ExitOutsideScope {
        /// The exit.
        node: NodeId,
    },
    /// A node inside a scope from which nothing leads to the scope's exit.
    #[error("node {node:?} inside a map scope has no outgoing edge")]
    Dangling {
        /// The node.
        node: NodeId,
    },
}

impl ScopeError {
    /// The node the error is about.
    pub fn node(&self) -> NodeId {
        match self {
            ScopeError::Cycle { node }
            | ScopeError::Conflict { node, .. }
            | ScopeError::ExitOutsideScope { node }
            | ScopeError::Dangling { node } => *node,
        }
    }
}

impl ScopeTree {
    /// Computes the scope of every node by one walk in topological order: a
    /// node is in the scope its inputs come from, where an input from a map
    /// entry means "inside that map" and an input from a map exit means "in the
    /// scope around that map".
    pub fn compute(state: &State) -> Result<ScopeTree, ScopeError> {
        let order = petgraph::algo::toposort(&state.graph, None)
            .map_err(|c| ScopeError::Cycle { node: c.node_id() })?;
        let mut parent: Vec<Option<Option<NodeId>>> =
            vec![None; petgraph::visit::NodeIndexable::node_bound(&state.graph)];
        let get = |parent: &[Option<Option<NodeId>>], n: NodeId| {
            parent.get(n.index()).copied().flatten().flatten()
        };
        for n in order {
            let mut scope: Option<Option<NodeId>> = None;
            for (_, src, _) in state.in_edges(n) {
                let s = match &state.graph[src] {
                    Node::MapEntry(_) => Some(src),
                    Node::MapExit(x) => get(&parent, x.entry),
                    _ => get(&parent, src),
                };
                match scope {
                    None => scope = Some(s),
                    Some(prev) if prev != s => {
                        return Err(ScopeError::Conflict {
                            node: n,
                            first: prev,
                            second: s,
                        });
                    }
                    Some(_) => {}
                }
            }
            let s = scope.unwrap_or(None);
            if let Node::MapExit(x) = &state.graph[n] {
                if s != Some(x.entry) {
                    return Err(ScopeError::ExitOutsideScope { node: n });
                }
            } else if s.is_some() && state.out_edges(n).next().is_none() {
                return Err(ScopeError::Dangling { node: n });
            }
            parent[n.index()] = Some(s);
        }
        Ok(ScopeTree { parent })
    }

    /// The map entry whose scope directly contains `node`, `None` at top level.
    pub fn parent(&self, node: NodeId) -> Option<NodeId> {
        self.parent.get(node.index()).copied().flatten().flatten()
    }

    /// The chain of enclosing map entries of `node`, innermost first.
    pub fn ancestors(&self, node: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut cur = self.parent(node);
        while let Some(e) = cur {
            if out.contains(&e) {
                break;
            }
            out.push(e);
            cur = self.parent(e);
        }
        out
    }

    /// Whether `node` is strictly inside a device-scheduled map (in a kernel).
    pub fn inside_device_map(&self, state: &State, node: NodeId) -> bool {
        self.ancestors(node)
            .into_iter()
            .any(|e| matches!(state.node(e), Some(Node::MapEntry(m)) if m.map.schedule.is_device()))
    }

    /// Whether the data `node` touches is touched by device code: `node` is
    /// a device map's entry or exit, a device-wide library call, inside a
    /// device map, or the entry or exit of a host map that launches device
    /// maps (it only passes their data through). The validator, the offload
    /// pass and the emitters share this one definition.
    pub fn runs_on_device(&self, state: &State, node: NodeId) -> bool {
        let entry = match state.node(node) {
            Some(Node::MapEntry(_)) => Some(node),
            Some(Node::MapExit(x)) => Some(x.entry),
            _ => None,
        };
        let is_device_map = |e: NodeId| matches!(state.node(e), Some(Node::MapEntry(m)) if m.map.schedule.is_device());
        let own = match (state.node(node), entry) {
            (Some(Node::Library(l)), _) => l.schedule.is_device(),
            (_, Some(e)) => {
                is_device_map(e) || self.children(Some(e)).into_iter().any(is_device_map)
            }
            _ => false,
        };
        own || self.inside_device_map(state, node)
    }

    /// Nodes directly in the scope of `entry` (excluding the entry itself, including its exit).
    pub fn children(&self, entry: Option<NodeId>) -> Vec<NodeId> {
        self.parent
            .iter()
            .enumerate()
            .filter(|(_, p)| **p == Some(entry))
            .map(|(n, _)| NodeId::new(n))
            .collect()
    }
}
