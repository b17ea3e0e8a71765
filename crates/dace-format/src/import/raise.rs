//! DaCe's state machines, raised to its explicit control flow before a
//! region is read.
//!
//! Without explicit control flow, DaCe writes loops and branches as
//! interstate edges with conditions: a guard state whose edges test the
//! loop's condition and its negation, a back edge carrying the update,
//! and branches that meet again at a later state. DaCe's Fortran frontend
//! writes every program so (its default), and so did DaCe before 1.0.
//! The IR's control flow is structured, so such a region is rewritten,
//! in DaCe's own JSON, into the `LoopRegion`s and `ConditionalBlock`s DaCe
//! 2.0 writes for the same program, which the import then reads as it
//! reads DaCe's explicit control flow (conditions reading data included).
//!
//! The rewrite follows the graph's dominators (petgraph's): an edge into a
//! block that dominates its source closes a natural loop, whose header
//! must be an empty state with one edge into the loop and one out of it,
//! testing a condition and its negation (a `while` loop); any other block
//! with several successors branches on conditions that must cover every
//! case exactly (a condition and its negation), and its branches run to
//! its immediate post-dominator, where they meet. Anything else (a jump
//! into a loop, a branch leaving a loop, conditions that may all fail,
//! which in DaCe ends the program there) is refused by name with the JSON
//! path of the block or edge. Nesting is bounded ([`MAX_DEPTH`]) before
//! anything recurses.

use super::{ImportError, code_text, err, index_of, join, start_block};
use crate::symbolic::parse_cond;
use petgraph::algo::dominators::{Dominators, simple_fast};
use petgraph::graph::{DiGraph, NodeIndex};
use sdfg_ir::quote;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Loops and branches nested deeper than this in one state machine are
/// refused: the raised regions are read recursively.
pub(super) const MAX_DEPTH: usize = 64;

/// One interstate edge.
struct CfgEdge<'v> {
    src: usize,
    dst: usize,
    /// The condition's text, `None` where it is absent or always true.
    condition: Option<&'v str>,
    /// Its assignments (DaCe's JSON object).
    assignments: Option<&'v Value>,
    /// Its index in the region's `edges`.
    index: usize,
}

/// The region's graph and what the rewrite knows of it.
struct Cfg<'v> {
    path: &'v str,
    nodes: &'v [Value],
    edges: Vec<CfgEdge<'v>>,
    /// Edges leaving each block, by index into `edges`.
    out: Vec<Vec<usize>>,
    /// The natural loop of each loop header: the blocks of its body.
    loops: BTreeMap<usize, BTreeSet<usize>>,
    /// Immediate post-dominators (`None`: the region's end).
    ipdom: Vec<Option<usize>>,
    /// Loop headers whose body is being raised, innermost last.
    open_loops: Vec<usize>,
    /// Blocks already placed.
    placed: BTreeSet<usize>,
    /// Labels of the blocks the rewrite adds.
    added: usize,
}

/// A block of a raised chain, and the assignments of the edge after it.
type Item = (Value, Option<Value>);

/// The region `v` (an SDFG, a loop's body, a branch) with its state
/// machine raised; `None` where it is a chain already (every block has
/// at most one successor and no edge tests a condition), which the import
/// reads as it is.
pub(super) fn raise(v: &Value, path: &str) -> Result<Option<Value>, ImportError> {
    let (Some(nodes), Some(edges)) = (
        v.get("nodes").and_then(Value::as_array),
        v.get("edges").and_then(Value::as_array),
    ) else {
        return Ok(None);
    };
    let mut cfg_edges = Vec::new();
    let mut out = vec![Vec::new(); nodes.len()];
    let mut has_in = BTreeSet::new();
    for (k, e) in edges.iter().enumerate() {
        let (Some(src), Some(dst)) = (
            index_of(e, "src", nodes.len()),
            index_of(e, "dst", nodes.len()),
        ) else {
            return Ok(None); // The chain reader names the bad end.
        };
        let data = &e["attributes"]["data"]["attributes"];
        let condition = match data.get("condition").filter(|c| !c.is_null()) {
            Some(c) => {
                let cpath = join(path, &format!("edges[{k}].attributes.data.condition"));
                let text = code_text(c, &cpath)?;
                match parse_cond(text) {
                    Ok(c) if c.as_bool() == Some(true) => None,
                    _ => Some(text),
                }
            }
            None => None,
        };
        out[src].push(cfg_edges.len());
        has_in.insert(dst);
        cfg_edges.push(CfgEdge {
            src,
            dst,
            condition,
            assignments: data.get("assignments"),
            index: k,
        });
    }
    if cfg_edges.iter().all(|e| e.condition.is_none()) && out.iter().all(|o| o.len() <= 1) {
        return Ok(None);
    }
    let Some(start) = start_block(v, path, nodes.len(), &has_in)? else {
        return Ok(None);
    };
    let mut cfg = Cfg {
        path,
        nodes,
        edges: cfg_edges,
        out,
        loops: BTreeMap::new(),
        ipdom: Vec::new(),
        open_loops: Vec::new(),
        placed: BTreeSet::new(),
        added: 0,
    };
    cfg.analyze(start);
    let (items, after) = cfg.chain(start, None, 0)?;
    if let Some(k) = (0..nodes.len()).find(|k| !cfg.placed.contains(k)) {
        return Err(err(
            &join(path, &format!("nodes[{k}]")),
            "a block the state machine's start does not reach",
        ));
    }
    let mut raised = v.clone();
    let (nodes, edges) = cfg.region(items, after);
    raised["nodes"] = nodes;
    raised["edges"] = edges;
    raised["start_block"] = json!(0);
    Ok(Some(raised))
}

