//! NumPy `.npy` files in and out, so that references computed by NumPy can be
//! compared with simulated runs element by element.
//!
//! Built on `npyz`. Every dtype of the IR maps to the NumPy type of the same
//! name; arrays are C-ordered (NumPy's default), scalars have shape `()`.

use crate::ArrayValue;
use crate::value::Elements;
use npyz::{TypeChar, WriterBuilder};
use num_complex::Complex;
use sdfg_ir::DType;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a `.npy` file could not be read or written.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be opened, read or written. The reader's
    /// message can show the whole header it could not parse (a 60 KB
    /// header made a 140 KB message): cut by
    /// [`sdfg_ir::quote::cut_message`].
    #[error("`{}`: {}", path.display(), sdfg_ir::quote::cut_message(&source.to_string()))]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file holds a type the IR has no dtype for (strings, objects,
    /// structured records, big-endian data).
    #[error("`{}`: unsupported array type {}", path.display(), sdfg_ir::quote(.dtype))]
    UnsupportedType {
        /// The file.
        path: PathBuf,
        /// NumPy's description of the type.
        dtype: String,
    },
    /// A file shorter than its header says it is: a header, or data for
    /// the shape it declares, that the file does not hold. Checked before
    /// anything is allocated, so a 14-byte file declaring gigabytes is an
    /// error, not an abort.
    #[error("`{}`: the file has {actual} bytes but declares {declared}", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The bytes its header implies (header, or header and data).
        declared: u128,
        /// The bytes it has.
        actual: u64,
    },
    /// A Fortran-ordered array.
    #[error("`{}`: Fortran-ordered arrays are not supported; save with np.ascontiguousarray", path.display())]
    FortranOrder {
        /// The file.
        path: PathBuf,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> NpyError + '_ {
    move |source| NpyError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The IR dtype of a NumPy type string (`<f8` is `float64`).
fn dtype_of(t: &npyz::TypeStr) -> Option<DType> {
    let little = !matches!(t.endianness(), npyz::Endianness::Big) || t.size_field() == 1;
    if !little {
        return None;
    }
    Some(match (t.type_char(), t.size_field()) {
        (TypeChar::Bool, 1) => DType::Bool,
        (TypeChar::Int, 1) => DType::Int8,
        (TypeChar::Int, 2) => DType::Int16,
        (TypeChar::Int, 4) => DType::Int32,
        (TypeChar::Int, 8) => DType::Int64,
        (TypeChar::Uint, 1) => DType::UInt8,
        (TypeChar::Uint, 2) => DType::UInt16,
        (TypeChar::Uint, 4) => DType::UInt32,
        (TypeChar::Uint, 8) => DType::UInt64,
        (TypeChar::Float, 4) => DType::Float32,
        (TypeChar::Float, 8) => DType::Float64,
        (TypeChar::Complex, 8) => DType::Complex64,
        (TypeChar::Complex, 16) => DType::Complex128,
        _ => return None,
    })
}

/// The length of a `.npy` file's preamble and header, from its first 12
/// bytes (magic, version, then a 2-byte header length in version 1 and a
/// 4-byte one after); `None` where it is not a `.npy` preamble (`npyz`
/// reports that).
fn header_end(start: &[u8]) -> Option<u128> {
    match start {
        [0x93, b'N', b'U', b'M', b'P', b'Y', 1, _, a, b, ..] => {
            Some(10 + u128::from(u16::from_le_bytes([*a, *b])))
        }
        [0x93, b'N', b'U', b'M', b'P', b'Y', 2 | 3, _, a, b, c, d, ..] => {
            Some(12 + u128::from(u32::from_le_bytes([*a, *b, *c, *d])))
        }
        _ => None,
    }
}

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<ArrayValue, NpyError> {
    use std::io::Read as _;
    let mut file = File::open(path).map_err(io_error(path))?;
    let actual = file.metadata().map_err(io_error(path))?.len();
    let mut start = Vec::with_capacity(12);
    (&mut file)
        .take(12)
        .read_to_end(&mut start)
        .map_err(io_error(path))?;
    let truncated = |declared: u128| NpyError::Truncated {
        path: path.to_owned(),
        declared,
        actual,
    };
    let header = header_end(&start);
    if let Some(end) = header
        && end > u128::from(actual)
    {
        return Err(truncated(end));
    }
    let reader = std::io::Cursor::new(start).chain(file);
    let npy = npyz::NpyFile::new(BufReader::new(reader)).map_err(io_error(path))?;
    // The data the shape declares must be in the file before it is
    // allocated.
    let data = npy.shape().iter().try_fold(
        u128::from(npy.dtype().num_bytes().unwrap_or(1) as u64),
        |acc, &d| acc.checked_mul(u128::from(d)),
    );
    let needed = data.and_then(|d| d.checked_add(header.unwrap_or(0)));
    match needed {
        Some(n) if n <= u128::from(actual) => {}
        _ => return Err(truncated(needed.unwrap_or(u128::MAX))),
    }
    let unsupported = |npy: &npyz::NpyFile<_>| NpyError::UnsupportedType {
        path: path.to_owned(),
        dtype: format!("{:?}", npy.dtype()),
    };
    let npyz::DType::Plain(type_str) = npy.dtype() else {
        return Err(unsupported(&npy));
    };
    let dtype = dtype_of(&type_str).ok_or_else(|| unsupported(&npy))?;
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(NpyError::FortranOrder {
            path: path.to_owned(),
        });
    }
    let shape: Vec<usize> = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    let e = io_error(path);
    let elements = match dtype {
        DType::Bool => Elements::Bool(npy.into_vec().map_err(e)?),
        DType::Int8 => Elements::I8(npy.into_vec().map_err(e)?),
        DType::Int16 => Elements::I16(npy.into_vec().map_err(e)?),
        DType::Int32 => Elements::I32(npy.into_vec().map_err(e)?),
        DType::Int64 => Elements::I64(npy.into_vec().map_err(e)?),
        DType::UInt8 => Elements::U8(npy.into_vec().map_err(e)?),
        DType::UInt16 => Elements::U16(npy.into_vec().map_err(e)?),
        DType::UInt32 => Elements::U32(npy.into_vec().map_err(e)?),
        DType::UInt64 => Elements::U64(npy.into_vec().map_err(e)?),
        DType::Float32 => Elements::F32(npy.into_vec().map_err(e)?),
        DType::Float64 => Elements::F64(npy.into_vec().map_err(e)?),
        DType::Complex64 => Elements::C64(npy.into_vec::<Complex<f32>>().map_err(e)?),
        DType::Complex128 => Elements::C128(npy.into_vec::<Complex<f64>>().map_err(e)?),
    };
    Ok(ArrayValue::new(shape, elements))
}

