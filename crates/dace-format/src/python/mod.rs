//! Tasklet code as the Python DaCe stores in its tasklets, both ways.
//!
//! DaCe keeps tasklet code as Python text and turns it into C++ with its
//! own unparser (`dace.codegen.cppunparse`), which gives some operators a
//! meaning of its own: `//` becomes `py_floor` (Python's floor), `%`
//! becomes C's truncating remainder while the call `Mod(a, b)` becomes
//! `py_mod` (Python's sign rule), `a ** k` becomes `ipow`, and `min`/`max`
//! are `dace::math::min`/`max`, which do not propagate NaN. The writer
//! picks, for each operation of the IR, the spelling whose C++ meaning
//! is the IR's:
//!
//! - operands are typed explicitly where C++ would widen them: sums,
//!   products and bit operations of types narrower than 32 bits (and of
//!   booleans) are cast back to their type, as the IR's C++ emitter does,
//!   and literals other than `int64`/`float64` carry their type
//!   (`dace.float32(0.5)`);
//! - modulo is `Mod(a, b)`; floor division `a // b`;
//! - `min`/`max` of floats propagate NaN as NumPy's `minimum`/`maximum`
//!   (the IR's meaning) with an explicit `isnan` test;
//! - locals are declared with their type (`x: dace.float64 = ...`).
//!
//! The `frexp` halves have no DaCe spelling and are refused by name.
//!
//! [`read_tasklet`] reads such code back (and the code DaCe's own frontend
//! writes) into the IR's typed statements: types come from the
//! connectors, which DaCe leaves untyped and the caller types from the
//! memlets' containers, and operands of different types are converted as
//! C++ converts them (DaCe's tasklets are C++ once unparsed). It undoes
//! the writer's spellings exactly, so that writing and reading give back
//! the IR's code: a cast to an operand's own type is dropped, a cast of a
//! literal is a literal of that type, `-3` is the literal and `- x` the
//! negation, and the NaN-propagating `min`/`max` form is `min`/`max`.

mod read;
mod write;

pub use read::{ReadTasklet, TaskletConnectors, read_tasklet};
pub use write::{literal, type_name, write_tasklet};

/// The largest tasklet text the writer produces. NaN-propagating `min` and
/// `max` repeat their operands, so deeply nested ones grow geometrically;
/// past this size the tasklet is refused instead of written.
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// Why tasklet code cannot be written as DaCe Python, or read from it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PythonError {
    /// An operation or construct outside what either side can express.
    #[error("DaCe's tasklet code has no spelling for `{0}`")]
    Unsupported(String),
    /// The code does not type-check.
    #[error("the code does not type-check: {0}")]
    Type(String),
    /// The written code would exceed [`MAX_CODE_BYTES`].
    #[error("the written code exceeds {MAX_CODE_BYTES} bytes")]
    TooLarge,
    /// The text is not Python.
    #[error("the code is not Python: {0}")]
    Syntax(String),
    /// Code this reader does not take, named with its line.
    #[error("line {line}: {what} is outside the supported subset of tasklet code")]
    Construct {
        /// The line in the tasklet's code (from 1).
        line: usize,
        /// The construct.
        what: String,
    },
}
