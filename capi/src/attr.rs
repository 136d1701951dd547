//! Attribute values in and out of `hipdnnBackendSetAttribute` / `hipdnnBackendGetAttribute`.
//!
//! [`In`] reads a typed element array from the caller (type first, then null, then count,
//! as upstream's DescriptorAttributeUtils orders the checks); [`Out`] writes one back with the count query rules:
//! a null array or `requestedElementCount == 0` only writes `*elementCount` (which must then
//! be non-null), a negative request is BAD_PARAM, a request smaller than the value's element
//! count is BAD_PARAM, and otherwise the elements are copied and `*elementCount` written when
//! non-null. Element sizes are those of the C types: 8 for INT64/DOUBLE/pointers, 4 for FLOAT
//! and every C enum, 1 for BOOLEAN (C++ `bool`) and CHAR.

use crate::abi::ty;
use crate::error::{Ffi, err};
use hipdnn_backend::Status;
use std::ffi::c_void;

/// A SetAttribute call's value.
pub struct In {
    /// Attribute name (for messages).
    pub name: i32,
    /// Attribute type given.
    pub ty: i32,
    /// Element count given.
    pub count: i64,
    /// Element array.
    pub ptr: *const c_void,
}

impl In {
    fn check(&self, want: i32) -> Ffi<usize> {
        if self.ty != want {
            return Err(err(
                Status::BadParam,
                format!(
                    "attribute {}: type {} given, {} expected",
                    self.name, self.ty, want
                ),
            ));
        }
        if self.ptr.is_null() {
            return Err(err(
                Status::BadParamNullPointer,
                format!("attribute {}: the element array is null", self.name),
            ));
        }
        usize::try_from(self.count).map_err(|_| {
            err(
                Status::BadParam,
                format!(
                    "attribute {}: negative element count {}",
                    self.name, self.count
                ),
            )
        })
    }

    fn one(&self, want: i32) -> Ffi {
        if self.check(want)? != 1 {
            return Err(err(
                Status::BadParam,
                format!(
                    "attribute {}: element count {} given, 1 expected",
                    self.name, self.count
                ),
            ));
        }
        Ok(())
    }

    /// Reads `n` elements of `T`.
    fn read<T: Copy>(&self, n: usize) -> Vec<T> {
        // SAFETY: the caller passed an array of `count == n` elements of the C type matching
        // `ty`, which `T` mirrors; read unaligned to accept any caller alignment.
        (0..n)
            .map(|i| unsafe { std::ptr::read_unaligned((self.ptr as *const T).add(i)) })
            .collect()
    }

    /// INT64 array.
    pub fn i64s(&self) -> Ffi<Vec<i64>> {
        let n = self.check(ty::INT64)?;
        Ok(self.read(n))
    }

    /// One INT64.
    pub fn i64(&self) -> Ffi<i64> {
        self.one(ty::INT64)?;
        Ok(self.read::<i64>(1)[0])
    }

    /// One BOOLEAN (1 byte, non-zero = true).
    pub fn bool(&self) -> Ffi<bool> {
        self.one(ty::BOOLEAN)?;
        Ok(self.read::<u8>(1)[0] != 0)
    }

    /// One FLOAT, or one DOUBLE when `ty` is DOUBLE.
    pub fn f64(&self) -> Ffi<f64> {
        if self.ty == ty::DOUBLE {
            self.one(ty::DOUBLE)?;
            return Ok(self.read::<f64>(1)[0]);
        }
        self.one(ty::FLOAT)?;
        Ok(f64::from(self.read::<f32>(1)[0]))
    }

    /// One 4-byte C enum of attribute type `want`.
    pub fn enum32(&self, want: i32) -> Ffi<i32> {
        self.one(want)?;
        Ok(self.read::<i32>(1)[0])
    }

    /// Pointer array of attribute type `want` (VOID_PTR, HANDLE, BACKEND_DESCRIPTOR).
    pub fn ptrs(&self, want: i32) -> Ffi<Vec<usize>> {
        let n = self.check(want)?;
        Ok(self.read::<usize>(n))
    }

