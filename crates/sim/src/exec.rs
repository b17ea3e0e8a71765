//! The interpreter: runs compiled plans over separate host and device memory.

use crate::arith;
use crate::error::{Location, SimError};
use crate::library::{self, Tensor};
use crate::memory::{AllocId, Memory, RaceLog};
use crate::plan::{
    self, Access, CopyStep, IntExpr, MapStep, NestedStep, Operand, PlanError, SdfgInfo, StatePlan,
    Step, SubsetPlan, TaskletStep, ViewStep,
};
use crate::tasklet::{CodeFault, Frame, Ptr};
use crate::value::{Elements, Value};
use crate::{ArrayValue, Callbacks};
use sdfg_ir::symbolic::{EvalError, SymEnv};
use sdfg_ir::{
    BlockKind, ConditionalBlock, ControlBlock, DType, LoopBlock, Region, Schedule, Sdfg, Side,
    State, Storage, SymCond, SymExpr, Transition,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Where a container's elements are: an allocation, and how indices map into it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Binding {
    pub alloc: Option<AllocId>,
    pub offset: i64,
    pub strides: Vec<i64>,
    pub shape: Vec<i64>,
}

/// One activation of an SDFG: its symbol values and container bindings.
pub(crate) struct Env<'s> {
    pub sdfg: &'s Sdfg,
    pub info: Rc<SdfgInfo>,
    pub path: String,
    pub syms: Vec<i64>,
    pub defined: Vec<bool>,
    pub bindings: Vec<Binding>,
    /// Where this SDFG runs (the device for one nested in a kernel).
    pub side: Side,
}

/// An address affine in a map's parameters: `base + sum(coeffs[d] * p[d])`.
struct Linear {
    alloc: AllocId,
    base: i64,
    coeffs: Vec<i64>,
}

impl Linear {
    #[inline]
    fn at(&self, point: &[i64]) -> i64 {
        self.coeffs
            .iter()
            .zip(point)
            .fold(self.base, |acc, (k, p)| acc + k * p)
    }
}

/// How a region was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

/// The state of one simulated run.
pub(crate) struct Machine<'s, 'c> {
    pub mem: Memory,
    callbacks: &'c Callbacks,
    plans: HashMap<usize, Rc<StatePlan<'s>>>,
    infos: HashMap<usize, Rc<SdfgInfo>>,
    scratch_vals: Vec<Value>,
    scratch_ptrs: Vec<Ptr>,
    /// Whether kernel launches are checked for data races.
    pub check_races: bool,
    /// Per host scalar a kernel takes by value: the register holding the
    /// value of its latest launch (reused, so a loop of launches allocates
    /// once).
    by_value: HashMap<AllocId, AllocId>,
    /// Steps taken: states run, loop iterations, map points.
    steps: u64,
    /// The most steps the run may take ([`crate::Simulator::step_limit`]).
    pub step_limit: Option<u64>,
}

/// Evaluates symbolic expressions of one activation, reading data for
/// interstate code; a fault during a read is kept to be reported.
struct EvalEnv<'a, 's> {
    env: &'a Env<'s>,
    mem: &'a Memory,
    fault: RefCell<Option<SimError>>,
    at: &'a Location,
}

impl SymEnv for EvalEnv<'_, '_> {
    fn symbol(&self, name: &str) -> Option<i64> {
        let slot = *self.env.info.slots.get(name)?;
        self.env.defined[slot].then(|| self.env.syms[slot])
    }

    fn read(&self, data: &str, index: &[i64]) -> Option<i64> {
        let result = (|| {
            let id = *self
                .env
                .info
                .containers
                .get(data)
                .ok_or_else(|| SimError::Unsupported {
                    at: self.at.clone(),
                    what: format!("reading unknown container `{data}`"),
                })?;
            let b = &self.env.bindings[id];
            let alloc = b.alloc.ok_or_else(|| SimError::Uninitialized {
                container: data.to_owned(),
                index: 0,
                at: self.at.clone(),
            })?;
            let mut addr = b.offset;
            for (i, s) in index.iter().zip(&b.strides) {
                addr += i * s;
            }
            let v = read_element(self.mem, alloc, addr, self.env.side, data, &|| {
                self.at.clone()
            })?;
            Ok(v.to_i64())
        })();
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                self.fault.borrow_mut().get_or_insert(e);
                None
            }
        }
    }
}

/// Advances a point of the box `bounds` (first, last, step per dimension)
/// to the next one in row-major order: the innermost coordinate first,
/// carrying outward. `false` after the last point (every coordinate is
/// back at its first value).
#[inline]
fn next_point(point: &mut [i64], bounds: &[(i64, i64, i64)]) -> bool {
    for (c, &(first, last, step)) in point.iter_mut().zip(bounds).rev() {
        // A step past `i64::MAX` (a range ending there) leaves the range.
        if let Some(next) = c.checked_add(step)
            && ((step > 0 && next <= last) || (step < 0 && next >= last))
        {
            *c = next;
            return true;
        }
        *c = first;
    }
    false
}

/// Reads one element with the checks a GPU (and a sanitizer) would make,
/// race checking included.
fn read_element(
    mem: &Memory,
    alloc: AllocId,
    addr: i64,
    side: Side,
    name: &str,
    at: &dyn Fn() -> Location,
) -> Result<Value, SimError> {
    let v = read_unlogged(mem, alloc, addr, side, name, at)?;
    if let Some(kind) = usize::try_from(addr)
        .ok()
        .and_then(|i| mem.note_access(alloc, i, None))
    {
        return Err(SimError::Race {
            container: name.to_owned(),
            index: addr,
            kind,
            at: at(),
        });
    }
    Ok(v)
}

/// [`read_element`] without race checking: the old value a combining write
/// reads is part of the write.
fn read_unlogged(
    mem: &Memory,
    alloc: AllocId,
    addr: i64,
    side: Side,
    name: &str,
    at: &dyn Fn() -> Location,
) -> Result<Value, SimError> {
    let a = &mem.allocations[alloc];
    if !a.register && !mem.reaches(a, side) {
        return Err(SimError::Fault {
            side,
            container: name.to_owned(),
            space: a.space,
            at: at(),
        });
    }
    let i = usize::try_from(addr)
        .ok()
        .filter(|&i| i < a.elements.len())
        .ok_or_else(|| SimError::OutOfBounds {
            container: name.to_owned(),
            index: addr,
            len: a.elements.len(),
            at: at(),
        })?;
    if let Some(init) = &a.init
        && !init[i]
    {
        return Err(SimError::Uninitialized {
            container: name.to_owned(),
            index: addr,
            at: at(),
        });
    }
    a.elements.get(i).ok_or_else(|| SimError::OutOfBounds {
        container: name.to_owned(),
        index: addr,
        len: a.elements.len(),
        at: at(),
    })
}

/// Writes one element (combining under `wcr`) with the same checks.
#[allow(clippy::too_many_arguments)]
fn write_element(
    mem: &mut Memory,
    alloc: AllocId,
    addr: i64,
    value: Value,
    wcr: Option<sdfg_ir::Wcr>,
    side: Side,
    name: &str,
    at: &dyn Fn() -> Location,
) -> Result<(), SimError> {
    let value = match wcr {
        Some(w) => {
            let old = read_unlogged(mem, alloc, addr, side, name, at)?;
            let dtype = mem.allocations[alloc].elements.dtype();
            arith::combine(w, dtype, old, value).map_err(|_| SimError::Type {
                at: at(),
                expected: dtype,
            })?
        }
        None => value,
    };
    if !mem.allocations[alloc].register && !mem.reaches(&mem.allocations[alloc], side) {
        return Err(SimError::Fault {
            side,
            container: name.to_owned(),
            space: mem.allocations[alloc].space,
            at: at(),
        });
    }
    let a = &mut mem.allocations[alloc];
    let len = a.elements.len();
    let i = usize::try_from(addr)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(|| SimError::OutOfBounds {
            container: name.to_owned(),
            index: addr,
            len,
            at: at(),
        })?;
    a.elements.set(i, value);
    if let Some(init) = &mut a.init {
        init[i] = true;
    }
    if let Some(kind) = mem.note_access(alloc, i, Some(wcr.is_some())) {
        return Err(SimError::Race {
            container: name.to_owned(),
            index: addr,
            kind,
            at: at(),
        });
    }
    Ok(())
}