impl<'v> Cfg<'v> {
    /// Dominators, natural loops and post-dominators.
    fn analyze(&mut self, start: usize) {
        let n = self.nodes.len();
        let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(n + 1, self.edges.len() + n);
        let ids: Vec<NodeIndex> = (0..=n).map(|_| graph.add_node(())).collect();
        for e in &self.edges {
            graph.add_edge(ids[e.src], ids[e.dst], ());
        }
        let dom = simple_fast(&graph, ids[start]);
        // A cycle entered other than through one header (irreducible
        // control flow) has no such edge; the walk then reaches one of its
        // blocks twice, which it refuses.
        for e in &self.edges {
            if dominates(&dom, ids[e.dst], ids[e.src]) {
                let body = self.natural_loop(e.dst, e.src);
                self.loops.entry(e.dst).or_default().extend(body);
            }
        }
        // Post-dominators: dominators of the reversed graph from a block
        // after every block without successors.
        let exit = ids[n];
        let mut reversed: DiGraph<(), ()> = DiGraph::with_capacity(n + 1, self.edges.len() + n);
        let rids: Vec<NodeIndex> = (0..=n).map(|_| reversed.add_node(())).collect();
        for e in &self.edges {
            reversed.add_edge(rids[e.dst], rids[e.src], ());
        }
        for k in 0..n {
            if self.out[k].is_empty() {
                reversed.add_edge(rids[n], rids[k], ());
            }
        }
        let pdom = simple_fast(&reversed, rids[n]);
        self.ipdom = (0..n)
            .map(|k| {
                pdom.immediate_dominator(rids[k])
                    .filter(|&d| d != exit)
                    .map(NodeIndex::index)
            })
            .collect();
    }

    /// The blocks of the loop closed by the edge `tail -> header`.
    fn natural_loop(&self, header: usize, tail: usize) -> BTreeSet<usize> {
        let mut body = BTreeSet::from([header, tail]);
        let mut stack = vec![tail];
        while let Some(b) = stack.pop() {
            if b == header {
                continue;
            }
            for e in self.edges.iter().filter(|e| e.dst == b) {
                if body.insert(e.src) {
                    stack.push(e.src);
                }
            }
        }
        body
    }

    fn block_path(&self, k: usize) -> String {
        join(self.path, &format!("nodes[{k}]"))
    }

    fn edge_path(&self, e: usize) -> String {
        join(self.path, &format!("edges[{}]", self.edges[e].index))
    }

