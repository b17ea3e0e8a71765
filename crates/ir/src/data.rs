//! Data descriptors: what a named container holds and how it is laid out.
//!
//! Containers are named in [`Sdfg::containers`](crate::Sdfg::containers) and
//! referred to by that name everywhere else (access nodes, memlets, interstate
//! reads), as in DaCe. Shapes, strides and sizes are symbolic so that one SDFG
//! serves every problem size.

use crate::dtype::DType;
use crate::placement::{Lifetime, Storage};
use crate::symbolic::SymExpr;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A container's descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataDesc {
    /// Element type.
    pub dtype: DType,
    /// Whether the SDFG owns the container (`true`) or the caller passes it in (`false`).
    /// Every non-transient container is an argument of the SDFG.
    pub transient: bool,
    /// Where the container's memory is.
    pub storage: Storage,
    /// When its memory is allocated and freed (meaningful for transients).
    pub lifetime: Lifetime,
    /// What kind of container it is, with its shape and layout.
    pub kind: DataKind,
}

/// The kinds of containers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// One value. Memlets address it with the one-dimensional subset `[0]`.
    Scalar,
    /// A dense N-dimensional array.
    Array(Layout),
    /// An alias of (part of) another container. Which container and which
    /// part is given, per access node, by the *view edge* that connects the
    /// view's access node to its origin (see [`crate::VIEW_CONNECTOR`]); the
    /// layout here is how the view indexes that memory.
    View(Layout),
    /// A FIFO queue of elements. The offload pass does not analyse streams.
    Stream {
        /// Shape of the stream array (`[1]` for a single stream).
        shape: Vec<SymExpr>,
        /// Capacity of each queue in elements (0 means unbounded).
        buffer_size: SymExpr,
    },
    /// A record of named members, each a descriptor of its own.
    Structure {
        /// The members by name.
        members: BTreeMap<String, DataDesc>,
    },
    /// An array whose elements are containers (for example an array of arrays).
    ContainerArray {
        /// Shape of the outer array.
        shape: Vec<SymExpr>,
        /// Descriptor of every element.
        element: Box<DataDesc>,
    },
}

/// Shape and memory layout of an array or view, in elements.
///
/// Element `(i0, .., ik)` is at `offset + sum(i_d * strides[d])` from the
/// start of the allocation, which holds `total_size` elements. Keeping strides
/// and size explicit (instead of deriving them from the shape) lets views
/// describe columns and sub-matrices with a leading dimension, as BLAS does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Extent of each dimension.
    pub shape: Vec<SymExpr>,
    /// Distance in elements between consecutive indices of each dimension.
    pub strides: Vec<SymExpr>,
    /// Offset in elements of element zero from the start of the allocation.
    pub offset: SymExpr,
    /// Number of elements allocated.
    pub total_size: SymExpr,
}

/// Why a layout cannot be allocated or addressed: checked statically by the
/// validator where the layout is constant, and again by whoever allocates
/// it once the symbols are known (the simulator), so that no address is
/// computed that wraps around or leaves the allocation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The number of elements is negative.
    #[error("its size of {total_size} elements is negative")]
    NegativeSize {
        /// The evaluated `total_size`.
        total_size: i64,
    },
    /// An address of an element, or the size in bytes, does not fit in 64
    /// bits.
    #[error("the addresses or the size in bytes of its elements do not fit in 64 bits")]
    Overflow,
    /// Some element lies outside the allocation.
    #[error(
        "its elements lie at {lowest}..={highest}, outside its allocation of {total_size} elements"
    )]
    OutOfAllocation {
        /// The lowest address of an element.
        lowest: i64,
        /// The highest.
        highest: i64,
        /// The evaluated `total_size`.
        total_size: i64,
    },
    /// Two elements at one address: an allocated array's elements are
    /// distinct (only a view may alias, as NumPy's `as_strided` does), and
    /// a copy of an aliasing array would not move what the program reads.
    #[error("its strides {strides:?} place two of its elements of shape {shape:?} at one address")]
    Overlapping {
        /// The evaluated shape.
        shape: Vec<i64>,
        /// The evaluated strides.
        strides: Vec<i64>,
    },
    /// A symbolic `total_size` smaller than the extent of the elements the
    /// shape, strides and offset place (by a constant).
    #[error(
        "its size {} is smaller than the {} elements its shape, strides and offset address",
        crate::quote(.total_size),
        crate::quote(.needed)
    )]
    TooSmall {
        /// The declared `total_size`.
        total_size: String,
        /// One past the highest address, symbolically.
        needed: String,
    },
}