impl IntExpr {
    #[inline]
    fn eval(
        &self,
        env: &Env<'_>,
        mem: &Memory,
        at: &dyn Fn() -> Location,
    ) -> Result<i64, SimError> {
        match self {
            IntExpr::Const(c) => Ok(*c),
            IntExpr::Slot(s) => Ok(env.syms[*s]),
            IntExpr::Affine(c, terms) => terms
                .iter()
                .try_fold(*c, |acc, (s, k)| {
                    acc.checked_add(k.checked_mul(env.syms[*s])?)
                })
                .ok_or_else(|| SimError::Eval {
                    at: at(),
                    error: EvalError::Overflow {
                        expr: "an affine index".to_owned(),
                    },
                }),
            IntExpr::General(e) => eval_sym(e, env, mem, &at()),
        }
    }
}

/// Evaluates interstate or symbolic code with `f`, turning a fault raised
/// while reading data into that fault and an evaluation error into
/// [`SimError::Eval`] at `at`.
fn evaluate<T>(
    env: &Env<'_>,
    mem: &Memory,
    at: &Location,
    f: impl FnOnce(&EvalEnv<'_, '_>) -> Result<T, sdfg_ir::symbolic::EvalError>,
) -> Result<T, SimError> {
    let ev = EvalEnv {
        env,
        mem,
        fault: RefCell::new(None),
        at,
    };
    let r = f(&ev);
    if let Some(fault) = ev.fault.into_inner() {
        return Err(fault);
    }
    r.map_err(|error| SimError::Eval {
        at: at.clone(),
        error,
    })
}

fn eval_sym(e: &SymExpr, env: &Env<'_>, mem: &Memory, at: &Location) -> Result<i64, SimError> {
    evaluate(env, mem, at, |ev| e.eval(ev))
}

fn eval_cond(c: &SymCond, env: &Env<'_>, mem: &Memory, at: &Location) -> Result<bool, SimError> {
    evaluate(env, mem, at, |ev| c.eval(ev))
}

/// The side whose memory a storage kind is, for a container first used on `side`.
fn space_of(storage: Storage, side: Side) -> Side {
    storage.side().unwrap_or(side)
}

impl<'s, 'c> Machine<'s, 'c> {
    pub(crate) fn new(callbacks: &'c Callbacks, memory_limit: Option<u64>) -> Self {
        Machine {
            mem: Memory::with_limit(memory_limit),
            callbacks,
            plans: HashMap::new(),
            infos: HashMap::new(),
            scratch_vals: Vec::new(),
            scratch_ptrs: Vec::new(),
            check_races: false,
            by_value: HashMap::new(),
            steps: 0,
            step_limit: None,
        }
    }

    pub(crate) fn info(&mut self, sdfg: &Sdfg) -> Rc<SdfgInfo> {
        self.infos
            .entry(sdfg as *const Sdfg as usize)
            .or_insert_with(|| Rc::new(SdfgInfo::new(sdfg)))
            .clone()
    }

    /// A fresh activation of `sdfg` running on `side`, symbols undefined.
    pub(crate) fn env(&mut self, sdfg: &'s Sdfg, path: String, side: Side) -> Env<'s> {
        let info = self.info(sdfg);
        Env {
            sdfg,
            syms: vec![0; info.slots.len()],
            defined: vec![false; info.slots.len()],
            bindings: vec![Binding::default(); info.container_names.len()],
            info,
            path,
            side,
        }
    }

    fn at(env: &Env<'_>, block: &str, node: &str) -> Location {
        Location::new(&env.path, block, node)
    }

    /// Runs the SDFG's body.
    pub(crate) fn run_sdfg(&mut self, env: &mut Env<'s>) -> Result<(), SimError> {
        let body: &'s Region = &env.sdfg.body;
        self.run_region(env, body)?;
        Ok(())
    }

    /// Counts `n` steps against the step limit: a program that would not
    /// end (or not in reasonable time) is an error naming where it was.
    fn charge(&mut self, n: u64, at: impl FnOnce() -> Location) -> Result<(), SimError> {
        self.steps = self.steps.saturating_add(n);
        match self.step_limit {
            Some(limit) if self.steps > limit => Err(SimError::StepLimit { at: at(), limit }),
            _ => Ok(()),
        }
    }

    fn run_region(&mut self, env: &mut Env<'s>, region: &'s Region) -> Result<Flow, SimError> {
        for block in &region.blocks {
            let flow = match &block.kind {
                BlockKind::State(s) => {
                    self.run_state(env, &block.label, s)?;
                    Flow::Next
                }
                BlockKind::Loop(l) => self.run_loop(env, block, l)?,
                BlockKind::Conditional(c) => self.run_conditional(env, block, c)?,
                BlockKind::Break => Flow::Break,
                BlockKind::Continue => Flow::Continue,
                BlockKind::Return => Flow::Return,
            };
            if flow != Flow::Next {
                return Ok(flow);
            }
            self.run_transition(env, &block.label, &block.transition)?;
        }
        Ok(Flow::Next)
    }

    fn assign(
        &mut self,
        env: &mut Env<'s>,
        symbol: &str,
        value: &SymExpr,
        at: &Location,
    ) -> Result<(), SimError> {
        let v = eval_sym(value, env, &self.mem, at)?;
        let slot = *env.info.slots.get(symbol).ok_or_else(|| SimError::Eval {
            at: at.clone(),
            error: EvalError::UndefinedSymbol {
                name: symbol.to_owned(),
            },
        })?;
        env.syms[slot] = v;
        env.defined[slot] = true;
        Ok(())
    }

    fn run_transition(
        &mut self,
        env: &mut Env<'s>,
        label: &str,
        t: &Transition,
    ) -> Result<(), SimError> {
        if t.assignments.is_empty() {
            return Ok(());
        }
        let at = Self::at(env, label, "");
        for a in &t.assignments {
            self.assign(env, &a.symbol, &a.value, &at)?;
        }
        Ok(())
    }

    fn run_loop(
        &mut self,
        env: &mut Env<'s>,
        block: &'s ControlBlock,
        l: &'s LoopBlock,
    ) -> Result<Flow, SimError> {
        let at = Self::at(env, &block.label, "");
        if let (Some(v), Some(init)) = (&l.variable, &l.init) {
            self.assign(env, v, init, &at)?;
        }
        while eval_cond(&l.condition, env, &self.mem, &at)? {
            self.charge(1, || at.clone())?;
            match self.run_region(env, &l.body)? {
                Flow::Break => break,
                Flow::Return => return Ok(Flow::Return),
                Flow::Next | Flow::Continue => {}
            }
            if let (Some(v), Some(update)) = (&l.variable, &l.update) {
                self.assign(env, v, update, &at)?;
            }
        }
        Ok(Flow::Next)
    }

    fn run_conditional(
        &mut self,
        env: &mut Env<'s>,
        block: &'s ControlBlock,
        c: &'s ConditionalBlock,
    ) -> Result<Flow, SimError> {
        let at = Self::at(env, &block.label, "");
        for (cond, region) in &c.branches {
            if eval_cond(cond, env, &self.mem, &at)? {
                return self.run_region(env, region);
            }
        }
        match &c.otherwise {
            Some(region) => self.run_region(env, region),
            None => Ok(Flow::Next),
        }
    }

    fn plan(
        &mut self,
        env: &Env<'s>,
        label: &str,
        state: &'s State,
    ) -> Result<Rc<StatePlan<'s>>, SimError> {
        let key = state as *const State as usize;
        if let Some(p) = self.plans.get(&key) {
            return Ok(p.clone());
        }
        let at = Self::at(env, label, "");
        let plan = plan::plan_state(env.sdfg, state, &env.info).map_err(|e| match e {
            PlanError::Invalid(what) => SimError::Unsupported {
                at: at.clone(),
                what: format!("an invalid state ({what}); validate the SDFG first"),
            },
            PlanError::Type { node, error } => SimError::Unsupported {
                at: Location {
                    node: node.into(),
                    ..at.clone()
                },
                what: format!("ill-typed tasklet code ({error})"),
            },
        })?;
        let plan = Rc::new(plan);
        self.plans.insert(key, plan.clone());
        Ok(plan)
    }

