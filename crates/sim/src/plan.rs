//! Execution plans: states compiled once into steps the interpreter runs.
//!
//! A plan resolves every name to an index (symbols to slots, containers to
//! binding indices), every symbolic index to an [`IntExpr`] that evaluates
//! without allocation, and every tasklet to compiled [`Code`]. The dataflow
//! graph is flattened into a tree of [`Step`]s in topological order, one
//! subtree per map scope, so executing a map iteration walks a short vector.

use crate::tasklet::{self, Code};
use sdfg_ir::code::TypeError;
use sdfg_ir::symbolic::Atom;
use sdfg_ir::{
    LibraryOp, Memlet, Node, NodeId, Schedule, Sdfg, State, Subset, SymExpr, VIEW_CONNECTOR, Wcr,
};
use std::collections::BTreeMap;

/// Names of one SDFG resolved to indices.
#[derive(Debug)]
pub(crate) struct SdfgInfo {
    /// Symbol (and map parameter) -> slot.
    pub slots: BTreeMap<String, usize>,
    /// Container -> binding index.
    pub containers: BTreeMap<String, usize>,
    /// Binding index -> container name.
    pub container_names: Vec<String>,
}

impl SdfgInfo {
    pub(crate) fn new(sdfg: &Sdfg) -> SdfgInfo {
        let mut slots = BTreeMap::new();
        for name in sdfg.symbols.keys() {
            let n = slots.len();
            slots.insert(name.clone(), n);
        }
        for (_, state) in sdfg.states() {
            for (_, node) in state.nodes() {
                if let Node::MapEntry(m) = node {
                    for p in &m.map.params {
                        let n = slots.len();
                        slots.entry(p.clone()).or_insert(n);
                    }
                }
            }
        }
        let container_names: Vec<String> = sdfg.containers.keys().cloned().collect();
        let containers = container_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        SdfgInfo {
            slots,
            containers,
            container_names,
        }
    }
}

/// A symbolic integer compiled against symbol slots.
#[derive(Clone, Debug)]
pub(crate) enum IntExpr {
    Const(i64),
    Slot(usize),
    /// `constant + sum(coeff * slot)`.
    Affine(i64, Box<[(usize, i64)]>),
    /// Anything else (division, min/max, reads): evaluated by name.
    General(SymExpr),
}

impl IntExpr {
    pub(crate) fn compile(e: &SymExpr, info: &SdfgInfo) -> IntExpr {
        if let Some(c) = e.as_int() {
            return IntExpr::Const(c);
        }
        let mut terms = Vec::new();
        for t in e.terms() {
            match t.factors() {
                [(Atom::Symbol(name), 1)] => match info.slots.get(&**name) {
                    Some(&slot) => terms.push((slot, t.coeff())),
                    None => return IntExpr::General(e.clone()),
                },
                _ => return IntExpr::General(e.clone()),
            }
        }
        match (e.constant_term(), terms.as_slice()) {
            (0, [(slot, 1)]) => IntExpr::Slot(*slot),
            _ => IntExpr::Affine(e.constant_term(), terms.into_boxed_slice()),
        }
    }
}

/// One range per dimension: begin, end (inclusive), step.
pub(crate) type SubsetPlan = Vec<[IntExpr; 3]>;

pub(crate) fn compile_subset(s: &Subset, info: &SdfgInfo) -> SubsetPlan {
    s.ranges
        .iter()
        .map(|r| {
            [
                IntExpr::compile(&r.begin, info),
                IntExpr::compile(&r.end, info),
                IntExpr::compile(&r.step, info),
            ]
        })
        .collect()
}

/// A scalar access: the element at the subset's begin.
#[derive(Debug)]
pub(crate) struct Access {
    pub container: usize,
    pub index: Vec<IntExpr>,
}

/// A pointer connector: the region it may index.
#[derive(Debug)]
pub(crate) struct PtrPlan {
    pub container: usize,
    pub subset: SubsetPlan,
    pub wcr: Option<Wcr>,
}