    /// The blocks from `entry` up to `stop` (the block where the enclosing
    /// construct's blocks meet, or its loop's header), raised; with the
    /// assignments of the edge into `stop`.
    fn chain(
        &mut self,
        entry: usize,
        stop: Option<usize>,
        depth: usize,
    ) -> Result<(Vec<Item>, Option<Value>), ImportError> {
        if depth > MAX_DEPTH {
            return Err(err(
                &self.block_path(entry),
                format!(
                    "loops and branches of a state machine nested deeper than {MAX_DEPTH} levels"
                ),
            ));
        }
        let mut items: Vec<Item> = Vec::new();
        let mut after: Option<Value> = None;
        let mut at = Some(entry);
        while let Some(k) = at {
            if Some(k) == stop {
                break;
            }
            if !self.placed.insert(k) {
                return Err(err(
                    &self.block_path(k),
                    "a block reached again outside a loop (unstructured control flow): the IR's regions are chains of loops and branches",
                ));
            }
            if let Some(prev) = items.last_mut() {
                prev.1 = after.take();
            } else if let Some(a) = after.take() {
                items.push((self.empty_state(), Some(a)));
            }
            if self.loops.contains_key(&k) && !self.open_loops.contains(&k) {
                let (block, exit) = self.while_loop(k, depth)?;
                items.push((block, None));
                after = self.edges[exit].assignments.cloned();
                at = Some(self.edges[exit].dst);
                continue;
            }
            items.push((self.nodes[k].clone(), None));
            let outs = self.out[k].clone();
            match outs.as_slice() {
                [] => at = None,
                [e] if self.edges[*e].condition.is_none() => {
                    after = self.edges[*e].assignments.cloned();
                    at = Some(self.edges[*e].dst);
                }
                _ => {
                    let join = self.ipdom[k];
                    // The branches meet inside the innermost loop, or at
                    // its header.
                    let inside = |j: usize, h: usize| j == h || self.loops[&h].contains(&j);
                    if let Some(&h) = self.open_loops.last()
                        && !join.is_some_and(|j| inside(j, h))
                    {
                        return Err(err(
                            &self.block_path(k),
                            "a branch of a state machine leaves the loop around it (a `break`): outside the supported subset",
                        ));
                    }
                    let block = self.conditional(k, &outs, join, depth)?;
                    items.push((block, None));
                    at = join;
                }
            }
        }
        Ok((items, after))
    }

    /// The loop whose header is `header`, as a `LoopRegion`, and the edge
    /// leaving it.
    fn while_loop(&mut self, header: usize, depth: usize) -> Result<(Value, usize), ImportError> {
        let body = self.loops[&header].clone();
        let node = &self.nodes[header];
        let empty = node.get("type").and_then(Value::as_str) == Some("SDFGState")
            && node
                .get("nodes")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let outs = self.out[header].clone();
        let (inside, outside): (Vec<usize>, Vec<usize>) = outs
            .iter()
            .partition(|&&e| body.contains(&self.edges[e].dst));
        let ([into], [exit]) = (inside.as_slice(), outside.as_slice()) else {
            return Err(err(
                &self.block_path(header),
                "a loop of interstate edges whose header does not have one edge into the loop and one out of it: outside the supported subset",
            ));
        };
        let (into, exit) = (*into, *exit);
        if !empty {
            return Err(err(
                &self.block_path(header),
                "a loop of interstate edges whose header state does work: the IR's `while` loop tests its condition before its body",
            ));
        }
        let condition = self.edges[into].condition.unwrap_or("1");
        if !complementary(condition, self.edges[exit].condition) {
            return Err(err(
                &self.edge_path(exit),
                format!(
                    "the edge leaving the loop does not test the negation of the loop's condition {}",
                    quote(condition)
                ),
            ));
        }
        self.open_loops.push(header);
        let mut items = Vec::new();
        if let Some(a) = self.edges[into].assignments.cloned() {
            items.push((self.empty_state(), Some(a)));
        }
        let (rest, update) = self.chain(self.edges[into].dst, Some(header), depth + 1)?;
        self.open_loops.pop();
        items.extend(rest);
        let (nodes, edges) = self.region(items, update);
        let label = self.label(&format!("while_{}", node_label(node)));
        let block = json!({
            "type": "LoopRegion",
            "label": label,
            "attributes": {
                "label": label,
                "loop_condition": {"string_data": condition, "language": "Python"},
            },
            "nodes": nodes,
            "edges": edges,
            "start_block": 0,
        });
        Ok((block, exit))
    }