    fn run_state(
        &mut self,
        env: &mut Env<'s>,
        label: &str,
        state: &'s State,
    ) -> Result<(), SimError> {
        self.charge(1, || Self::at(env, label, ""))?;
        let plan = self.plan(env, label, state)?;
        for &c in &plan.containers {
            self.ensure_allocated(env, c, label)?;
        }
        let side = env.side;
        self.run_steps(env, &plan.steps, label, side)
    }

    /// Allocates a transient on first use, sized with the current symbols.
    fn ensure_allocated(
        &mut self,
        env: &mut Env<'s>,
        c: usize,
        label: &str,
    ) -> Result<(), SimError> {
        let name = &env.info.container_names[c];
        let desc = &env.sdfg.containers[name];
        if desc.is_view() {
            return Ok(()); // Bound by its view edge.
        }
        if env.bindings[c].alloc.is_some() {
            // A transient whose size depends on a symbol that changed (a
            // loop-dependent size) gets a fresh allocation of the new size,
            // as a per-iteration allocation in generated code would.
            let resizable = desc.transient
                && desc
                    .free_symbols()
                    .iter()
                    .any(|s| !self.sizes_fixed(env, s));
            if !resizable {
                return Ok(());
            }
            // The shape, not only the size: (2, 1, 8) and (2, 2, 4) hold as
            // many elements but are indexed with other strides.
            let at = Self::at(env, label, name);
            let shape = desc
                .shape()
                .iter()
                .map(|e| eval_sym(e, env, &self.mem, &at))
                .collect::<Result<Vec<_>, _>>()?;
            if shape == env.bindings[c].shape {
                return Ok(());
            }
        }
        let at = Self::at(env, label, name);
        let Some(layout_total) = desc.total_elements() else {
            return Err(SimError::Unsupported {
                at,
                what: format!("a {} container (`{name}`)", desc.kind_name()),
            });
        };
        let shape = desc
            .shape()
            .iter()
            .map(|e| eval_sym(e, env, &self.mem, &at))
            .collect::<Result<Vec<_>, _>>()?;
        let (strides, offset) = match desc.layout() {
            Some(l) => (
                l.strides
                    .iter()
                    .map(|e| eval_sym(e, env, &self.mem, &at))
                    .collect::<Result<Vec<_>, _>>()?,
                eval_sym(&l.offset, env, &self.mem, &at)?,
            ),
            None => (vec![1], 0),
        };
        let total = eval_sym(&layout_total, env, &self.mem, &at)?;
        let len = reserve(&mut self.mem, name, desc, &shape, &strides, offset, total)?;
        let space = space_of(desc.storage, env.side);
        let alloc = self
            .mem
            .allocate(name, desc.dtype, len, space, desc.transient)?;
        self.mem.allocations[alloc].register = desc.storage == Storage::Register;
        self.mem.allocations[alloc].shared = desc.storage == Storage::DeviceShared;
        env.bindings[c] = Binding {
            alloc: Some(alloc),
            offset,
            strides,
            shape,
        };
        Ok(())
    }

    /// Whether a symbol keeps its value for the whole run (an argument),
    /// so containers sized by it never need reallocation.
    fn sizes_fixed(&self, env: &Env<'s>, symbol: &str) -> bool {
        env.sdfg.arguments.iter().any(|a| a == symbol)
    }