impl Layout {
    /// Checks a layout evaluated with concrete symbols (`shape`, `strides`,
    /// `offset`, `total_size` in elements) and gives the allocation's size
    /// in bytes for elements of `element_bytes`: every element's address,
    /// `offset + sum(i_d * strides[d])`, computed without overflow, lies in
    /// `0..total_size`. An empty shape (some extent 0) addresses nothing.
    pub fn check_concrete(
        shape: &[i64],
        strides: &[i64],
        offset: i64,
        total_size: i64,
        element_bytes: u64,
    ) -> Result<u64, LayoutError> {
        if total_size < 0 {
            return Err(LayoutError::NegativeSize { total_size });
        }
        let bytes = u64::try_from(total_size)
            .ok()
            .and_then(|t| t.checked_mul(element_bytes))
            .filter(|&b| i64::try_from(b).is_ok())
            .ok_or(LayoutError::Overflow)?;
        if shape.iter().any(|&n| n <= 0) {
            return Ok(bytes);
        }
        let (mut lowest, mut highest) = (offset, offset);
        for (&n, &stride) in shape.iter().zip(strides) {
            let far = (n - 1).checked_mul(stride).ok_or(LayoutError::Overflow)?;
            let (lo, hi) = if far < 0 { (far, 0) } else { (0, far) };
            lowest = lowest.checked_add(lo).ok_or(LayoutError::Overflow)?;
            highest = highest.checked_add(hi).ok_or(LayoutError::Overflow)?;
        }
        if lowest < 0 || highest >= total_size {
            return Err(LayoutError::OutOfAllocation {
                lowest,
                highest,
                total_size,
            });
        }
        // Distinct elements at distinct addresses: with the dimensions of
        // more than one element sorted by stride magnitude, each stride
        // exceeds the span of the smaller ones (C, Fortran, padded and
        // permuted layouts all satisfy it).
        let mut dims: Vec<(u64, u64)> = shape
            .iter()
            .zip(strides)
            .filter(|(n, _)| **n > 1)
            .map(|(&n, &s)| (s.unsigned_abs(), n as u64))
            .collect();
        dims.sort_unstable();
        let mut span = 0u64;
        for &(stride, n) in &dims {
            if stride <= span {
                return Err(LayoutError::Overlapping {
                    shape: shape.to_vec(),
                    strides: strides.to_vec(),
                });
            }
            span = span.saturating_add(stride.saturating_mul(n - 1));
        }
        Ok(bytes)
    }

    /// Checks the layout as far as it is known without symbol values: a
    /// constant layout completely ([`Layout::check_concrete`]), a symbolic
    /// one where its `total_size` falls short of one past its highest
    /// address (with non-negative strides) by a constant.
    pub fn check(&self, element_bytes: u64) -> Result<(), LayoutError> {
        let ints = |es: &[SymExpr]| es.iter().map(SymExpr::as_int).collect::<Option<Vec<_>>>();
        if let (Some(shape), Some(strides), Some(offset), Some(total)) = (
            ints(&self.shape),
            ints(&self.strides),
            self.offset.as_int(),
            self.total_size.as_int(),
        ) {
            return Self::check_concrete(&shape, &strides, offset, total, element_bytes)
                .map(|_| ());
        }
        if self
            .strides
            .iter()
            .any(|s| s.as_int().is_some_and(|k| k < 0))
        {
            return Ok(());
        }
        let needed = SymExpr::exact(|| {
            self.shape
                .iter()
                .zip(&self.strides)
                .fold(&self.offset + 1, |acc, (n, s)| acc + &(&(n - 1) * s))
        });
        if let Some(needed) = needed
            && let Some(Some(short)) = SymExpr::exact(|| (&self.total_size - &needed).as_int())
            && short < 0
        {
            return Err(LayoutError::TooSmall {
                total_size: self.total_size.to_string(),
                needed: needed.to_string(),
            });
        }
        Ok(())
    }

