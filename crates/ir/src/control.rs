//! Structured control flow: regions of blocks, loops, conditionals and jumps.
//!
//! A [`Region`] is a sequence of blocks executed in order. Between a block and
//! the next one is a [`Transition`], which may assign symbols (never
//! containers). Branching and repetition are blocks of their own ([`LoopBlock`],
//! [`ConditionalBlock`]) holding nested regions, and `break`, `continue` and
//! `return` are blocks that leave them. This is the structured form DaCe's
//! control-flow regions have after lifting; it keeps every analysis a
//! recursive walk instead of a fixpoint over an arbitrary state machine.
//!
//! Interstate code (transition assignments, loop and branch conditions) is
//! integer arithmetic over symbols and reads of integer or boolean containers
//! ([`SymExpr::read`]). A condition on floating-point data is computed by a
//! tasklet into a `bool` scalar first; the condition then reads that scalar.
//! Every container read here is a *host read*: the host evaluates these
//! expressions, so the data must be on the host when it does.

use crate::state::State;
use crate::symbolic::{SymCond, SymExpr};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A sequence of blocks, run in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Region {
    /// The blocks.
    pub blocks: Vec<ControlBlock>,
}

/// One block of a region, with the transition taken after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlBlock {
    /// Name of the block, unique within the SDFG (excluding nested SDFGs).
    pub label: String,
    /// What the block is.
    pub kind: BlockKind,
    /// The transition to the next block of the region (or out of the region
    /// after the last block). Not taken when the block is a jump.
    #[serde(default, skip_serializing_if = "Transition::is_empty")]
    pub transition: Transition,
}

/// The kinds of control-flow blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A dataflow state.
    State(State),
    /// A loop.
    Loop(LoopBlock),
    /// An if / elif / else.
    Conditional(ConditionalBlock),
    /// Leaves the innermost loop.
    Break,
    /// Starts the next iteration of the innermost loop (running its update).
    Continue,
    /// Leaves the SDFG. Return values are the containers `__return`, `__return_0`, ...
    Return,
}

impl BlockKind {
    /// The kind's name as it appears in messages (`"loop"`).
    pub fn name(&self) -> &'static str {
        match self {
            BlockKind::State(_) => "state",
            BlockKind::Loop(_) => "loop",
            BlockKind::Conditional(_) => "conditional",
            BlockKind::Break => "break",
            BlockKind::Continue => "continue",
            BlockKind::Return => "return",
        }
    }
}

/// A `for` or `while` loop.
///
/// A `for` loop has a variable (a symbol of the SDFG), an initial value and
/// an update; the condition is checked before every iteration, including the
/// first. A `while` loop has only the condition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopBlock {
    /// The loop variable of a `for` loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// Value assigned to the variable before the first iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<SymExpr>,
    /// Checked before each iteration; the loop ends when it is false.
    pub condition: SymCond,
    /// Value assigned to the variable after each iteration (and on `continue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<SymExpr>,
    /// The loop body.
    pub body: Region,
}

impl LoopBlock {
    /// The Python loop `for var in range(start, stop, step)` with a constant
    /// non-zero step: condition `var < stop` (or `var > stop` for a negative step).
    pub fn for_range(
        variable: impl Into<String>,
        start: SymExpr,
        stop: SymExpr,
        step: i64,
        body: Region,
    ) -> LoopBlock {
        let variable = variable.into();
        let var = SymExpr::symbol(variable.clone());
        let op = if step < 0 {
            crate::symbolic::CmpOp::Gt
        } else {
            crate::symbolic::CmpOp::Lt
        };
        LoopBlock {
            condition: SymCond::cmp(var.clone(), op, stop),
            update: Some(var + step),
            init: Some(start),
            variable: Some(variable),
            body,
        }
    }

    /// A `while condition:` loop.
    pub fn while_loop(condition: SymCond, body: Region) -> LoopBlock {
        LoopBlock {
            variable: None,
            init: None,
            condition,
            update: None,
            body,
        }
    }
}

impl ControlBlock {
    /// Makes this block's own interstate code (a loop's init, condition and
    /// update, a conditional's branch conditions, the transition leaving
    /// it; not the blocks inside it) read container `renames[x]` wherever
    /// it read `x`: the offload pass points host code at the host twin of
    /// data whose home is the device.
    pub fn rename_interstate_reads(&mut self, renames: &BTreeMap<String, String>) {
        self.map_interstate(&|e| e.rename_reads(renames), &|c| c.rename_reads(renames));
    }