    fn run_steps(
        &mut self,
        env: &mut Env<'s>,
        steps: &[Step<'s>],
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        for step in steps {
            match step {
                Step::Tasklet(t) => self.run_tasklet(env, t, label, side)?,
                Step::Map(m) => self.run_map(env, m, label, side)?,
                Step::Copy(c) => self.run_copy(env, c, label, side)?,
                Step::View(v) => self.bind_view(env, v, label)?,
                Step::Library {
                    label: node,
                    op,
                    schedule,
                    inputs,
                    outputs,
                } => self.run_library(env, node, op, *schedule, inputs, outputs, label, side)?,
                Step::Nested(n) => self.run_nested(env, n, label, side)?,
                Step::Callback {
                    label: node,
                    callee,
                    inputs,
                    outputs,
                } => self.run_callback(env, node, callee, inputs, outputs, label, side)?,
            }
        }
        Ok(())
    }

    fn run_map(
        &mut self,
        env: &mut Env<'s>,
        m: &MapStep<'s>,
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let inner_side = if m.schedule.is_device() {
            Side::Device
        } else {
            side
        };
        let at = || Self::at(env, label, &m.label);
        let mut bounds = Vec::with_capacity(m.ranges.len());
        for [b, e, s] in &m.ranges {
            let (b, e, s) = (
                b.eval(env, &self.mem, &at)?,
                e.eval(env, &self.mem, &at)?,
                s.eval(env, &self.mem, &at)?,
            );
            if s == 0 {
                return Err(SimError::Unsupported {
                    at: at(),
                    what: "a map range with step 0".to_owned(),
                });
            }
            if (s > 0 && b > e) || (s < 0 && b < e) {
                return Ok(()); // An empty map does nothing.
            }
            bounds.push((b, e, s));
        }
        let points = bounds.iter().fold(1u64, |acc, &(b, e, s)| {
            acc.saturating_mul(((e as i128 - b as i128) / s as i128 + 1) as u64)
        });
        self.charge(points, at)?;
        // An empty map returned above: generated code does not launch it.
        let launch = m.schedule.is_launch() && side == Side::Host;
        if launch {
            self.mem.launches += 1;
        }
        // A device kernel inside device code is a map a persistent
        // kernel's threads share, between two grid-wide barriers: to the
        // race check its iterations are the threads of a launch.
        let shared = m.schedule == Schedule::DeviceKernel && side == Side::Device;
        for (&slot, &(b, _, _)) in m.params.iter().zip(&bounds) {
            env.syms[slot] = b;
            env.defined[slot] = true;
        }
        // With race checking, a launch logs its threads' accesses (one thread
        // per iteration), and nothing runs fused (the fused loop does not log).
        let checked = (launch || shared) && self.check_races;
        let outer_log = if checked {
            self.mem.race.borrow_mut().replace(RaceLog::default())
        } else {
            None
        };
        let taken = if launch {
            self.take_by_value(env, &m.by_value)
        } else {
            Vec::new()
        };
        let result = self.map_iterations(env, m, &bounds, label, inner_side);
        for (slot, alloc) in taken {
            env.bindings[slot].alloc = Some(alloc);
        }
        if checked {
            *self.mem.race.borrow_mut() = outer_log;
        }
        result
    }

    /// A launch takes the host scalars in `slots` by value: each is bound
    /// to a register holding its current value (and whether it was ever
    /// written) for the kernel's run. Returns the bindings to restore.
    fn take_by_value(&mut self, env: &mut Env<'s>, slots: &[usize]) -> Vec<(usize, AllocId)> {
        let mut taken = Vec::new();
        for &slot in slots {
            let Some(host) = env.bindings[slot].alloc else {
                continue;
            };
            if self.mem.allocations[host].space == Side::Device {
                continue;
            }
            let original = &self.mem.allocations[host];
            let (elements, init, name) = (
                original.elements.clone(),
                original.init.clone(),
                original.name.clone(),
            );
            let reg = *self.by_value.entry(host).or_insert_with(|| {
                let r = self.mem.adopt(&name, elements.clone(), Side::Device);
                self.mem.allocations[r].register = true;
                r
            });
            let a = &mut self.mem.allocations[reg];
            a.elements = elements;
            a.init = init;
            env.bindings[slot].alloc = Some(reg);
            taken.push((slot, host));
        }
        taken
    }

    /// The iterations of a map whose parameters hold their first values.
    fn map_iterations(
        &mut self,
        env: &mut Env<'s>,
        m: &MapStep<'s>,
        bounds: &[(i64, i64, i64)],
        label: &str,
        inner_side: Side,
    ) -> Result<(), SimError> {
        if self.mem.race.borrow().is_none() && self.run_fused(env, m, bounds, label, inner_side)? {
            return Ok(());
        }
        let mut point: Vec<i64> = bounds.iter().map(|b| b.0).collect();
        let mut thread = 0u64;
        loop {
            if let Some(log) = self.mem.race.get_mut().as_mut()
                && m.schedule == Schedule::DeviceKernel
            {
                log.thread = thread;
                thread += 1;
            }
            self.run_steps(env, &m.body, label, inner_side)?;
            if !next_point(&mut point, bounds) {
                return Ok(());
            }
            for (&slot, &p) in m.params.iter().zip(&point) {
                env.syms[slot] = p;
            }
        }
    }

    /// The address of a scalar access as an affine function of the map's
    /// parameters, if it is one and every address it takes is inside an
    /// allocation the map's side may touch.
    fn linearize(
        &self,
        env: &Env<'s>,
        a: &Access,
        m: &MapStep<'s>,
        bounds: &[(i64, i64, i64)],
        side: Side,
    ) -> Option<Linear> {
        let b = &env.bindings[a.container];
        let alloc = b.alloc?;
        let mem = &self.mem.allocations[alloc];
        if !mem.register && mem.space != side {
            return None;
        }
        let param = |slot: usize| m.params.iter().position(|&p| p == slot);
        // The range of an affine function `c + sum(k_d * p_d)` of the map's
        // parameters over the box: its extremes are at the corners.
        let extremes = |c: i64, ks: &[i64]| -> Option<(i64, i64)> {
            let (mut lo, mut hi) = (c, c);
            for (&(first, last, step), &k) in bounds.iter().zip(ks) {
                let last = first.checked_add((last - first) / step * step)?;
                let (x, y) = (k.checked_mul(first)?, k.checked_mul(last)?);
                lo = lo.checked_add(x.min(y))?;
                hi = hi.checked_add(x.max(y))?;
            }
            Some((lo, hi))
        };
        // Per dimension, the index as a constant and coefficients of the
        // parameters; every index must stay within its extent (else the
        // general path reports the access precisely), and the address is
        // computed without overflow.
        let mut base = b.offset;
        let mut coeffs = vec![0i64; m.params.len()];
        for (d, (e, &stride)) in a.index.iter().zip(&b.strides).enumerate() {
            let mut c = match e {
                IntExpr::Const(k) | IntExpr::Affine(k, _) => *k,
                _ => 0,
            };
            let mut ks = vec![0i64; m.params.len()];
            let mut term = |slot: usize, k: i64| -> Option<()> {
                match param(slot) {
                    Some(p) => ks[p] = ks[p].checked_add(k)?,
                    None => c = c.checked_add(k.checked_mul(env.syms[slot])?)?,
                }
                Some(())
            };
            match e {
                IntExpr::Const(_) => {}
                IntExpr::Slot(slot) => term(*slot, 1)?,
                IntExpr::Affine(_, terms) => {
                    for &(slot, kk) in terms.iter() {
                        term(slot, kk)?;
                    }
                }
                IntExpr::General(_) => return None,
            }
            let (lo, hi) = extremes(c, &ks)?;
            if let Some(&extent) = b.shape.get(d)
                && (lo < 0 || hi >= extent)
            {
                return None;
            }
            base = base.checked_add(c.checked_mul(stride)?)?;
            for (acc, k) in coeffs.iter_mut().zip(ks) {
                *acc = acc.checked_add(k.checked_mul(stride)?)?;
            }
        }
        let (lo, hi) = extremes(base, &coeffs)?;
        let len = i64::try_from(mem.elements.len()).ok()?;
        (lo >= 0 && hi < len).then_some(Linear {
            alloc,
            base,
            coeffs,
        })
    }

    /// Runs a map whose body is one tasklet with affine scalar accesses in a
    /// tight loop: addresses are affine in the parameters, so they are
    /// computed without evaluating expressions, and space, bounds and
    /// initialisation were checked once for the whole iteration space.
    /// Returns `false` (having done nothing) when the map does not qualify;
    /// the general path then runs it and reports any fault precisely.
    fn run_fused(
        &mut self,
        env: &mut Env<'s>,
        m: &MapStep<'s>,
        bounds: &[(i64, i64, i64)],
        label: &str,
        side: Side,
    ) -> Result<bool, SimError> {
        let [Step::Tasklet(t)] = m.body.as_slice() else {
            return Ok(false);
        };
        if !t.ptrs.is_empty() {
            return Ok(false);
        }
        let mut inputs = Vec::with_capacity(t.inputs.len());
        for (slot, a) in &t.inputs {
            let Some(l) = self.linearize(env, a, m, bounds, side) else {
                return Ok(false);
            };
            // A transient read must be initialised everywhere the map reads
            // it; where it is not, the general path reports the first read.
            if !self.box_initialized(&l, bounds) {
                return Ok(false);
            }
            inputs.push((*slot, l));
        }
        let mut outputs = Vec::new();
        for (slot, targets) in &t.outputs {
            for (a, wcr) in targets {
                let Some(l) = self.linearize(env, a, m, bounds, side) else {
                    return Ok(false);
                };
                // A combining write reads the old value: it must be there.
                if wcr.is_some() && !self.box_initialized(&l, bounds) {
                    return Ok(false);
                }
                outputs.push((*slot, l, *wcr));
            }
        }
        let mut vals = std::mem::take(&mut self.scratch_vals);
        vals.clear();
        vals.resize(t.code.slots, Value::Bool(false));
        let result = self.fused_loop(env, m, bounds, t, &inputs, &outputs, &mut vals, side);
        self.scratch_vals = vals;
        match result {
            Ok(()) => Ok(true),
            Err(fault) => {
                Err(self.code_fault(env, t, fault, &[], side, Self::at(env, label, &t.label)))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fused_loop(
        &mut self,
        env: &mut Env<'s>,
        m: &MapStep<'s>,
        bounds: &[(i64, i64, i64)],
        t: &TaskletStep,
        inputs: &[(usize, Linear)],
        outputs: &[(usize, Linear, Option<sdfg_ir::Wcr>)],
        vals: &mut [Value],
        side: Side,
    ) -> Result<(), CodeFault> {
        let mut point: Vec<i64> = bounds.iter().map(|b| b.0).collect();
        loop {
            for (slot, l) in inputs {
                let addr = l.at(&point);
                // In bounds: checked for the whole box by `linearize`.
                vals[*slot] = self.mem.allocations[l.alloc]
                    .elements
                    .get(addr as usize)
                    .ok_or(CodeFault::OutOfBounds(0, addr))?;
            }
            {
                let mut frame = Frame {
                    vals,
                    syms: &env.syms,
                    ptrs: &[],
                    mem: &mut self.mem,
                    side,
                };
                t.code.run(&mut frame)?;
            }
            for (slot, l, wcr) in outputs {
                let addr = l.at(&point) as usize;
                let elements = &mut self.mem.allocations[l.alloc].elements;
                let v = match wcr {
                    None => vals[*slot],
                    Some(w) => {
                        let old = elements
                            .get(addr)
                            .ok_or(CodeFault::OutOfBounds(0, addr as i64))?;
                        arith::combine(*w, elements.dtype(), old, vals[*slot])?
                    }
                };
                elements.set(addr, v);
                if let Some(init) = &mut self.mem.allocations[l.alloc].init {
                    init[addr] = true;
                }
            }
            if !next_point(&mut point, bounds) {
                return Ok(());
            }
            for (&slot, &p) in m.params.iter().zip(&point) {
                env.syms[slot] = p;
            }
        }
    }

    /// Whether every address `l` takes over the box of `bounds` holds an
    /// initialised element (always, for an allocation without tracking).
    fn box_initialized(&self, l: &Linear, bounds: &[(i64, i64, i64)]) -> bool {
        let Some(init) = &self.mem.allocations[l.alloc].init else {
            return true;
        };
        let mut point: Vec<i64> = bounds.iter().map(|b| b.0).collect();
        loop {
            if !usize::try_from(l.at(&point))
                .ok()
                .and_then(|i| init.get(i).copied())
                .unwrap_or(false)
            {
                return false;
            }
            if !next_point(&mut point, bounds) {
                return true;
            }
        }
    }

    /// Linear address of a scalar access.
    #[inline]
    fn address(
        &self,
        env: &Env<'s>,
        a: &Access,
        at: &dyn Fn() -> Location,
    ) -> Result<(AllocId, i64), SimError> {
        let b = &env.bindings[a.container];
        let alloc = b.alloc.ok_or_else(|| SimError::Uninitialized {
            container: env.info.container_names[a.container].clone(),
            index: 0,
            at: at(),
        })?;
        let mut addr = b.offset;
        for (d, (e, s)) in a.index.iter().zip(&b.strides).enumerate() {
            let i = e.eval(env, &self.mem, at)?;
            let name = || env.info.container_names[a.container].clone();
            if let Some(&extent) = b.shape.get(d)
                && !(0..extent).contains(&i)
            {
                return Err(SimError::OutOfShape {
                    container: name(),
                    dim: d,
                    index: i,
                    extent,
                    at: at(),
                });
            }
            addr = i
                .checked_mul(*s)
                .and_then(|x| addr.checked_add(x))
                .ok_or_else(|| SimError::AddressOverflow {
                    container: name(),
                    at: at(),
                })?;
        }
        Ok((alloc, addr))
    }

    fn run_tasklet(
        &mut self,
        env: &mut Env<'s>,
        t: &TaskletStep,
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let at = || Self::at(env, label, &t.label);
        let mut vals = std::mem::take(&mut self.scratch_vals);
        vals.clear();
        vals.resize(t.code.slots, Value::Bool(false));
        for (slot, a) in &t.inputs {
            let (alloc, addr) = self.address(env, a, &at)?;
            vals[*slot] = read_element(
                &self.mem,
                alloc,
                addr,
                side,
                &env.info.container_names[a.container],
                &at,
            )
            .inspect_err(|_| ())?;
        }
        let mut ptrs = std::mem::take(&mut self.scratch_ptrs);
        ptrs.clear();
        for p in &t.ptrs {
            let b = &env.bindings[p.container];
            let alloc = b.alloc.unwrap_or(usize::MAX);
            let mut base = b.offset;
            let mut strides = Vec::new();
            for (d, [begin, end, step]) in p.subset.iter().enumerate() {
                let stride = b.strides.get(d).copied().unwrap_or(0);
                let begin_v = begin.eval(env, &self.mem, &at)?;
                base += begin_v * stride;
                if end.eval(env, &self.mem, &at)? != begin_v {
                    strides.push(stride * step.eval(env, &self.mem, &at)?);
                }
            }
            ptrs.push(Ptr {
                alloc,
                base,
                strides,
                wcr: p.wcr,
            });
        }
        let result = {
            let mut frame = Frame {
                vals: &mut vals,
                syms: &env.syms,
                ptrs: &ptrs,
                mem: &mut self.mem,
                side,
            };
            t.code.run(&mut frame)
        };
        if let Err(fault) = result {
            let e = self.code_fault(env, t, fault, &ptrs, side, at());
            self.scratch_vals = vals;
            self.scratch_ptrs = ptrs;
            return Err(e);
        }
        for (slot, targets) in &t.outputs {
            let v = vals[*slot];
            for (a, wcr) in targets {
                let (alloc, addr) = self.address(env, a, &at)?;
                write_element(
                    &mut self.mem,
                    alloc,
                    addr,
                    v,
                    *wcr,
                    side,
                    &env.info.container_names[a.container],
                    &at,
                )?;
            }
        }
        self.scratch_vals = vals;
        self.scratch_ptrs = ptrs;
        Ok(())
    }

    fn code_fault(
        &self,
        env: &Env<'s>,
        t: &TaskletStep,
        fault: CodeFault,
        ptrs: &[Ptr],
        side: Side,
        at: Location,
    ) -> SimError {
        let name = |k: usize| {
            t.ptrs
                .get(k)
                .map(|p| env.info.container_names[p.container].clone())
                .unwrap_or_default()
        };
        match fault {
            CodeFault::Arith(arith::ArithError::DivisionByZero) => SimError::DivisionByZero { at },
            CodeFault::Arith(arith::ArithError::Unsupported) => SimError::Type {
                at,
                expected: DType::Float64,
            },
            CodeFault::OutOfBounds(k, index) => SimError::OutOfBounds {
                container: name(k),
                index,
                len: ptrs
                    .get(k)
                    .and_then(|p| self.mem.allocations.get(p.alloc))
                    .map_or(0, |a| a.elements.len()),
                at,
            },
            CodeFault::Space(k) => SimError::Fault {
                side,
                container: name(k),
                space: ptrs
                    .get(k)
                    .and_then(|p| self.mem.allocations.get(p.alloc))
                    .map_or(side, |a| a.space),
                at,
            },
            CodeFault::Uninitialized(k, index) => SimError::Uninitialized {
                container: name(k),
                index,
                at,
            },
            CodeFault::Race(k, index, kind) => SimError::Race {
                container: name(k),
                index,
                kind,
                at,
            },
        }
    }

    /// Every linear address of a region of a container, in row-major order of
    /// the region, and the region's squeezed shape.
    fn region(
        &self,
        env: &Env<'s>,
        container: usize,
        subset: &SubsetPlan,
        at: &Location,
    ) -> Result<(AllocId, Vec<i64>, Vec<usize>), SimError> {
        let b = &env.bindings[container];
        let name = &env.info.container_names[container];
        let alloc = b.alloc.ok_or_else(|| SimError::Uninitialized {
            container: name.clone(),
            index: 0,
            at: at.clone(),
        })?;
        let at_fn = || at.clone();
        let mut dims = Vec::with_capacity(subset.len());
        for (d, [begin, end, step]) in subset.iter().enumerate() {
            let (bv, ev, sv) = (
                begin.eval(env, &self.mem, &at_fn)?,
                end.eval(env, &self.mem, &at_fn)?,
                step.eval(env, &self.mem, &at_fn)?,
            );
            // `(end - begin) // step + 1` with floor division. (`div_euclid`
            // is not floor division for a negative step: `x[6:0:-4]`, whose
            // inclusive end is 1, would count -5 div_euclid -4 = 2 and
            // reach index -2 instead of stopping at 6, 2.) In 128 bits: the
            // span of two 64-bit ends, and the count, may not fit in 64.
            let count = if sv == 0 {
                0
            } else {
                let (span, step) = (i128::from(ev) - i128::from(bv), i128::from(sv));
                let q = span / step;
                let q = if span % step != 0 && ((span < 0) != (step < 0)) {
                    q - 1
                } else {
                    q
                };
                i64::try_from((q + 1).max(0)).map_err(|_| SimError::AddressOverflow {
                    container: name.clone(),
                    at: at.clone(),
                })?
            };
            let count = if (sv > 0 && ev < bv) || (sv < 0 && ev > bv) {
                0
            } else {
                count
            };
            if count > 0
                && let Some(&extent) = b.shape.get(d)
            {
                let last = (count - 1)
                    .checked_mul(sv)
                    .and_then(|x| bv.checked_add(x))
                    .ok_or_else(|| SimError::AddressOverflow {
                        container: name.clone(),
                        at: at.clone(),
                    })?;
                if let Some(index) = [bv, last].into_iter().find(|i| !(0..extent).contains(i)) {
                    return Err(SimError::OutOfShape {
                        container: name.clone(),
                        dim: d,
                        index,
                        extent,
                        at: at.clone(),
                    });
                }
            }
            dims.push((bv, sv, count, b.strides.get(d).copied().unwrap_or(0)));
        }
        // Each count lies within its dimension's extent, but a subset may
        // name more dimensions than a binding has extents: the product is
        // checked, not assumed.
        let total = dims
            .iter()
            .try_fold(1i64, |acc, d| acc.checked_mul(d.2))
            .ok_or_else(|| SimError::AddressOverflow {
                container: name.clone(),
                at: at.clone(),
            })?;
        let mut addrs = Vec::new();
        addrs
            .try_reserve_exact(usize::try_from(total).unwrap_or(0))
            .map_err(|_| SimError::AllocationFailed {
                container: name.clone(),
                bytes: u64::try_from(total).unwrap_or(0).saturating_mul(8),
            })?;
        if total > 0 {
            let mut idx = vec![0i64; dims.len()];
            'outer: loop {
                let mut addr = Some(b.offset);
                for (k, &(bv, sv, _, stride)) in dims.iter().enumerate() {
                    // Indices within an extent and a checked layout cannot
                    // overflow; a dimension beyond the binding's extents can.
                    addr = idx[k]
                        .checked_mul(sv)
                        .and_then(|x| x.checked_add(bv))
                        .and_then(|x| x.checked_mul(stride))
                        .and_then(|x| addr?.checked_add(x));
                }
                addrs.push(addr.ok_or_else(|| SimError::AddressOverflow {
                    container: name.clone(),
                    at: at.clone(),
                })?);
                let mut d = dims.len();
                loop {
                    if d == 0 {
                        break 'outer;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < dims[d].2 {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        let shape = dims
            .iter()
            .zip(subset)
            .filter(|(_, [begin, end, _])| !same_expr(begin, end))
            .map(|(d, _)| usize::try_from(d.2).unwrap_or(0))
            .collect();
        Ok((alloc, addrs, shape))
    }

    fn run_copy(
        &mut self,
        env: &mut Env<'s>,
        c: &CopyStep,
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let at = Self::at(env, label, &c.label);
        let (src, src_addrs, _) = self.region(env, c.src, &c.src_subset, &at)?;
        let (dst, dst_addrs, _) = self.region(env, c.dst, &c.dst_subset, &at)?;
        let (src_name, dst_name) = (
            &env.info.container_names[c.src],
            &env.info.container_names[c.dst],
        );
        if src_addrs.len() != dst_addrs.len() {
            return Err(SimError::Unsupported {
                at,
                what: format!(
                    "a copy of {} elements of `{src_name}` into {} elements of `{dst_name}`",
                    src_addrs.len(),
                    dst_addrs.len()
                ),
            });
        }
        // Inside a kernel both ends must be device memory; the host issues
        // copies between any two spaces.
        if side == Side::Device {
            for (alloc, name) in [(src, src_name), (dst, dst_name)] {
                let a = &self.mem.allocations[alloc];
                if !a.register && !self.mem.reaches(a, Side::Device) {
                    return Err(SimError::Fault {
                        side,
                        container: name.clone(),
                        space: a.space,
                        at,
                    });
                }
            }
        }
        let dtype = self.mem.allocations[dst].elements.dtype();
        for (&s, &d) in src_addrs.iter().zip(&dst_addrs) {
            let (si, di) = (usize::try_from(s).ok(), usize::try_from(d).ok());
            let (Some(si), Some(di)) = (si, di) else {
                return Err(SimError::OutOfBounds {
                    container: src_name.clone(),
                    index: s.min(d),
                    len: 0,
                    at,
                });
            };
            let sa = &self.mem.allocations[src];
            let v = sa.elements.get(si).ok_or_else(|| SimError::OutOfBounds {
                container: src_name.clone(),
                index: s,
                len: sa.elements.len(),
                at: at.clone(),
            })?;
            // Copies move bytes, written or not; initialisation travels with them.
            let init = sa.init.as_ref().is_none_or(|i| i[si]);
            let da = &mut self.mem.allocations[dst];
            let len = da.elements.len();
            if c.wcr.is_some() && da.init.as_ref().is_some_and(|f| !f[di]) {
                // Combining into an element nothing wrote reads garbage, as
                // a tasklet writing with the same resolution would.
                return Err(SimError::Uninitialized {
                    container: dst_name.clone(),
                    index: d,
                    at,
                });
            }
            let v = match c.wcr {
                Some(w) if init => {
                    let old = da.elements.get(di).ok_or_else(|| SimError::OutOfBounds {
                        container: dst_name.clone(),
                        index: d,
                        len,
                        at: at.clone(),
                    })?;
                    arith::combine(w, dtype, old, v).map_err(|_| SimError::Type {
                        at: at.clone(),
                        expected: dtype,
                    })?
                }
                _ => v,
            };
            if !da.elements.set(di, v) {
                return Err(SimError::OutOfBounds {
                    container: dst_name.clone(),
                    index: d,
                    len,
                    at,
                });
            }
            if !init && da.init.is_none() {
                // An argument (every element written) receiving an element
                // nothing wrote: its elements are tracked from now on, so a
                // later read of that one faults here as it does where the
                // same copy lands in a device twin, which is tracked. (The
                // host and the offloaded run of one program disagreed.)
                let mut flags = Vec::new();
                flags
                    .try_reserve_exact(len)
                    .map_err(|_| SimError::AllocationFailed {
                        container: dst_name.clone(),
                        bytes: len as u64,
                    })?;
                flags.resize(len, true);
                da.init = Some(flags);
            }
            if let Some(flags) = &mut da.init {
                flags[di] = init;
            }
        }
        let pairs: Vec<(i64, i64)> = src_addrs.into_iter().zip(dst_addrs).collect();
        self.mem.count_copy(src, dst, dtype, &pairs);
        Ok(())
    }

    fn bind_view(&mut self, env: &mut Env<'s>, v: &ViewStep, label: &str) -> Result<(), SimError> {
        let view_name = env.info.container_names[v.view].clone();
        let at = Self::at(env, label, &view_name);
        let origin = env.bindings[v.origin].clone();
        let at_fn = || at.clone();
        let mut offset = origin.offset;
        for ([begin, _, _], s) in v.subset.iter().zip(&origin.strides) {
            offset += begin.eval(env, &self.mem, &at_fn)? * s;
        }
        let desc = &env.sdfg.containers[&view_name];
        let layout = desc.layout().ok_or_else(|| SimError::Unsupported {
            at: at.clone(),
            what: "a view without a layout".to_owned(),
        })?;
        let strides = layout
            .strides
            .iter()
            .map(|e| eval_sym(e, env, &self.mem, &at))
            .collect::<Result<Vec<_>, _>>()?;
        let shape = layout
            .shape
            .iter()
            .map(|e| eval_sym(e, env, &self.mem, &at))
            .collect::<Result<Vec<_>, _>>()?;
        env.bindings[v.view] = Binding {
            alloc: origin.alloc,
            offset: offset + eval_sym(&layout.offset, env, &self.mem, &at)?,
            strides,
            shape,
        };
        Ok(())
    }

    /// Gathers an operand into a dense tensor, checking its space.
    fn gather(
        &self,
        env: &Env<'s>,
        o: &Operand,
        side: Side,
        at: &Location,
        check_init: bool,
    ) -> Result<(AllocId, Vec<i64>, Tensor), SimError> {
        let (alloc, addrs, shape) = self.region(env, o.container, &o.subset, at)?;
        let name = &env.info.container_names[o.container];
        let a = &self.mem.allocations[alloc];
        if !a.register && !self.mem.reaches(a, side) {
            return Err(SimError::Fault {
                side,
                container: name.clone(),
                space: a.space,
                at: at.clone(),
            });
        }
        let dtype = a.elements.dtype();
        let mut data = Vec::with_capacity(addrs.len());
        for &addr in &addrs {
            let v = if check_init {
                read_element(&self.mem, alloc, addr, side, name, &|| at.clone())?
            } else {
                let i = usize::try_from(addr).unwrap_or(usize::MAX);
                a.elements.get(i).ok_or_else(|| SimError::OutOfBounds {
                    container: name.clone(),
                    index: addr,
                    len: a.elements.len(),
                    at: at.clone(),
                })?
            };
            data.push(v);
        }
        Ok((alloc, addrs, Tensor { dtype, shape, data }))
    }

    fn scatter(
        &mut self,
        env: &Env<'s>,
        o: &Operand,
        (alloc, addrs): (AllocId, &[i64]),
        t: &Tensor,
        side: Side,
        at: &Location,
    ) -> Result<(), SimError> {
        let name = &env.info.container_names[o.container];
        for (&addr, &v) in addrs.iter().zip(&t.data) {
            write_element(&mut self.mem, alloc, addr, v, o.wcr, side, name, &|| {
                at.clone()
            })?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run_library(
        &mut self,
        env: &mut Env<'s>,
        node: &str,
        op: &sdfg_ir::LibraryOp,
        schedule: Schedule,
        inputs: &[Operand],
        outputs: &[Operand],
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let at = Self::at(env, label, node);
        let lib_side = if schedule.is_device() {
            Side::Device
        } else {
            side
        };
        if schedule == Schedule::DeviceKernel && side == Side::Host {
            self.mem.launches += 1;
        }
        let mut ins = std::collections::BTreeMap::new();
        for o in inputs {
            // A device-wide call's scales are read by the host issuing it.
            let scale = matches!(o.conn.as_str(), "_alpha" | "_beta");
            let reader = if scale { side } else { lib_side };
            let (_, _, t) = self.gather(env, o, reader, &at, true)?;
            ins.insert(o.conn.clone(), t);
        }
        let mut outs = std::collections::BTreeMap::new();
        let mut places = Vec::new();
        for o in outputs {
            let (alloc, addrs, t) = self.gather(env, o, lib_side, &at, false)?;
            outs.insert(o.conn.clone(), t);
            places.push((alloc, addrs));
        }
        library::run(op, &ins, &mut outs).map_err(|error| SimError::Library {
            at: at.clone(),
            error,
        })?;
        for (o, (alloc, addrs)) in outputs.iter().zip(places) {
            if let Some(t) = outs.get(&o.conn) {
                // Library results replace the region; a memlet WCR combines.
                self.scatter(env, o, (alloc, &addrs), t, lib_side, &at)?;
            }
        }
        Ok(())
    }

    fn run_nested(
        &mut self,
        env: &mut Env<'s>,
        n: &NestedStep<'s>,
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let at = Self::at(env, label, &n.label);
        let mut inner = self.env(n.sdfg, format!("{}/{}", env.path, n.sdfg.name), side);
        let at_fn = || at.clone();
        for (sym, value) in &n.mapping {
            if let Some(&slot) = inner.info.slots.get(sym) {
                inner.syms[slot] = value.eval(env, &self.mem, &at_fn)?;
                inner.defined[slot] = true;
            }
        }
        for (name, o) in &n.bindings {
            let Some(&c) = inner.info.containers.get(name) else {
                continue;
            };
            let outer = &env.bindings[o.container];
            let mut offset = outer.offset;
            let mut all_strides = Vec::new();
            let mut squeezed = Vec::new();
            for ([begin, end, step], s) in o.subset.iter().zip(&outer.strides) {
                let b = begin.eval(env, &self.mem, &at_fn)?;
                offset += b * s;
                let st = s * step.eval(env, &self.mem, &at_fn)?;
                all_strides.push(st);
                if end.eval(env, &self.mem, &at_fn)? != b {
                    squeezed.push(st);
                }
            }
            let desc = &n.sdfg.containers[name];
            let inner_at = Location {
                sdfg: inner.path.as_str().into(),
                ..at.clone()
            };
            let shape = desc
                .shape()
                .iter()
                .map(|e| eval_sym(e, &inner, &self.mem, &inner_at))
                .collect::<Result<Vec<_>, _>>()?;
            // The outer region's strides, where its rank matches the inner
            // container's (with or without size-one dimensions).
            let strides = if squeezed.len() == shape.len() {
                squeezed
            } else if all_strides.len() == shape.len() {
                all_strides
            } else {
                match desc.layout() {
                    Some(l) => l
                        .strides
                        .iter()
                        .map(|e| eval_sym(e, &inner, &self.mem, &inner_at))
                        .collect::<Result<Vec<_>, _>>()?,
                    None => vec![1],
                }
            };
            inner.bindings[c] = Binding {
                alloc: outer.alloc,
                offset,
                strides,
                shape,
            };
        }
        self.run_sdfg(&mut inner)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_callback(
        &mut self,
        env: &mut Env<'s>,
        node: &str,
        callee: &str,
        inputs: &[Operand],
        outputs: &[Operand],
        label: &str,
        side: Side,
    ) -> Result<(), SimError> {
        let at = Self::at(env, label, node);
        if side == Side::Device {
            return Err(SimError::Callback {
                at,
                callee: callee.to_owned(),
                message: "host callbacks cannot run on the device".to_owned(),
            });
        }
        let f = self
            .callbacks
            .get(callee)
            .ok_or_else(|| SimError::Callback {
                at: at.clone(),
                callee: callee.to_owned(),
                message: "not registered".to_owned(),
            })?;
        let mut args = Vec::new();
        for o in inputs {
            let (_, _, t) = self.gather(env, o, side, &at, true)?;
            args.push(ArrayValue::from_tensor(&t));
        }
        let results = f(&args).map_err(|message| SimError::Callback {
            at: at.clone(),
            callee: callee.to_owned(),
            message,
        })?;
        if results.len() != outputs.len() {
            return Err(SimError::Callback {
                at,
                callee: callee.to_owned(),
                message: format!(
                    "returned {} results for {} outputs",
                    results.len(),
                    outputs.len()
                ),
            });
        }
        for (o, r) in outputs.iter().zip(results) {
            let (alloc, addrs, _) = self.gather(env, o, side, &at, false)?;
            let t = r.to_tensor();
            if t.data.len() != addrs.len() {
                return Err(SimError::Callback {
                    at,
                    callee: callee.to_owned(),
                    message: format!(
                        "result for `{}` has {} elements, expected {}",
                        o.conn,
                        t.data.len(),
                        addrs.len()
                    ),
                });
            }
            self.scatter(env, o, (alloc, &addrs), &t, side, &at)?;
        }
        Ok(())
    }
}

/// Whether two compiled bounds are the same expression (a degenerate dimension).
fn same_expr(a: &IntExpr, b: &IntExpr) -> bool {
    match (a, b) {
        (IntExpr::Const(x), IntExpr::Const(y)) => x == y,
        (IntExpr::Slot(x), IntExpr::Slot(y)) => x == y,
        (IntExpr::Affine(c, t), IntExpr::Affine(d, u)) => c == d && t == u,
        (IntExpr::General(x), IntExpr::General(y)) => x == y,
        _ => false,
    }
}

/// Places an argument's elements in memory according to its descriptor.
pub(crate) fn bind_argument<'s>(
    machine: &mut Machine<'s, '_>,
    env: &mut Env<'s>,
    name: &str,
    desc: &sdfg_ir::DataDesc,
    value: &ArrayValue,
) -> Result<(), SimError> {
    let at = Location::new(&env.path, "", name);
    if value.dtype() != desc.dtype {
        return Err(SimError::BadArgument {
            name: name.to_owned(),
            expected: desc.dtype.to_string(),
            found: value.dtype().to_string(),
        });
    }
    let shape = desc
        .shape()
        .iter()
        .map(|e| eval_sym(e, env, &machine.mem, &at))
        .collect::<Result<Vec<_>, _>>()?;
    let given: Vec<i64> = value.shape.iter().map(|&d| d as i64).collect();
    let scalar_ok = desc.is_scalar() && value.elements.len() == 1;
    if given != shape && !scalar_ok {
        return Err(SimError::BadArgument {
            name: name.to_owned(),
            expected: format!("shape {shape:?}"),
            found: format!("shape {given:?}"),
        });
    }
    let (strides, offset, total) = match desc.layout() {
        Some(l) => (
            l.strides
                .iter()
                .map(|e| eval_sym(e, env, &machine.mem, &at))
                .collect::<Result<Vec<_>, _>>()?,
            eval_sym(&l.offset, env, &machine.mem, &at)?,
            eval_sym(&l.total_size, env, &machine.mem, &at)?,
        ),
        None => (vec![1], 0, 1),
    };
    let len = reserve(
        &mut machine.mem,
        name,
        desc,
        &shape,
        &strides,
        offset,
        total,
    )?;
    let space = crate::argument_space(desc.storage);
    let contiguous = desc.layout().is_none_or(|l| l.is_contiguous());
    let alloc = if contiguous && len == value.elements.len() {
        machine.mem.adopt(name, value.elements.clone(), space)
    } else {
        let alloc = machine.mem.allocate(name, desc.dtype, len, space, false)?;
        let b = Binding {
            alloc: Some(alloc),
            offset,
            strides: strides.clone(),
            shape: shape.clone(),
        };
        for (i, addr) in dense_addresses(&b).into_iter().enumerate() {
            let v = value.elements.get(i).unwrap_or(Value::zero(desc.dtype));
            let ok = usize::try_from(addr)
                .is_ok_and(|a| machine.mem.allocations[alloc].elements.set(a, v));
            if !ok {
                return Err(SimError::OutOfBounds {
                    container: name.to_owned(),
                    index: addr,
                    len,
                    at,
                });
            }
        }
        alloc
    };
    let c = env.info.containers[name];
    env.bindings[c] = Binding {
        alloc: Some(alloc),
        offset,
        strides,
        shape,
    };
    Ok(())
}

/// Checks a container's layout evaluated with the run's symbols
/// ([`sdfg_ir::Layout::check_concrete`]: every address in 64 bits and in
/// the allocation) and reserves its bytes within the memory limit, before
/// anything is allocated; gives its length in elements.
fn reserve(
    mem: &mut Memory,
    name: &str,
    desc: &sdfg_ir::DataDesc,
    shape: &[i64],
    strides: &[i64],
    offset: i64,
    total: i64,
) -> Result<usize, SimError> {
    let bytes =
        sdfg_ir::Layout::check_concrete(shape, strides, offset, total, desc.dtype.size_bytes())
            .map_err(|error| SimError::Layout {
                container: name.to_owned(),
                error,
            })?;
    let len = usize::try_from(total).map_err(|_| SimError::BadSize {
        container: name.to_owned(),
        size: total,
    })?;

    mem.reserve(name, bytes)?;
    Ok(len)
}

/// Linear addresses of every element of a binding, in row-major order.
fn dense_addresses(b: &Binding) -> Vec<i64> {
    let total: i64 = b.shape.iter().product();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    if total <= 0 {
        return out;
    }
    let mut idx = vec![0i64; b.shape.len()];
    loop {
        out.push(b.offset + idx.iter().zip(&b.strides).map(|(i, s)| i * s).sum::<i64>());
        let mut d = idx.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < b.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The final contents of a container as a dense array (`None` if never allocated).
pub(crate) fn read_back(
    machine: &mut Machine<'_, '_>,
    env: &Env<'_>,
    name: &str,
) -> Result<Option<ArrayValue>, SimError> {
    let Some(&c) = env.info.containers.get(name) else {
        return Ok(None);
    };
    let b = &env.bindings[c];
    let Some(alloc) = b.alloc else {
        return Ok(None);
    };
    let desc = &env.sdfg.containers[name];
    let a = &mut machine.mem.allocations[alloc];
    let shape: Vec<usize> = if desc.is_scalar() {
        vec![]
    } else {
        b.shape
            .iter()
            .map(|&d| usize::try_from(d).unwrap_or(0))
            .collect()
    };
    // A contiguous container that fills its allocation is returned as it is.
    let dense_len: usize = shape.iter().product();
    let contiguous = desc.layout().is_none_or(|l| l.is_contiguous()) && b.offset == 0;
    if contiguous && a.elements.len() == dense_len {
        // The run is over: move the elements out instead of copying them.
        let elements = std::mem::replace(&mut a.elements, Elements::zeros(desc.dtype, 0));
        return Ok(Some(ArrayValue::new(shape, elements)));
    }
    let addrs = if desc.is_scalar() {
        vec![b.offset]
    } else {
        dense_addresses(b)
    };
    let mut elements = Elements::zeros(desc.dtype, addrs.len());
    for (i, addr) in addrs.iter().enumerate() {
        let v = usize::try_from(*addr)
            .ok()
            .and_then(|a_| a.elements.get(a_))
            .unwrap_or(Value::zero(desc.dtype));
        elements.set(i, v);
    }
    Ok(Some(ArrayValue::new(shape, elements)))
}

#[cfg(test)]
mod tests {
    use super::next_point;

    #[test]
    fn boxes_ending_at_the_64_bit_limits_end_without_overflow() {
        // Found by `cargo xtask fuzz`: a map range ending at `i64::MAX`
        // stepped past it.
        let bounds = [(0, 1, 1), (i64::MAX - 1, i64::MAX, 1)];
        let mut point = [0, i64::MAX - 1];
        let mut seen = vec![point];
        while next_point(&mut point, &bounds) {
            seen.push(point);
        }
        assert_eq!(
            seen,
            [
                [0, i64::MAX - 1],
                [0, i64::MAX],
                [1, i64::MAX - 1],
                [1, i64::MAX]
            ]
        );
        let down = [(i64::MIN + 1, i64::MIN, -1)];
        let mut point = [i64::MIN + 1];
        assert!(next_point(&mut point, &down));
        assert_eq!(point, [i64::MIN]);
        assert!(!next_point(&mut point, &down));
    }
}