/// Where a tasklet output is written, and how conflicts combine.
pub(crate) type Target = (Access, Option<Wcr>);

pub(crate) struct TaskletStep {
    pub label: String,
    pub code: Code,
    /// (value slot, access).
    pub inputs: Vec<(usize, Access)>,
    /// (value slot, targets with their write-conflict resolution).
    pub outputs: Vec<(usize, Vec<Target>)>,
    pub ptrs: Vec<PtrPlan>,
}

pub(crate) struct MapStep<'s> {
    pub label: String,
    pub params: Vec<usize>,
    pub ranges: Vec<[IntExpr; 3]>,
    pub schedule: Schedule,
    pub body: Vec<Step<'s>>,
    /// Host scalars a kernel (a device map at host level) reads at its
    /// entry: it takes them by value when it launches.
    pub by_value: Vec<usize>,
}

/// An operand of a library node or callback: container and region.
#[derive(Debug)]
pub(crate) struct Operand {
    pub conn: String,
    pub container: usize,
    pub subset: SubsetPlan,
    pub wcr: Option<Wcr>,
}

pub(crate) struct CopyStep {
    pub label: String,
    pub src: usize,
    pub src_subset: SubsetPlan,
    pub dst: usize,
    pub dst_subset: SubsetPlan,
    pub wcr: Option<Wcr>,
}

pub(crate) struct ViewStep {
    pub view: usize,
    pub origin: usize,
    pub subset: SubsetPlan,
}

pub(crate) struct NestedStep<'s> {
    pub label: String,
    pub sdfg: &'s Sdfg,
    /// Inner symbol -> value in the outer scope.
    pub mapping: Vec<(String, IntExpr)>,
    /// Inner container <- outer operand.
    pub bindings: Vec<(String, Operand)>,
}

pub(crate) enum Step<'s> {
    Copy(CopyStep),
    View(ViewStep),
    Tasklet(Box<TaskletStep>),
    Map(MapStep<'s>),
    Library {
        label: String,
        op: &'s LibraryOp,
        schedule: Schedule,
        inputs: Vec<Operand>,
        outputs: Vec<Operand>,
    },
    Nested(NestedStep<'s>),
    Callback {
        label: String,
        callee: String,
        inputs: Vec<Operand>,
        outputs: Vec<Operand>,
    },
}

/// A compiled state: its steps and the containers it touches (allocated on entry).
pub(crate) struct StatePlan<'s> {
    pub steps: Vec<Step<'s>>,
    pub containers: Vec<usize>,
}

/// Why a state could not be compiled.
#[derive(Debug)]
pub(crate) enum PlanError {
    /// The graph is not a valid dataflow graph (the SDFG was not validated).
    Invalid(String),
    /// Tasklet code that does not type-check.
    Type { node: String, error: TypeError },
}

struct Planner<'s, 'i> {
    sdfg: &'s Sdfg,
    state: &'s State,
    info: &'i SdfgInfo,
    scopes: sdfg_ir::ScopeTree,
    order: Vec<NodeId>,
    used: std::collections::BTreeSet<usize>,
}

pub(crate) fn plan_state<'s>(
    sdfg: &'s Sdfg,
    state: &'s State,
    info: &SdfgInfo,
) -> Result<StatePlan<'s>, PlanError> {
    let scopes = state
        .scope_tree()
        .map_err(|e| PlanError::Invalid(e.to_string()))?;
    let order = state
        .topological_order()
        .ok_or_else(|| PlanError::Invalid("cycle".to_owned()))?;
    let mut p = Planner {
        sdfg,
        state,
        info,
        scopes,
        order,
        used: Default::default(),
    };
    let steps = p.scope(None)?;
    Ok(StatePlan {
        steps,
        containers: p.used.into_iter().collect(),
    })
}