/// Writes an array as a `.npy` file (C order, little endian).
pub fn write(path: &Path, value: &ArrayValue) -> Result<(), NpyError> {
    let shape: Vec<u64> = value.shape.iter().map(|&d| d as u64).collect();
    fn emit<T: npyz::AutoSerialize + Copy>(
        path: &Path,
        shape: &[u64],
        data: &[T],
    ) -> Result<(), NpyError> {
        let file = File::create(path).map_err(io_error(path))?;
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(BufWriter::new(file))
            .begin_nd()
            .map_err(io_error(path))?;
        writer
            .extend(data.iter().copied())
            .map_err(io_error(path))?;
        writer.finish().map_err(io_error(path))
    }
    match &value.elements {
        Elements::Bool(v) => emit(path, &shape, v),
        Elements::I8(v) => emit(path, &shape, v),
        Elements::I16(v) => emit(path, &shape, v),
        Elements::I32(v) => emit(path, &shape, v),
        Elements::I64(v) => emit(path, &shape, v),
        Elements::U8(v) => emit(path, &shape, v),
        Elements::U16(v) => emit(path, &shape, v),
        Elements::U32(v) => emit(path, &shape, v),
        Elements::U64(v) => emit(path, &shape, v),
        Elements::F32(v) => emit(path, &shape, v),
        Elements::F64(v) => emit(path, &shape, v),
        Elements::C64(v) => emit(path, &shape, v),
        Elements::C128(v) => emit(path, &shape, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sdfg-sim-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn every_dtype_round_trips() {
        for dtype in DType::ALL {
            let mut v = ArrayValue::zeros(dtype, vec![2, 3]);
            for i in 0..6 {
                v.elements
                    .set(i, crate::Value::Int(i as i64 * 7 - 3).cast(dtype));
            }
            let path = scratch(&format!("{dtype}.npy"));
            write(&path, &v).unwrap();
            assert_eq!(read(&path).unwrap(), v, "{dtype}");
        }
    }

    #[test]
    fn scalars_have_an_empty_shape() {
        let v = ArrayValue::f64(vec![], vec![2.5]);
        let path = scratch("scalar.npy");
        write(&path, &v).unwrap();
        assert_eq!(read(&path).unwrap(), v);
    }

    #[test]
    fn missing_and_malformed_files_are_errors() {
        assert!(matches!(
            read(Path::new("/nonexistent/x.npy")),
            Err(NpyError::Io { .. })
        ));
        let path = scratch("garbage.npy");
        std::fs::write(&path, b"not an npy file").unwrap();
        assert!(matches!(read(&path), Err(NpyError::Io { .. })));
    }
}