    /// Row-major (C order) contiguous layout of `shape`, NumPy's default.
    pub fn contiguous(shape: Vec<SymExpr>) -> Layout {
        let mut strides = vec![SymExpr::int(1); shape.len()];
        let mut running = SymExpr::int(1);
        for (d, extent) in shape.iter().enumerate().rev() {
            strides[d] = running.clone();
            running = &running * extent;
        }
        Layout {
            shape,
            strides,
            offset: SymExpr::int(0),
            total_size: running,
        }
    }

    /// Whether the layout is exactly the row-major contiguous layout of its shape.
    pub fn is_contiguous(&self) -> bool {
        *self == Layout::contiguous(self.shape.clone())
    }

    /// Every expression of the layout: shape, strides, offset, total size.
    pub fn expressions(&self) -> impl Iterator<Item = &SymExpr> {
        self.shape
            .iter()
            .chain(&self.strides)
            .chain([&self.offset, &self.total_size])
    }
}

impl DataDesc {
    fn new(dtype: DType, kind: DataKind) -> DataDesc {
        DataDesc {
            dtype,
            transient: false,
            storage: Storage::Default,
            lifetime: Lifetime::External,
            kind,
        }
    }

    /// A non-transient scalar in default storage.
    pub fn scalar(dtype: DType) -> DataDesc {
        DataDesc::new(dtype, DataKind::Scalar)
    }

    /// A non-transient, contiguous array in default storage.
    pub fn array(dtype: DType, shape: Vec<SymExpr>) -> DataDesc {
        DataDesc::new(dtype, DataKind::Array(Layout::contiguous(shape)))
    }

    /// A view with the given layout. Views are always transient.
    pub fn view(dtype: DType, layout: Layout) -> DataDesc {
        DataDesc::new(dtype, DataKind::View(layout)).into_transient()
    }

    /// A stream of the given shape and capacity.
    pub fn stream(dtype: DType, shape: Vec<SymExpr>, buffer_size: SymExpr) -> DataDesc {
        DataDesc::new(dtype, DataKind::Stream { shape, buffer_size })
    }

    /// Marks the descriptor transient, with the lifetime of one call of the SDFG.
    #[must_use]
    pub fn into_transient(mut self) -> DataDesc {
        self.transient = true;
        if self.lifetime == Lifetime::External {
            self.lifetime = Lifetime::Sdfg;
        }
        self
    }

    /// Sets the storage kind.
    #[must_use]
    pub fn with_storage(mut self, storage: Storage) -> DataDesc {
        self.storage = storage;
        self
    }

    /// Sets the lifetime.
    #[must_use]
    pub fn with_lifetime(mut self, lifetime: Lifetime) -> DataDesc {
        self.lifetime = lifetime;
        self
    }

    /// The layout of arrays and views, `None` for other kinds.
    pub fn layout(&self) -> Option<&Layout> {
        match &self.kind {
            DataKind::Array(l) | DataKind::View(l) => Some(l),
            _ => None,
        }
    }

    /// The shape that memlets index: `[1]` for a scalar, the outer shape for
    /// streams and container arrays, empty for structures (which are not
    /// indexed by memlets).
    pub fn shape(&self) -> Vec<SymExpr> {
        match &self.kind {
            DataKind::Scalar => vec![SymExpr::int(1)],
            DataKind::Array(l) | DataKind::View(l) => l.shape.clone(),
            DataKind::Stream { shape, .. } | DataKind::ContainerArray { shape, .. } => {
                shape.clone()
            }
            DataKind::Structure { .. } => Vec::new(),
        }
    }

    /// [`shape`](Self::shape) borrowed, without copying it: what the
    /// validator checks every memlet against.
    pub fn dims(&self) -> &[SymExpr] {
        static SCALAR: [SymExpr; 1] = [SymExpr::int(1)];
        match &self.kind {
            DataKind::Scalar => &SCALAR,
            DataKind::Array(l) | DataKind::View(l) => &l.shape,
            DataKind::Stream { shape, .. } | DataKind::ContainerArray { shape, .. } => shape,
            DataKind::Structure { .. } => &[],
        }
    }