impl<'s> Planner<'s, '_> {
    fn cid(&mut self, name: &str) -> Result<usize, PlanError> {
        let id = *self
            .info
            .containers
            .get(name)
            .ok_or_else(|| PlanError::Invalid(format!("unknown container `{name}`")))?;
        self.used.insert(id);
        Ok(id)
    }

    fn desc(&self, name: &str) -> Result<&'s sdfg_ir::DataDesc, PlanError> {
        self.sdfg
            .containers
            .get(name)
            .ok_or_else(|| PlanError::Invalid(format!("unknown container `{name}`")))
    }

    fn operand(&mut self, conn: &str, m: &Memlet) -> Result<Operand, PlanError> {
        Ok(Operand {
            conn: conn.to_owned(),
            container: self.cid(&m.data)?,
            subset: compile_subset(&m.subset, self.info),
            wcr: m.wcr,
        })
    }

    fn access(&mut self, m: &Memlet) -> Result<Access, PlanError> {
        Ok(Access {
            container: self.cid(&m.data)?,
            index: m
                .subset
                .ranges
                .iter()
                .map(|r| IntExpr::compile(&r.begin, self.info))
                .collect(),
        })
    }

    /// Steps of the nodes directly in `scope`, in topological order.
    fn scope(&mut self, scope: Option<NodeId>) -> Result<Vec<Step<'s>>, PlanError> {
        let members: Vec<NodeId> = self
            .order
            .iter()
            .copied()
            .filter(|&n| self.scopes.parent(n) == scope && Some(n) != scope)
            .collect();
        let mut steps = Vec::new();
        // Views are bound first: writers into a view come before the view's
        // node in topological order.
        for &n in &members {
            if let Node::Access(a) = &self.state.graph[n]
                && self.desc(&a.data)?.is_view()
                && let Some(step) = self.view_binding(n, &a.data)?
            {
                steps.push(step);
            }
        }
        for n in members {
            let node = &self.state.graph[n];
            match node {
                Node::Access(a) => self.access_node(n, &a.data, &mut steps)?,
                Node::MapEntry(e) => {
                    let body = self.scope(Some(n))?;
                    let mut by_value = Vec::new();
                    if scope.is_none() && e.map.schedule.is_device() {
                        for (_, src, _) in self.state.in_edges(n) {
                            if let Some(Node::Access(a)) = self.state.node(src) {
                                let d = self.desc(&a.data)?;
                                if d.is_scalar() && d.storage.side() != Some(sdfg_ir::Side::Device)
                                {
                                    by_value.push(self.cid(&a.data)?);
                                }
                            }
                        }
                    }
                    steps.push(Step::Map(MapStep {
                        label: e.map.label.clone(),
                        params: e
                            .map
                            .params
                            .iter()
                            .map(|p| {
                                self.info.slots.get(p).copied().ok_or_else(|| {
                                    PlanError::Invalid(format!("map parameter `{p}` has no slot"))
                                })
                            })
                            .collect::<Result<_, _>>()?,
                        ranges: compile_subset(&Subset::new(e.map.ranges.clone()), self.info),
                        schedule: e.map.schedule,
                        body,
                        by_value,
                    }));
                }
                Node::MapExit(_) => {}
                Node::Tasklet(t) => steps.push(self.tasklet(n, t)?),
                Node::Library(l) => {
                    let (inputs, outputs) = self.operands(n)?;
                    steps.push(Step::Library {
                        label: l.label.clone(),
                        op: &l.op,
                        schedule: l.schedule,
                        inputs,
                        outputs,
                    });
                }
                Node::Callback(c) => {
                    let (mut inputs, mut outputs) = self.operands(n)?;
                    // A callback takes its arguments and returns its results
                    // in the order its connectors are declared (a function's
                    // parameter order), not sorted by name.
                    let position = |conns: &[sdfg_ir::Connector], name: &str| {
                        conns.iter().position(|c| c.name == name)
                    };
                    inputs.sort_by_key(|o| position(&c.inputs, &o.conn));
                    outputs.sort_by_key(|o| position(&c.outputs, &o.conn));
                    steps.push(Step::Callback {
                        label: c.label.clone(),
                        callee: c.callee.clone(),
                        inputs,
                        outputs,
                    });
                }
                Node::NestedSdfg(ns) => {
                    let (inputs, outputs) = self.operands(n)?;
                    let mapping = ns
                        .symbol_mapping
                        .iter()
                        .map(|(k, v)| (k.clone(), IntExpr::compile(v, self.info)))
                        .collect();
                    let bindings = inputs
                        .into_iter()
                        .chain(outputs)
                        .map(|o| (o.conn.clone(), o))
                        .collect();
                    steps.push(Step::Nested(NestedStep {
                        label: ns.label.clone(),
                        sdfg: &ns.sdfg,
                        mapping,
                        bindings,
                    }));
                }
            }
        }
        Ok(steps)
    }

    fn view_binding(&mut self, n: NodeId, view: &str) -> Result<Option<Step<'s>>, PlanError> {
        let edge = self
            .state
            .in_edges(n)
            .find(|(_, _, e)| e.dst_conn.as_deref() == Some(VIEW_CONNECTOR))
            .or_else(|| {
                self.state
                    .out_edges(n)
                    .find(|(_, _, e)| e.src_conn.as_deref() == Some(VIEW_CONNECTOR))
            });
        let Some((_, _, e)) = edge else {
            return Ok(None);
        };
        let Some(m) = &e.memlet else { return Ok(None) };
        Ok(Some(Step::View(ViewStep {
            view: self.cid(view)?,
            origin: self.cid(&m.data)?,
            subset: compile_subset(&m.subset, self.info),
        })))
    }

    /// Copies into an access node (from another access node or through a
    /// scope boundary) and out of it into a scope boundary.
    fn access_node(
        &mut self,
        n: NodeId,
        data: &str,
        steps: &mut Vec<Step<'s>>,
    ) -> Result<(), PlanError> {
        self.cid(data)?;
        let incoming: Vec<_> = self
            .state
            .in_edges(n)
            .map(|(_, s, e)| (s, e.clone()))
            .collect();
        for (src, e) in incoming {
            if e.dst_conn.as_deref() == Some(VIEW_CONNECTOR) {
                continue;
            }
            let Some(m) = &e.memlet else { continue };
            let src_node = &self.state.graph[src];
            let from = match src_node {
                Node::Access(a) if e.src_conn.as_deref() != Some(VIEW_CONNECTOR) => {
                    Some(a.data.clone())
                }
                Node::MapEntry(_) | Node::MapExit(_) if m.data != data => Some(m.data.clone()),
                _ => None,
            };
            if let Some(from) = from {
                steps.push(self.copy(&from, data, m, src_node.label())?);
            }
        }
        let outgoing: Vec<_> = self
            .state
            .out_edges(n)
            .map(|(_, d, e)| (d, e.clone()))
            .collect();
        for (dst, e) in outgoing {
            if e.src_conn.as_deref() == Some(VIEW_CONNECTOR) {
                continue;
            }
            let Some(m) = &e.memlet else { continue };
            if matches!(self.state.graph[dst], Node::MapExit(_) | Node::MapEntry(_))
                && m.data != data
            {
                let label = self.state.graph[dst].label().to_owned();
                steps.push(self.copy(data, &m.data, m, &label)?);
            }
        }
        Ok(())
    }

    /// A copy from `from` to `to`; the memlet's subset is in the coordinates
    /// of `m.data` (one of the two), its other subset in the other's, which
    /// defaults to the same subset when the ranks agree and to the whole
    /// container otherwise.
    fn copy(
        &mut self,
        from: &str,
        to: &str,
        m: &Memlet,
        label: &str,
    ) -> Result<Step<'s>, PlanError> {
        let other_name = if m.data == from { to } else { from };
        let (src_subset, dst_subset) = m.copy_subsets(from, &self.desc(other_name)?.shape());
        Ok(Step::Copy(CopyStep {
            label: label.to_owned(),
            src: self.cid(from)?,
            src_subset: compile_subset(&src_subset, self.info),
            dst: self.cid(to)?,
            dst_subset: compile_subset(&dst_subset, self.info),
            wcr: m.wcr,
        }))
    }

    /// Operands of a code node by connector, inputs and outputs.
    fn operands(&mut self, n: NodeId) -> Result<(Vec<Operand>, Vec<Operand>), PlanError> {
        let mut inputs = Vec::new();
        for (_, _, e) in self.state.in_edges(n) {
            if let (Some(c), Some(m)) = (&e.dst_conn, &e.memlet) {
                inputs.push(self.operand(c, m)?);
            }
        }
        let mut outputs = Vec::new();
        for (_, _, e) in self.state.out_edges(n) {
            if let (Some(c), Some(m)) = (&e.src_conn, &e.memlet) {
                outputs.push(self.operand(c, m)?);
            }
        }
        inputs.sort_by(|a, b| a.conn.cmp(&b.conn));
        outputs.sort_by(|a, b| a.conn.cmp(&b.conn));
        Ok((inputs, outputs))
    }

    fn tasklet(&mut self, n: NodeId, t: &sdfg_ir::Tasklet) -> Result<Step<'s>, PlanError> {
        let mut values = Vec::new();
        let mut pointers = Vec::new();
        let mut ptrs = Vec::new();
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let in_memlet = |c: &str| {
            self.state
                .in_edges(n)
                .find(|(_, _, e)| e.dst_conn.as_deref() == Some(c))
                .and_then(|(_, _, e)| e.memlet.clone())
        };
        let out_memlets = |c: &str| -> Vec<Memlet> {
            self.state
                .out_edges(n)
                .filter(|(_, _, e)| e.src_conn.as_deref() == Some(c))
                .filter_map(|(_, _, e)| e.memlet.clone())
                .collect()
        };
        let missing =
            |c: &str| PlanError::Invalid(format!("connector `{c}` of `{}` has no memlet", t.label));
        for c in &t.inputs {
            let m = in_memlet(&c.name).ok_or_else(|| missing(&c.name))?;
            if c.pointer {
                pointers.push((
                    c.name.clone(),
                    c.dtype,
                    sdfg_ir::validate::squeezed_rank(&m.subset),
                    false,
                ));
                ptrs.push(PtrPlan {
                    container: self.cid(&m.data)?,
                    subset: compile_subset(&m.subset, self.info),
                    wcr: None,
                });
            } else {
                inputs.push((values.len(), self.access(&m)?));
                values.push((c.name.clone(), c.dtype, false));
            }
        }
        for c in &t.outputs {
            let ms = out_memlets(&c.name);
            let first = ms.first().cloned().ok_or_else(|| missing(&c.name))?;
            if c.pointer {
                pointers.push((
                    c.name.clone(),
                    c.dtype,
                    sdfg_ir::validate::squeezed_rank(&first.subset),
                    true,
                ));
                ptrs.push(PtrPlan {
                    container: self.cid(&first.data)?,
                    subset: compile_subset(&first.subset, self.info),
                    wcr: first.wcr,
                });
            } else {
                let targets = ms
                    .iter()
                    .map(|m| Ok((self.access(m)?, m.wcr)))
                    .collect::<Result<Vec<_>, PlanError>>()?;
                outputs.push((values.len(), targets));
                values.push((c.name.clone(), c.dtype, true));
            }
        }
        let code =
            tasklet::compile(&t.body, &values, &pointers, &self.info.slots).map_err(|error| {
                PlanError::Type {
                    node: t.label.clone(),
                    error,
                }
            })?;
        Ok(Step::Tasklet(Box::new(TaskletStep {
            label: t.label.clone(),
            code,
            inputs,
            outputs,
            ptrs,
        })))
    }
}