    /// One pointer of attribute type `want`.
    pub fn ptr(&self, want: i32) -> Ffi<usize> {
        self.one(want)?;
        Ok(self.read::<usize>(1)[0])
    }

    /// Raw bytes of a 1-byte-element attribute type `want` (CHAR).
    pub fn bytes(&self, want: i32) -> Ffi<Vec<u8>> {
        let n = self.check(want)?;
        Ok(self.read(n))
    }

    /// CHAR array as text (up to the first NUL).
    pub fn text(&self) -> Ffi<String> {
        let n = self.check(ty::CHAR)?;
        let b: Vec<u8> = self.read(n);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8(b[..end].to_vec()).map_err(|_| {
            err(
                Status::BadParam,
                format!("attribute {}: text is not UTF-8", self.name),
            )
        })
    }

    /// NOT_SUPPORTED for this attribute on `what`.
    pub fn unsupported(&self, what: &str) -> crate::error::BackendErrorAlias {
        err(
            Status::NotSupported,
            format!("attribute {} is not supported on {what}", self.name),
        )
    }
}

/// A GetAttribute call's destination.
pub struct Out {
    /// Attribute name (for messages).
    pub name: i32,
    /// Attribute type asked for.
    pub ty: i32,
    /// Requested element count.
    pub requested: i64,
    /// Where the element count goes (may be null outside count queries).
    pub count: *mut i64,
    /// Element array (null for a count query).
    pub ptr: *mut c_void,
}

impl Out {
    /// Checks the type and the request; `Ok(None)` when this is a count query that has been
    /// answered with `n`, `Ok(Some(n))` when `n` elements must be written.
    pub fn begin(&self, want: i32, n: usize) -> Ffi<Option<usize>> {
        if self.ty != want {
            return Err(err(
                Status::BadParam,
                format!(
                    "attribute {}: type {} asked for, the attribute has type {}",
                    self.name, self.ty, want
                ),
            ));
        }
        if self.requested < 0 {
            return Err(err(
                Status::BadParam,
                format!("attribute {}: negative requested count", self.name),
            ));
        }
        if self.ptr.is_null() || self.requested == 0 {
            if self.count.is_null() {
                return Err(err(
                    Status::BadParamNullPointer,
                    format!(
                        "attribute {}: count query with a null elementCount",
                        self.name
                    ),
                ));
            }
            // SAFETY: non-null, valid for a write (caller contract).
            unsafe { *self.count = n as i64 };
            return Ok(None);
        }
        if (self.requested as u64) < n as u64 {
            return Err(err(
                Status::BadParam,
                format!(
                    "attribute {}: {} elements requested, the value has {n}",
                    self.name, self.requested
                ),
            ));
        }
        Ok(Some(n))
    }

    /// Writes `values` (after [`Out::begin`] said so) and the count.
    pub fn write<T: Copy>(&self, values: &[T]) {
        for (i, v) in values.iter().enumerate() {
            // SAFETY: the caller's array holds `requested >= values.len()` elements of the C
            // type `T` mirrors; written unaligned to accept any caller alignment.
            unsafe { std::ptr::write_unaligned((self.ptr as *mut T).add(i), *v) };
        }
        if !self.count.is_null() {
            // SAFETY: non-null, valid for a write.
            unsafe { *self.count = values.len() as i64 };
        }
    }

    /// Typed array out.
    pub fn put<T: Copy>(&self, want: i32, values: &[T]) -> Ffi {
        if self.begin(want, values.len())?.is_some() {
            self.write(values);
        }
        Ok(())
    }

    /// Text out as CHAR with a NUL terminator (the count includes it).
    pub fn put_text(&self, text: &str) -> Ffi {
        let mut b = text.as_bytes().to_vec();
        b.push(0);
        self.put(ty::CHAR, &b)
    }

    /// NOT_SUPPORTED for this attribute on `what`.
    pub fn unsupported(&self, what: &str) -> crate::error::BackendErrorAlias {
        err(
            Status::NotSupported,
            format!("attribute {} is not supported on {what}", self.name),
        )
    }
}