    /// The branches leaving `k` through `outs`, to `join`, as a
    /// `ConditionalBlock`.
    fn conditional(
        &mut self,
        k: usize,
        outs: &[usize],
        join: Option<usize>,
        depth: usize,
    ) -> Result<Value, ImportError> {
        if let [only] = outs {
            return Err(err(
                &self.edge_path(*only),
                format!(
                    "the only interstate edge leaving a block has the condition {}: where it does not hold, DaCe ends the program there, which the IR's regions do not",
                    quote(self.edges[*only].condition.unwrap_or("1"))
                ),
            ));
        }
        let [first, second] = outs else {
            return Err(err(
                &self.block_path(k),
                format!(
                    "a block with {} interstate edges leaving it: state machines are read where a block branches on a condition and its negation",
                    outs.len()
                ),
            ));
        };
        let condition = self.edges[*first].condition.ok_or_else(|| {
            err(
                &self.edge_path(*first),
                "an edge without a condition beside another leaving the same block",
            )
        })?;
        if !complementary(condition, self.edges[*second].condition) {
            return Err(err(
                &self.edge_path(*second),
                format!(
                    "the branches of a state machine do not cover every case ({} and {}): where no edge's condition holds, DaCe ends the program",
                    quote(condition),
                    self.edges[*second]
                        .condition
                        .map_or("no condition".to_owned(), |c| quote(c).to_string())
                ),
            ));
        }
        let mut branches = Vec::new();
        for (e, cond) in [
            (
                *first,
                json!({"string_data": condition, "language": "Python"}),
            ),
            (*second, Value::Null),
        ] {
            let mut items = Vec::new();
            if let Some(a) = self.edges[e].assignments.cloned() {
                items.push((self.empty_state(), Some(a)));
            }
            let (rest, trailing) = if Some(self.edges[e].dst) == join {
                (Vec::new(), None)
            } else {
                self.chain(self.edges[e].dst, join, depth + 1)?
            };
            items.extend(rest);
            let (nodes, edges) = self.region(items, trailing);
            let label = self.label("branch");
            branches.push(json!([cond, {
                "type": "ControlFlowRegion",
                "label": label,
                "attributes": {"label": label},
                "nodes": nodes,
                "edges": edges,
                "start_block": 0,
            }]));
        }
        let label = self.label(&format!("if_{}", node_label(&self.nodes[k])));
        Ok(json!({
            "type": "ConditionalBlock",
            "label": label,
            "attributes": {"label": label},
            "branches": branches,
        }))
    }

    /// The JSON `nodes` and `edges` of a chain of blocks, with `trailing`
    /// assignments after the last (on an edge into an added empty state).
    fn region(&mut self, mut items: Vec<Item>, trailing: Option<Value>) -> (Value, Value) {
        if let Some(a) = trailing {
            match items.last_mut() {
                Some(last) => last.1 = Some(a),
                None => items.push((self.empty_state(), Some(a))),
            }
        }
        // Assignments after the last block go on an edge into an empty one.
        if items.last().is_some_and(|l| l.1.is_some()) {
            items.push((self.empty_state(), None));
        }
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        let count = items.len();
        for (k, (block, assignments)) in items.into_iter().enumerate() {
            nodes.push(block);
            if k + 1 < count {
                let mut attributes = Map::new();
                if let Some(a) = assignments {
                    attributes.insert("assignments".into(), a);
                }
                edges.push(json!({
                    "type": "Edge",
                    "src": k.to_string(),
                    "dst": (k + 1).to_string(),
                    "attributes": {"data": {"type": "InterstateEdge", "attributes": attributes}},
                }));
            }
        }
        (Value::Array(nodes), Value::Array(edges))
    }

    fn empty_state(&mut self) -> Value {
        let label = self.label("raised");
        json!({"type": "SDFGState", "label": label, "attributes": {}, "nodes": [], "edges": []})
    }

    fn label(&mut self, base: &str) -> String {
        self.added += 1;
        format!("{base}_{}", self.added)
    }
}

/// Whether `b` dominates `a`.
fn dominates(dom: &Dominators<NodeIndex>, b: NodeIndex, a: NodeIndex) -> bool {
    dom.dominators(a).is_some_and(|mut d| d.any(|x| x == b))
}

fn node_label(node: &Value) -> &str {
    node.get("label").and_then(Value::as_str).unwrap_or("block")
}

/// Whether `other` holds exactly where `condition` does not: its negation
/// in the symbolic layer's canonical form, or written as `not (...)`.
fn complementary(condition: &str, other: Option<&str>) -> bool {
    let Some(other) = other else {
        return false;
    };
    if let (Ok(a), Ok(b)) = (parse_cond(condition), parse_cond(other))
        && a.not() == b
    {
        return true;
    }
    // Spaces and enclosing parentheses aside, one is `not` of the other.
    let squeeze = |s: &str| unwrap(&s.chars().filter(|c| !c.is_whitespace()).collect::<String>());
    let (c, o) = (squeeze(condition), squeeze(other));
    let negated = |x: &str, y: &str| {
        y.strip_prefix("not")
            .is_some_and(|rest| rest.starts_with('(') && unwrap(rest) == x)
    };
    negated(&c, &o) || negated(&o, &c)
}

/// `s` without the parentheses that enclose all of it.
fn unwrap(s: &str) -> String {
    let mut s = s;
    while s.starts_with('(') && s.ends_with(')') && encloses(s) {
        s = &s[1..s.len() - 1];
    }
    s.to_owned()
}

/// Whether the parenthesis `s` opens with closes at its end.
fn encloses(s: &str) -> bool {
    let mut depth = 0usize;
    for (k, ch) in s.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1 == s.len();
                }
            }
            _ => {}
        }
    }
    false
}