    /// Rewrites this block's own interstate code (as
    /// [`Self::rename_interstate_reads`] names it) expression by
    /// expression and condition by condition.
    pub fn map_interstate(
        &mut self,
        expr: &dyn Fn(&SymExpr) -> SymExpr,
        cond: &dyn Fn(&SymCond) -> SymCond,
    ) {
        match &mut self.kind {
            BlockKind::Loop(l) => {
                l.condition = cond(&l.condition);
                for e in [&mut l.init, &mut l.update].into_iter().flatten() {
                    *e = expr(e);
                }
            }
            BlockKind::Conditional(c) => {
                for (c, _) in &mut c.branches {
                    *c = cond(c);
                }
            }
            _ => {}
        }
        for a in &mut self.transition.assignments {
            a.value = expr(&a.value);
        }
    }
}

/// An `if` / `elif` chain with an optional `else`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConditionalBlock {
    /// Conditions and their regions, tested in order; the first that holds runs.
    pub branches: Vec<(SymCond, Region)>,
    /// The region run when no condition holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<Region>,
}

/// The edge from one block to the next: symbol assignments, run in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// `symbol = value` assignments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assignments: Vec<Assignment>,
}

impl Transition {
    /// True when the transition assigns nothing.
    pub fn is_empty(&self) -> bool {
        self.assignments.is_empty()
    }

    /// Containers the transition reads (host reads).
    pub fn reads(&self) -> BTreeSet<String> {
        self.assignments
            .iter()
            .flat_map(|a| a.value.reads())
            .collect()
    }
}

/// One symbol assignment on a transition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The symbol assigned (must be a declared symbol, never a container).
    pub symbol: String,
    /// Its new value.
    pub value: SymExpr,
}

impl Region {
    /// A region of the given blocks.
    pub fn new(blocks: Vec<ControlBlock>) -> Region {
        Region { blocks }
    }

    /// Whether a loop is anywhere in the region: the loop transformations
    /// skip their whole-SDFG analyses when none is.
    pub fn has_loops(&self) -> bool {
        let mut found = false;
        for b in &self.blocks {
            b.walk(&mut |b| found |= matches!(b.kind, BlockKind::Loop(_)));
            if found {
                return true;
            }
        }
        false
    }

    /// Calls `f` on this region, then on every region nested in its loops and
    /// conditionals (in program order; regions `f` adds are visited too).
    /// Passes that insert or rewrite blocks region by region use it instead
    /// of writing the recursion over block kinds again.
    pub fn for_each_region_mut(&mut self, f: &mut dyn FnMut(&mut Region)) {
        f(self);
        for block in &mut self.blocks {
            match &mut block.kind {
                BlockKind::Loop(l) => l.body.for_each_region_mut(f),
                BlockKind::Conditional(c) => {
                    for (_, r) in &mut c.branches {
                        r.for_each_region_mut(f);
                    }
                    if let Some(r) = &mut c.otherwise {
                        r.for_each_region_mut(f);
                    }
                }
                BlockKind::State(_)
                | BlockKind::Break
                | BlockKind::Continue
                | BlockKind::Return => {}
            }
        }
    }
}

impl ControlBlock {
    /// Calls `f` on this block, then on every block nested in it (in
    /// program order), for analyses of a block with everything inside.
    pub fn walk(&self, f: &mut dyn FnMut(&ControlBlock)) {
        f(self);
        let mut region = |r: &Region| r.blocks.iter().for_each(|b| b.walk(f));
        match &self.kind {
            BlockKind::Loop(l) => region(&l.body),
            BlockKind::Conditional(c) => {
                for (_, r) in &c.branches {
                    region(r);
                }
                if let Some(r) = &c.otherwise {
                    region(r);
                }
            }
            BlockKind::State(_) | BlockKind::Break | BlockKind::Continue | BlockKind::Return => {}
        }
    }

    /// A block with no transition assignments.
    pub fn new(label: impl Into<String>, kind: BlockKind) -> ControlBlock {
        ControlBlock {
            label: label.into(),
            kind,
            transition: Transition::default(),
        }
    }
}
