//! Checked evaluation of expressions under an environment.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use super::expr::{Atom, SymExpr, py_floor_div, py_mod};

/// Values of symbols (and optionally of container reads) for [`SymExpr::eval`].
pub trait SymEnv {
    /// The value of symbol `name`, `None` if undefined.
    fn symbol(&self, name: &str) -> Option<i64>;

    /// The integer stored in `data` at `index`, `None` if it cannot be read (the default).
    fn read(&self, data: &str, index: &[i64]) -> Option<i64> {
        let _ = (data, index);
        None
    }
}

impl SymEnv for BTreeMap<String, i64> {
    fn symbol(&self, name: &str) -> Option<i64> {
        self.get(name).copied()
    }
}

impl<S: BuildHasher> SymEnv for HashMap<String, i64, S> {
    fn symbol(&self, name: &str) -> Option<i64> {
        self.get(name).copied()
    }
}

impl<T: SymEnv + ?Sized> SymEnv for &T {
    fn symbol(&self, name: &str) -> Option<i64> {
        (**self).symbol(name)
    }

    fn read(&self, data: &str, index: &[i64]) -> Option<i64> {
        (**self).read(data, index)
    }
}

/// Why an expression or condition could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A symbol has no value in the environment.
    #[error("undefined symbol `{name}`")]
    UndefinedSymbol {
        /// The symbol.
        name: String,
    },
    /// The environment could not read a container element.
    #[error("cannot read `{data}` at index {index:?}")]
    UnreadableData {
        /// The container.
        data: String,
        /// The evaluated index.
        index: Vec<i64>,
    },
    /// A floor division or modulo by zero.
    #[error("division by zero in {}", crate::quote(.expr))]
    DivisionByZero {
        /// The offending (sub)expression.
        expr: String,
    },
    /// A result outside the `i64` range.
    #[error("integer overflow in {}", crate::quote(.expr))]
    Overflow {
        /// The offending (sub)expression.
        expr: String,
    },
    /// A power with a negative exponent (not an integer in Python).
    #[error("negative exponent in {}", crate::quote(.expr))]
    NegativeExponent {
        /// The offending (sub)expression.
        expr: String,
    },
}

fn checked_pow(base: i64, exp: u64) -> Option<i64> {
    match base {
        0 => Some(i64::from(exp == 0)),
        1 => Some(1),
        -1 => Some(if exp.is_multiple_of(2) { 1 } else { -1 }),
        _ => base.checked_pow(u32::try_from(exp).ok()?),
    }
}

impl SymExpr {
    /// Evaluates with checked arithmetic and Python floor division/modulo semantics.
    pub fn eval(&self, env: &(impl SymEnv + ?Sized)) -> Result<i64, EvalError> {
        let overflow = || EvalError::Overflow {
            expr: self.to_string(),
        };
        let mut acc = self.constant;
        for t in &self.terms {
            let mut v = t.coeff;
            for (atom, p) in &t.factors {
                let x = checked_pow(atom.eval(env)?, u64::from(*p)).ok_or_else(overflow)?;
                v = v.checked_mul(x).ok_or_else(overflow)?;
            }
            acc = acc.checked_add(v).ok_or_else(overflow)?;
        }
        Ok(acc)
    }
}

impl Atom {
    /// Evaluates the atom like [`SymExpr::eval`].
    pub fn eval(&self, env: &(impl SymEnv + ?Sized)) -> Result<i64, EvalError> {
        let expr = || self.to_string();
        let pair = |ops: &[SymExpr; 2]| {
            let [a, b] = ops;
            Ok::<_, EvalError>((a.eval(env)?, b.eval(env)?))
        };
        match self {
            Atom::Symbol(name) => env.symbol(name).ok_or_else(|| EvalError::UndefinedSymbol {
                name: name.to_string(),
            }),
            Atom::Read(data, index) => {
                let index = index
                    .iter()
                    .map(|e| e.eval(env))
                    .collect::<Result<Vec<_>, _>>()?;
                match env.read(data, &index) {
                    Some(v) => Ok(v),
                    None => Err(EvalError::UnreadableData {
                        data: data.to_string(),
                        index,
                    }),
                }
            }
            Atom::FloorDiv(ops) | Atom::Mod(ops) => match pair(ops)? {
                (_, 0) => Err(EvalError::DivisionByZero { expr: expr() }),
                (n, d) if matches!(self, Atom::Mod(_)) => Ok(py_mod(n, d)),
                (i64::MIN, -1) => Err(EvalError::Overflow { expr: expr() }),
                (n, d) => Ok(py_floor_div(n, d)),
            },
            Atom::Pow(ops) => {
                let (b, e) = pair(ops)?;
                let e =
                    u64::try_from(e).map_err(|_| EvalError::NegativeExponent { expr: expr() })?;
                checked_pow(b, e).ok_or_else(|| EvalError::Overflow { expr: expr() })
            }
            Atom::Min(args) => args
                .iter()
                .try_fold(i64::MAX, |m, e| Ok(m.min(e.eval(env)?))),
            Atom::Max(args) => args
                .iter()
                .try_fold(i64::MIN, |m, e| Ok(m.max(e.eval(env)?))),
        }
    }
}