    /// Number of dimensions memlets use to index the container.
    pub fn rank(&self) -> usize {
        match &self.kind {
            DataKind::Scalar => 1,
            DataKind::Array(l) | DataKind::View(l) => l.shape.len(),
            DataKind::Stream { shape, .. } | DataKind::ContainerArray { shape, .. } => shape.len(),
            DataKind::Structure { .. } => 0,
        }
    }

    /// Number of elements allocated (1 for a scalar). `None` for structures,
    /// streams and container arrays, whose footprint is not a flat element count.
    pub fn total_elements(&self) -> Option<SymExpr> {
        match &self.kind {
            DataKind::Scalar => Some(SymExpr::int(1)),
            DataKind::Array(l) | DataKind::View(l) => Some(l.total_size.clone()),
            _ => None,
        }
    }

    /// Bytes allocated, where [`total_elements`](Self::total_elements) is defined.
    pub fn total_bytes(&self) -> Option<SymExpr> {
        let bytes = i64::try_from(self.dtype.size_bytes()).unwrap_or(i64::MAX);
        self.total_elements().map(|n| n * bytes)
    }

    /// True for views.
    pub fn is_view(&self) -> bool {
        matches!(self.kind, DataKind::View(_))
    }

    /// True for scalars.
    pub fn is_scalar(&self) -> bool {
        matches!(self.kind, DataKind::Scalar)
    }

    /// The kind's name as it appears in messages (`"array"`).
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            DataKind::Scalar => "scalar",
            DataKind::Array(_) => "array",
            DataKind::View(_) => "view",
            DataKind::Stream { .. } => "stream",
            DataKind::Structure { .. } => "structure",
            DataKind::ContainerArray { .. } => "container array",
        }
    }

    /// Symbols the descriptor's shape, strides and sizes depend on.
    pub fn free_symbols(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for e in self.expressions() {
            out.extend(e.free_symbols());
        }
        out
    }

    /// Every symbolic expression of the descriptor (shapes, strides,
    /// offsets, sizes, a stream's capacity, its members'), for the checks
    /// that hold of each one alike.
    pub fn expressions(&self) -> Vec<&SymExpr> {
        let mut out = Vec::new();
        self.expressions_into(&mut out);
        out
    }

    /// [`expressions`](Self::expressions), to rewrite in place: a pass
    /// that renames symbols (inlining a nested SDFG) rewrites every one.
    pub fn expressions_mut(&mut self) -> Vec<&mut SymExpr> {
        let mut out = Vec::new();
        self.expressions_into_mut(&mut out);
        out
    }

    fn expressions_into_mut<'a>(&'a mut self, out: &mut Vec<&'a mut SymExpr>) {
        match &mut self.kind {
            DataKind::Scalar => {}
            DataKind::Array(l) | DataKind::View(l) => {
                out.extend(l.shape.iter_mut().chain(&mut l.strides));
                out.push(&mut l.offset);
                out.push(&mut l.total_size);
            }
            DataKind::Stream { shape, buffer_size } => {
                out.extend(shape.iter_mut());
                out.push(buffer_size);
            }
            DataKind::Structure { members } => {
                for m in members.values_mut() {
                    m.expressions_into_mut(out);
                }
            }
            DataKind::ContainerArray { shape, element } => {
                out.extend(shape.iter_mut());
                element.expressions_into_mut(out);
            }
        }
    }

    fn expressions_into<'a>(&'a self, out: &mut Vec<&'a SymExpr>) {
        match &self.kind {
            DataKind::Scalar => {}
            DataKind::Array(l) | DataKind::View(l) => out.extend(l.expressions()),
            DataKind::Stream { shape, buffer_size } => {
                out.extend(shape.iter().chain([buffer_size]));
            }
            DataKind::Structure { members } => {
                for m in members.values() {
                    m.expressions_into(out);
                }
            }
            DataKind::ContainerArray { shape, element } => {
                out.extend(shape);
                element.expressions_into(out);
            }
        }
    }
}
