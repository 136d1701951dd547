//! Typed tensor buffers and variant packs.
//!
//! A [`Buffer<T>`] holds `len` elements of `T` in memory that is 64-byte aligned (more than the
//! 16-byte default tensor alignment of hipDNN, so every buffer satisfies any alignment a graph
//! asks for up to 64). Host buffers live in ordinary memory; device buffers (when a GPU engine
//! serves the handle) live on the handle's GPU and are copied on `to_vec`.
//!
//! A [`VariantPack`] binds tensors to buffers for one `execute` call (upstream: the
//! `std::unordered_map<int64_t, void*>` variant pack) — by UID, by [`crate::TensorId`] or by
//! tensor name (as cuDNN frontend binds by tensor object), the last two resolved against the
//! graph at execute time. Inputs are bound by shared reference, outputs by mutable reference,
//! so the borrow checker rules out a buffer written while read.

use crate::{Error, ErrorCode, Graph, Handle, TensorId};
use bytemuck::{Pod, Zeroable};
use half::{bf16, f16};
use hipdnn_backend::BufferRef;
use hipdnn_backend::engine::TensorBinding;
use hipdnn_hip::safe::DeviceBuffer;
use std::borrow::Cow;
use std::marker::PhantomData;

/// Alignment in bytes of every buffer's first element.
pub const BUFFER_ALIGNMENT: usize = 64;

#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Chunk([u8; BUFFER_ALIGNMENT]);

/// An element type a buffer can hold, with its schema data type and little-endian codec:
/// `f32` (FLOAT), `f64` (DOUBLE), [`half::f16`] (HALF), [`half::bf16`] (BFLOAT16), `i32`
/// (INT32), `i64` (INT64), `i8` (INT8), `u8` (UINT8), `bool` (BOOLEAN). Types without a Rust
/// element (FP8 and narrower) are carried as `Buffer<u8>` of their bytes.
///
/// ```
/// use hipdnn::{DataType, Element, half::bf16};
/// fn tensor_type<T: Element>(_: &[T]) -> DataType {
///     T::DATA_TYPE
/// }
/// assert_eq!(tensor_type(&[1f32]), DataType::Float);
/// assert_eq!(tensor_type(&[bf16::ONE]), DataType::BFloat16);
/// assert_eq!(<i64 as Element>::SIZE, 8);
/// ```
pub trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// Schema `DataType` of this element (e.g. `FLOAT` for `f32`).
    const DATA_TYPE: crate::DataType;
    /// Size of one element in bytes.
    const SIZE: usize;
    /// Writes `self` as little-endian bytes into `out[..Self::SIZE]`.
    fn write_le(self, out: &mut [u8]);
    /// Reads one element from `bytes[..Self::SIZE]` (little-endian).
    fn read_le(bytes: &[u8]) -> Self;
    /// `data` as little-endian bytes (`data.len() * SIZE` of them): borrowed where the
    /// in-memory form already is that (the numeric types on a little-endian host), else
    /// converted element by element.
    fn le_bytes(data: &[Self]) -> Cow<'_, [u8]>
    where
        Self: Sized,
    {
        let mut out = vec![0u8; data.len() * Self::SIZE];
        for (c, v) in out.chunks_exact_mut(Self::SIZE).zip(data) {
            v.write_le(c);
        }
        Cow::Owned(out)
    }
}

macro_rules! element {
    ($t:ty, $dt:ident, $n:expr) => {
        impl Element for $t {
            const DATA_TYPE: crate::DataType = crate::DataType::$dt;
            const SIZE: usize = $n;
            fn write_le(self, out: &mut [u8]) {
                out[..$n].copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(&bytes[..$n]);
                <$t>::from_le_bytes(a)
            }
            fn le_bytes(data: &[Self]) -> Cow<'_, [u8]> {
                if cfg!(target_endian = "little") {
                    Cow::Borrowed(bytemuck::cast_slice(data))
                } else {
                    Cow::Owned(data.iter().flat_map(|v| v.to_le_bytes()).collect())
                }
            }
        }
    };
}
element!(f32, Float, 4);
element!(f64, Double, 8);
element!(f16, Half, 2);
element!(bf16, BFloat16, 2);
element!(i32, Int32, 4);
element!(i64, Int64, 8);
element!(i8, Int8, 1);
element!(u8, Uint8, 1);

impl Element for bool {
    const DATA_TYPE: crate::DataType = crate::DataType::Boolean;
    const SIZE: usize = 1;
    fn write_le(self, out: &mut [u8]) {
        out[0] = u8::from(self);
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// Where a buffer's memory lives.
enum Storage {
    Host(Vec<Chunk>),
    /// Device memory of `len * T::SIZE` bytes (at least 1), 256-byte aligned by the driver.
    Device(DeviceBuffer<u8>),
}

/// `len` elements of `T` in 64-byte-aligned memory, on the host or on a handle's GPU.
///
/// Host buffers are made by [`Buffer::zeros`], [`Buffer::filled`], [`Buffer::from_slice`] and
/// [`Buffer::from_ndarray`]; buffers on a handle's device (the host for a CPU handle) by
/// [`Buffer::alloc`], [`Buffer::from_slice_on`] and [`Buffer::to_handle`].
///
/// A buffer is untyped with respect to shape: it holds the elements of one tensor in the
/// layout the tensor's strides describe (row-major for a tensor given dims only), at least
/// `1 + Σ (dim−1)·stride` of them. `T` must match the tensor's data type (`f32` for FLOAT,
/// [`half::f16`] for HALF, [`half::bf16`] for BFLOAT16, `i32` for INT32, `bool` for BOOLEAN,
/// … — [`Element::DATA_TYPE`]); `execute` refuses another `T`. On a GPU handle, allocate
/// through the handle ([`Buffer::alloc`], [`Buffer::from_slice_on`]) so the buffers live
/// where its engines run; code written that way runs unchanged on a CPU handle.
///
/// ```
/// use hipdnn::{Buffer, Handle};
/// let a = Buffer::from_slice(&[1f32, 2., 3., 4., 5., 6.]); // host
/// assert_eq!((a.len(), a.byte_len(), a.is_device()), (6, 24, false));
/// assert_eq!(a.to_ndarray(&[2, 3])?, hipdnn::ndarray::arr2(&[[1f32, 2., 3.], [4., 5., 6.]]).into_dyn());
///
/// let handle = Handle::new()?;
/// let mut b = Buffer::<f32>::alloc(&handle, 6)?; // on the handle's device, zero-filled
/// b.copy_from_slice(&[0.5; 6])?;                  // refill without a new allocation
/// b.copy_from_slice_at(4, &[9., 9.])?;
/// assert_eq!(b.to_vec()?, [0.5, 0.5, 0.5, 0.5, 9., 9.]);
///
/// let m = Buffer::from_ndarray(&hipdnn::ndarray::arr2(&[[1i32, 2], [3, 4]]).t()); // a transposed view
/// assert_eq!(m.to_vec()?, [1, 3, 2, 4]); // copied in logical row-major order
/// # Ok::<(), hipdnn::Error>(())
/// ```
pub struct Buffer<T: Element> {
    storage: Storage,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("elements", &self.len)
            .field("bytes", &self.byte_len())
            .field(
                "location",
                &if self.is_device() { "device" } else { "host" },
            )
            .finish()
    }
}

impl<T: Element> Buffer<T> {
    /// A host buffer of `len` elements, zero-filled (all bytes 0).
    pub fn zeros(len: usize) -> Self {
        let chunks = (len * T::SIZE).div_ceil(BUFFER_ALIGNMENT);
        Buffer {
            storage: Storage::Host(vec![Chunk([0; BUFFER_ALIGNMENT]); chunks]),
            len,
            _t: PhantomData,
        }
    }

    /// A host buffer of `len` elements, each equal to `value`.
    pub fn filled(len: usize, value: T) -> Self {
        let mut b = Self::zeros(len);
        for c in b.host_bytes_mut().chunks_exact_mut(T::SIZE) {
            value.write_le(c);
        }
        b
    }

    /// A host buffer holding a copy of `data`.
    pub fn from_slice(data: &[T]) -> Self {
        let mut b = Self::zeros(data.len());
        for (c, v) in b.host_bytes_mut().chunks_exact_mut(T::SIZE).zip(data) {
            v.write_le(c);
        }
        b
    }

    /// A host buffer holding the elements of `array` in logical (row-major) order, i.e. a
    /// packed tensor whose strides are the row-major strides of `array.shape()` (a transposed
    /// view is copied element by element into row-major order). To keep the array's own memory
    /// layout instead, use [`Buffer::from_array`] with [`crate::TensorAttributes::for_array`].
    pub fn from_ndarray<S, D>(array: &ndarray::ArrayBase<S, D>) -> Self
    where
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        let data: Vec<T> = array.iter().copied().collect();
        Self::from_slice(&data)
    }

    /// A host buffer for a tensor described by [`crate::TensorAttributes::for_array`] of the
    /// same `array`: the two agree on the layout, so a transposed or otherwise permuted view is
    /// honoured, never misread.
    ///
    /// When the array's elements fill one contiguous block with non-negative strides (standard
    /// layout, Fortran layout, any transpose of them), the block is copied as it lies in memory
    /// and [`array_strides`] gives the array's own strides; otherwise (a sliced or reversed
    /// view) the elements are copied in row-major order and the strides are row-major.
    pub fn from_array<S, D>(array: &ndarray::ArrayBase<S, D>) -> Self
    where
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        match memory_block(array) {
            Some(block) => Self::from_slice(block),
            None => Self::from_ndarray(array),
        }
    }

    /// Copies the elements out as an array of the tensor's static rank `D` (e.g.
    /// `to_array::<ndarray::Ix2>(g.tensor_attributes(y))`), reading each element at its place
    /// under the tensor's dims and strides (`offset = Σ index·stride`).
    ///
    /// # Errors
    /// `INVALID_VALUE` when `D`'s rank differs from the tensor's, the tensor's data type is set
    /// and is not `T`'s, a dim or stride is negative, strides and dims differ in length, or the
    /// buffer is shorter than the tensor's extent; as [`Buffer::to_vec`] for a device buffer.
    pub fn to_array<D: ndarray::Dimension>(
        &self,
        tensor: &crate::TensorAttributes,
    ) -> Result<ndarray::Array<T, D>, Error> {
        let name = &tensor.name;
        if let Some(n) = D::NDIM
            && n != tensor.dims.len()
        {
            return Err(Error::invalid_value(format!(
                "tensor '{name}' has {} dims; to_array asked for rank {n}",
                tensor.dims.len()
            )));
        }
        if tensor.data_type != crate::DataType::Unset && tensor.data_type != T::DATA_TYPE {
            return Err(Error::invalid_value(format!(
                "tensor '{name}' is {}; to_array asked for {} elements",
                tensor.data_type.schema_name(),
                T::DATA_TYPE.schema_name()
            )));
        }
        let bad = || {
            Error::invalid_value(format!(
                "tensor '{name}': dims {:?} strides {:?} do not fit a buffer of {} elements",
                tensor.dims, tensor.strides, self.len
            ))
        };
        if tensor.strides.len() != tensor.dims.len() {
            return Err(bad());
        }
        let need = hipdnn_backend::tensor_size::byte_extent(&tensor.dims, &tensor.strides, 1)
            .ok_or_else(bad)?;
        if need > self.len {
            return Err(bad());
        }
        let shape: Vec<usize> = tensor.dims.iter().map(|d| *d as usize).collect();
        let strides: Vec<usize> = tensor.strides.iter().map(|s| *s as usize).collect();
        let data = self.to_vec()?;
        let dyn_array = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&shape), |ix| {
            let off: usize = strides.iter().enumerate().map(|(d, s)| ix[d] * s).sum();
            data[off]
        });
        dyn_array.into_dimensionality::<D>().map_err(|e| {
            Error::invalid_value(format!(
                "tensor '{name}': cannot take the array's rank: {e}"
            ))
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes (`len * T::SIZE`).
    pub fn byte_len(&self) -> usize {
        self.len * T::SIZE
    }

    /// True when the buffer lives in GPU memory.
    pub fn is_device(&self) -> bool {
        matches!(self.storage, Storage::Device(_))
    }

    /// A lease of the device memory (`None` for a host buffer).
    pub(crate) fn device_lease(&self) -> Option<hipdnn_hip::AllocationLease> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Device(d) => Some(d.lease()),
        }
    }

    /// The buffer's bytes (little-endian elements) for a host buffer; `None` on a device.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.storage {
            Storage::Host(c) => Some(&bytemuck::cast_slice::<Chunk, u8>(c)[..self.byte_len()]),
            Storage::Device(_) => None,
        }
    }

    /// Host bytes of a buffer built by a host constructor (never a device buffer).
    fn host_bytes_mut(&mut self) -> &mut [u8] {
        let n = self.byte_len();
        match &mut self.storage {
            Storage::Host(c) => &mut bytemuck::cast_slice_mut::<Chunk, u8>(c)[..n],
            Storage::Device(_) => &mut [],
        }
    }

    /// A zero-filled buffer of `len` elements on `handle`'s device (host memory for a CPU
    /// handle).
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` when the device allocation or copy fails (the driver's error name
    /// and text are in the message).
    pub fn alloc(handle: &Handle, len: usize) -> Result<Self, Error> {
        match handle.gpu_device() {
            None => Ok(Self::zeros(len)),
            // Zeroed on the device: no host staging buffer or copy.
            Some(dev) => {
                let bytes = (len * T::SIZE).max(1);
                let d = dev.alloc_zeroed::<u8>(bytes).map_err(device_error)?;
                Ok(Buffer {
                    storage: Storage::Device(d),
                    len,
                    _t: PhantomData,
                })
            }
        }
    }

    /// A copy of `data` on `handle`'s device (host memory for a CPU handle).
    ///
    /// # Errors
    /// As [`Buffer::alloc`].
    pub fn from_slice_on(handle: &Handle, data: &[T]) -> Result<Self, Error> {
        let Some(dev) = handle.gpu_device() else {
            return Ok(Self::from_slice(data));
        };
        // The elements' bytes as they are in memory where possible, one host-to-device copy.
        let bytes = T::le_bytes(data);
        let d = if bytes.is_empty() {
            dev.alloc_zeroed::<u8>(1)
        } else {
            dev.htod(&bytes)
        }
        .map_err(device_error)?;
        Ok(Buffer {
            storage: Storage::Device(d),
            len: data.len(),
            _t: PhantomData,
        })
    }

    /// Overwrites every element with `data` (host memory, or one host-to-device copy for a
    /// device buffer): refilling an input between executions without a new allocation.
    ///
    /// # Errors
    /// `INVALID_VALUE` when `data.len()` differs from [`Self::len`] (nothing is written);
    /// `HIPDNN_BACKEND_ERROR` when the device copy fails.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<(), Error> {
        if data.len() != self.len {
            return Err(Error::invalid_value(format!(
                "copy_from_slice: {} elements given for a buffer of {}",
                data.len(),
                self.len
            )));
        }
        self.copy_from_slice_at(0, data)
    }

    /// Overwrites elements `offset..offset + data.len()` with `data` (host memory, or one
    /// host-to-device copy for a device buffer): refilling part of an input, e.g. chunk by
    /// chunk while the next chunk is being prepared on other threads.
    ///
    /// # Errors
    /// `INVALID_VALUE` when the range does not fit in the buffer (nothing is written);
    /// `HIPDNN_BACKEND_ERROR` when the device copy fails.
    pub fn copy_from_slice_at(&mut self, offset: usize, data: &[T]) -> Result<(), Error> {
        if offset
            .checked_add(data.len())
            .is_none_or(|end| end > self.len)
        {
            return Err(Error::invalid_value(format!(
                "copy_from_slice_at: {} elements at offset {offset} overrun a buffer of {}",
                data.len(),
                self.len
            )));
        }
        let bytes = T::le_bytes(data);
        let start = offset * T::SIZE;
        match &mut self.storage {
            Storage::Host(_) => {
                self.host_bytes_mut()[start..start + bytes.len()].copy_from_slice(&bytes);
                Ok(())
            }
            Storage::Device(_) if bytes.is_empty() => Ok(()),
            Storage::Device(d) => d.copy_from_host_at(start, &bytes).map_err(device_error),
        }
    }

    /// Copies `src[range]` into elements `offset..offset + range.len()`. For a device buffer
    /// and a page-locked `src` (both of one GPU handle) the copy is queued on the device's null
    /// stream — the stream the GPU engine executes on — and this returns before it runs:
    /// later executes and copies see the data, and the host can prepare the next part of
    /// `src` meanwhile; `src`'s next mutable access (and its drop) waits for the copy. Any
    /// other combination copies synchronously.
    ///
    /// # Errors
    /// `INVALID_VALUE` when `range` is not inside `src` or the destination range does not fit
    /// in the buffer (nothing is queued); `HIPDNN_BACKEND_ERROR` when the driver refuses the
    /// copy (another device's buffers, a broken context).
    pub fn copy_from_pinned(
        &mut self,
        offset: usize,
        src: &PinnedBuffer<T>,
        range: std::ops::Range<usize>,
    ) -> Result<(), Error>
    where
        T: Pod,
    {
        if range.start > range.end || range.end > src.len {
            return Err(Error::invalid_value(format!(
                "copy_from_pinned: source range {range:?} is not inside a pinned buffer of {}",
                src.len
            )));
        }
        let n = range.end - range.start;
        if offset.checked_add(n).is_none_or(|end| end > self.len) {
            return Err(Error::invalid_value(format!(
                "copy_from_pinned: {n} elements at offset {offset} overrun a buffer of {}",
                self.len
            )));
        }
        match (&mut self.storage, &src.storage) {
            (Storage::Device(d), PinnedStorage::Locked(p)) => {
                let stream = hipdnn_hip::safe::Stream::default_stream(d.device());
                d.copy_from_pinned_async(
                    offset * T::SIZE,
                    p,
                    range.start * T::SIZE..range.end * T::SIZE,
                    &stream,
                )
                .map_err(device_error)
            }
            _ => self.copy_from_slice_at(offset, &src[range]),
        }
    }

    /// A copy of this buffer on `handle`'s device (host memory for a CPU handle).
    ///
    /// # Errors
    /// As [`Buffer::alloc`].
    pub fn to_handle(&self, handle: &Handle) -> Result<Self, Error> {
        let bytes = self.bytes_vec()?;
        match handle.gpu_device() {
            None => {
                let mut b = Self::zeros(self.len);
                b.host_bytes_mut().copy_from_slice(&bytes);
                Ok(b)
            }
            Some(dev) => {
                let mut padded = bytes;
                if padded.is_empty() {
                    padded.push(0);
                }
                let d = dev.htod(&padded).map_err(device_error)?;
                Ok(Buffer {
                    storage: Storage::Device(d),
                    len: self.len,
                    _t: PhantomData,
                })
            }
        }
    }

    fn bytes_vec(&self) -> Result<Vec<u8>, Error> {
        match &self.storage {
            Storage::Host(c) => {
                Ok(bytemuck::cast_slice::<Chunk, u8>(c)[..self.byte_len()].to_vec())
            }
            Storage::Device(d) => {
                let mut v = d.to_vec().map_err(device_error)?;
                v.truncate(self.byte_len());
                Ok(v)
            }
        }
    }

    /// Copies the elements out (from the device for a device buffer).
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` when a device-to-host copy fails; never for a host buffer.
    pub fn to_vec(&self) -> Result<Vec<T>, Error> {
        Ok(self
            .bytes_vec()?
            .chunks_exact(T::SIZE)
            .map(T::read_le)
            .collect())
    }

    /// Copies the elements out as an array of `shape` (row-major).
    ///
    /// # Errors
    /// `INVALID_VALUE` when the product of `shape` differs from [`Self::len`]; as
    /// [`Buffer::to_vec`] for a device buffer.
    pub fn to_ndarray(&self, shape: &[usize]) -> Result<ndarray::ArrayD<T>, Error> {
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), self.to_vec()?).map_err(|e| {
            Error::invalid_value(format!(
                "buffer of {} elements cannot take shape {shape:?}: {e}",
                self.len
            ))
        })
    }

    pub(crate) fn as_input(&self) -> BufferRef<'_> {
        match &self.storage {
            Storage::Host(c) => {
                BufferRef::Host(&bytemuck::cast_slice::<Chunk, u8>(c)[..self.byte_len()])
            }
            Storage::Device(d) => BufferRef::Device {
                addr: d.device_ptr(),
                len: self.byte_len(),
            },
        }
    }

    pub(crate) fn as_output(&mut self) -> BufferRef<'_> {
        let n = self.byte_len();
        match &mut self.storage {
            Storage::Host(c) => {
                BufferRef::HostMut(&mut bytemuck::cast_slice_mut::<Chunk, u8>(c)[..n])
            }
            Storage::Device(d) => BufferRef::Device {
                addr: d.device_ptr(),
                len: n,
            },
        }
    }
}

/// The elements of `array` as they lie in memory, when they fill one contiguous block and every
/// stride is non-negative; `None` otherwise.
fn memory_block<S, D, T>(array: &ndarray::ArrayBase<S, D>) -> Option<&[T]>
where
    S: ndarray::Data<Elem = T>,
    D: ndarray::Dimension,
{
    if array.strides().iter().any(|s| *s < 0) {
        return None;
    }
    array.as_slice_memory_order()
}

/// Element strides of the buffer [`Buffer::from_array`] makes from `array`: the array's own
/// strides when its elements fill one contiguous block with non-negative strides, else packed
/// row-major strides of its shape. [`crate::TensorAttributes::for_array`] uses this rule.
pub fn array_strides<S, D, T>(array: &ndarray::ArrayBase<S, D>) -> Vec<i64>
where
    S: ndarray::Data<Elem = T>,
    D: ndarray::Dimension,
{
    let dims: Vec<i64> = array.shape().iter().map(|d| *d as i64).collect();
    if memory_block(array).is_some() {
        let strides: Vec<i64> = array.strides().iter().map(|s| *s as i64).collect();
        // A dim of extent 1 is never stepped; ndarray gives it any stride. Use the span of
        // the others, as a packed layout would (e.g. dims [1, 3, 2] → [6, 1, 3], not [1, 1, 3]).
        let span = dims
            .iter()
            .zip(&strides)
            .map(|(d, s)| d * s)
            .max()
            .unwrap_or(1)
            .max(1);
        dims.iter()
            .zip(&strides)
            .map(|(d, s)| if *d == 1 { span } else { *s })
            .collect()
    } else {
        let order: Vec<usize> = (0..dims.len()).collect();
        crate::packed_strides(&dims, &order)
    }
}

/// Host memory for data a handle's buffers are filled from or read into often: page-locked
/// (`hipHostMalloc` / `cuMemAllocHost`) on a GPU handle, so [`Buffer::copy_from_slice`] with
/// it as the source is one direct copy-engine transfer with no staging copy (on an H200 a
/// 6.3 MB upload took ~0.13 ms against ~0.36 ms from ordinary memory); ordinary 64-byte
/// aligned memory on a CPU handle. Dereferences to `[T]` (`len` elements, zero-filled at
/// allocation), so it is filled like a slice. Page-locked memory is a limited system
/// resource: allocate it once and reuse it.
///
/// Plain-data element types only (`f32`, `f64`, `f16`, `bf16`, the integers): every bit
/// pattern must be a value, which `bool` is not.
///
/// ```
/// use hipdnn::{Buffer, Handle, PinnedBuffer};
/// let handle = Handle::new()?;
/// let mut staging = PinnedBuffer::<f32>::alloc(&handle, 4)?;
/// assert_eq!(staging.is_page_locked(), handle.is_gpu());
/// staging.copy_from_slice(&[1., 2., 3., 4.]); // filled like a slice
/// let mut input = Buffer::<f32>::alloc(&handle, 4)?;
/// input.copy_from_slice(&staging)?;
/// assert_eq!(input.to_vec()?, [1., 2., 3., 4.]);
/// # Ok::<(), hipdnn::Error>(())
/// ```
pub struct PinnedBuffer<T: Element + Pod> {
    storage: PinnedStorage,
    len: usize,
    _t: PhantomData<T>,
}

enum PinnedStorage {
    Host(Vec<Chunk>),
    /// `len * T::SIZE` bytes (at least 1), page-aligned by the driver.
    Locked(hipdnn_hip::safe::PinnedHostBuffer<u8>),
}

impl<T: Element + Pod> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("elements", &self.len)
            .field(
                "page_locked",
                &matches!(self.storage, PinnedStorage::Locked(_)),
            )
            .finish()
    }
}

impl<T: Element + Pod> PinnedBuffer<T> {
    /// `len` zero-filled elements of host memory for `handle`: page-locked for its GPU, or
    /// ordinary memory for a CPU handle.
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` when the driver cannot lock `len` elements' worth of memory
    /// (its error name and text are in the message).
    pub fn alloc(handle: &Handle, len: usize) -> Result<Self, Error> {
        let bytes = len.checked_mul(T::SIZE).ok_or_else(|| {
            Error::invalid_value(format!(
                "PinnedBuffer::alloc: {len} elements of {} bytes overflow usize",
                T::SIZE
            ))
        })?;
        let storage = match handle.gpu_device() {
            None => PinnedStorage::Host(vec![
                Chunk([0; BUFFER_ALIGNMENT]);
                bytes.div_ceil(BUFFER_ALIGNMENT)
            ]),
            Some(dev) => {
                PinnedStorage::Locked(dev.alloc_pinned::<u8>(bytes.max(1)).map_err(device_error)?)
            }
        };
        Ok(PinnedBuffer {
            storage,
            len,
            _t: PhantomData,
        })
    }

    /// Whether the memory is page-locked (a GPU handle's).
    pub fn is_page_locked(&self) -> bool {
        matches!(self.storage, PinnedStorage::Locked(_))
    }

    fn bytes(&self) -> &[u8] {
        let n = self.len * T::SIZE;
        match &self.storage {
            PinnedStorage::Host(c) => &bytemuck::cast_slice(c)[..n],
            PinnedStorage::Locked(p) => &p[..n],
        }
    }
}

impl<T: Element + Pod> std::ops::Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // Both storages are at least 64-byte aligned, so the cast cannot fail.
        bytemuck::cast_slice(self.bytes())
    }
}

impl<T: Element + Pod> std::ops::DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let n = self.len * T::SIZE;
        let bytes = match &mut self.storage {
            PinnedStorage::Host(c) => &mut bytemuck::cast_slice_mut(c)[..n],
            PinnedStorage::Locked(p) => &mut p[..n],
        };
        bytemuck::cast_slice_mut(bytes)
    }
}

fn device_error(e: hipdnn_hip::DriverError) -> Error {
    Error::new(
        ErrorCode::HipdnnBackendError,
        format!("device memory operation failed: {e}"),
    )
    .with_cause(e)
}

/// Something a variant pack can bind to a UID: `&Buffer<T>` (an input) or `&mut Buffer<T>`
/// (an output).
///
/// ```
/// use hipdnn::{Bind, Buffer, DataType};
/// let (input, mut output) = (Buffer::<f32>::zeros(2), Buffer::<i32>::zeros(2));
/// assert!((&input).is_read_only());
/// assert!(!(&mut output).is_read_only());
/// assert_eq!((&mut output).element_type(), Some(DataType::Int32));
/// ```
pub trait Bind<'a> {
    /// The engine-facing view of the memory.
    fn bind(self) -> BufferRef<'a>;

    /// The schema data type of the buffer's elements (`T::DATA_TYPE` of a `Buffer<T>`), which
    /// `execute` compares with the bound tensor's; `None` for untyped memory.
    fn element_type(&self) -> Option<crate::DataType> {
        None
    }

    /// True for a read-only binding (`&Buffer<T>`), which `execute` refuses for a tensor the
    /// graph writes.
    fn is_read_only(&self) -> bool {
        false
    }

    /// A lease of the device memory behind the binding (`None` for host memory): what a
    /// device graph captured with the binding ([`crate::Handle::capture`]) keeps so that no
    /// replay reaches freed memory.
    fn lease(&self) -> Option<hipdnn_hip::AllocationLease> {
        None
    }
}

impl<'a, T: Element> Bind<'a> for &'a Buffer<T> {
    fn bind(self) -> BufferRef<'a> {
        self.as_input()
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn lease(&self) -> Option<hipdnn_hip::AllocationLease> {
        self.device_lease()
    }

    fn element_type(&self) -> Option<crate::DataType> {
        Some(T::DATA_TYPE)
    }
}

impl<'a, T: Element> Bind<'a> for &'a mut Buffer<T> {
    fn bind(self) -> BufferRef<'a> {
        self.as_output()
    }

    fn lease(&self) -> Option<hipdnn_hip::AllocationLease> {
        self.device_lease()
    }

    fn element_type(&self) -> Option<crate::DataType> {
        Some(T::DATA_TYPE)
    }
}

/// Tensor → buffer bindings for one `execute` call.
///
/// A tensor is named by its UID ([`VariantPack::with`], [`VariantPack::input`],
/// [`VariantPack::output`]), by its [`TensorId`] ([`VariantPack::bind`]) or by its name
/// ([`VariantPack::named`]); the last two are resolved against the graph when
/// `Graph::execute` runs, so they work with UIDs the build assigned. The pack must contain
/// every non-virtual tensor of the graph (runtime pass-by-value scalars too, as host buffers;
/// compile-time constant scalars need none). Sizes, element types and alignments are checked
/// before the engine runs.
///
/// A tensor bound twice keeps its last binding, whichever way it was named. A pack borrows
/// its buffers and is consumed by `execute`, so it is made anew for every execute. UIDs are
/// those of [`TensorAttributes::uid`](crate::TensorAttributes::uid) /
/// [`Graph::set_uid`](crate::Graph::set_uid); UIDs left unset are auto-assigned at build
/// ([`Graph::tensor_attributes`](crate::Graph::tensor_attributes) shows them after).
///
/// # Example
/// ```
/// use hipdnn::{Buffer, Graph, Handle, PointwiseAttributes, PointwiseMode, TensorAttributes as T};
/// use hipdnn::{DataType, VariantPack};
/// # fn main() -> hipdnn::Result<()> {
/// let mut g = Graph::new();
/// let a = g.tensor(T::new("a").data_type(DataType::Float).dims([3]));
/// let b = g.tensor(T::new("b").data_type(DataType::Float).dims([3]).uid(7));
/// let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
/// g.set_output(y, true).set_tensor_name(y, "sum");
/// let handle = Handle::cpu()?;
/// g.build(&handle)?;
/// let (ab, bb) = (Buffer::from_slice(&[1.0f32, 2.0, 3.0]), Buffer::from_slice(&[10.0f32; 3]));
/// let mut yb = Buffer::<f32>::zeros(3);
/// // By TensorId, by UID and by name: inputs `&buffer`, outputs `&mut buffer`.
/// let pack = VariantPack::new().bind(a, &ab).input(7, &bb).named("sum", &mut yb);
/// g.execute(&handle, pack, None)?;
/// assert_eq!(yb.to_vec()?, [11.0, 12.0, 13.0]);
/// # Ok(())
/// # }
/// ```
///
/// By UID only, and a missing binding:
/// ```
/// use hipdnn::{Buffer, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode,
///              TensorAttributes, VariantPack};
/// let handle = Handle::cpu()?;
/// let mut g = Graph::new();
/// g.set_io_data_type(DataType::Float).set_intermediate_data_type(DataType::Float);
/// let a = g.tensor(TensorAttributes::new("a").uid(10).dims([4]));
/// let b = g.tensor(TensorAttributes::new("b").uid(11).dims([4]));
/// let c = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Mul));
/// g.set_output(c, true).set_uid(c, 12);
/// g.build(&handle)?;
///
/// let (x, y) = (Buffer::from_slice(&[1f32, 2., 3., 4.]), Buffer::filled(4, 10f32));
/// let mut z = Buffer::<f32>::zeros(4);
/// // `input` / `output` say the direction; `with` takes either `&buf` or `&mut buf`.
/// let pack = VariantPack::new().input(10, &x).with(11, &y).output(12, &mut z);
/// assert_eq!((pack.len(), pack.uids()), (3, vec![10, 11, 12]));
/// g.execute(&handle, pack, None)?; // the CPU engine needs no workspace
/// assert_eq!(z.to_vec()?, [10., 20., 30., 40.]);
///
/// // A missing binding is refused before anything runs.
/// let err = g.execute(&handle, VariantPack::new().input(10, &x).output(12, &mut z), None);
/// assert_eq!(err.unwrap_err().code, hipdnn::ErrorCode::InvalidValue);
/// # Ok::<(), hipdnn::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct VariantPack<'a> {
    /// The UID bindings in binding order, handed to the backend as they are (no copy per
    /// execute).
    pub(crate) bindings: Vec<TensorBinding<'a>>,
    /// What `execute` checks of each binding, parallel to `bindings` (inline: no allocation).
    pub(crate) meta: smallvec::SmallVec<[BindMeta; 8]>,
    /// Bindings by [`TensorId`] or name, resolved to UIDs by [`VariantPack::resolve`].
    pending: Vec<Pending<'a>>,
    /// Binding counter: which of two bindings of one tensor came last.
    seq: u32,
    /// Execute-time shape overrides ([`VariantPack::override_shape`]), one per UID.
    pub(crate) overrides: Vec<hipdnn_backend::ShapeOverride>,
    /// Leases of the bound device buffers, which a capture keeps ([`Bind::lease`]).
    pub(crate) leases: smallvec::SmallVec<[hipdnn_hip::AllocationLease; 4]>,
}

/// What [`VariantPack`] keeps of a binding besides the memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BindMeta {
    /// The bound buffer's element type (checked against the tensor's data type); `None` for
    /// untyped memory.
    pub(crate) element_type: Option<crate::DataType>,
    /// Bound read-only (by `&Buffer`): must not be a tensor the graph writes.
    pub(crate) read_only: bool,
    /// When the binding was made (the pack's counter).
    seq: u32,
}

/// How a binding made by [`VariantPack::bind`] or [`VariantPack::named`] names its tensor.
#[derive(Debug)]
enum TensorKey {
    Id(TensorId),
    Name(String),
}

/// A binding whose UID is found at execute time.
#[derive(Debug)]
struct Pending<'a> {
    key: TensorKey,
    data: BufferRef<'a>,
    meta: BindMeta,
}

impl<'a> VariantPack<'a> {
    /// An empty pack.
    pub fn new() -> Self {
        VariantPack {
            bindings: Vec::new(),
            meta: smallvec::SmallVec::new(),
            pending: Vec::new(),
            seq: 0,
            overrides: Vec::new(),
            leases: smallvec::SmallVec::new(),
        }
    }

    fn meta_of(&mut self, buffer: &impl Bind<'a>) -> BindMeta {
        self.leases.extend(buffer.lease());
        self.seq += 1;
        BindMeta {
            element_type: buffer.element_type(),
            read_only: buffer.is_read_only(),
            seq: self.seq,
        }
    }

    /// Binds `uid` to a buffer: `&buffer` for an input, `&mut buffer` for an output.
    /// A second binding of the same UID replaces the first. The buffer's element type is kept:
    /// `Graph::execute` refuses a `Buffer<T>` whose element type differs from the tensor's data
    /// type (a `Buffer<u8>` may carry a type without a Rust element, e.g. FP8).
    pub fn with(mut self, uid: i64, buffer: impl Bind<'a>) -> Self {
        let meta = self.meta_of(&buffer);
        self.push(uid, buffer.bind(), meta);
        self
    }

    /// Adds a UID binding, replacing an earlier one of the same UID.
    fn push(&mut self, uid: i64, data: BufferRef<'a>, meta: BindMeta) {
        if let Some(i) = self.bindings.iter().position(|b| b.uid == uid) {
            self.bindings.remove(i);
            self.meta.remove(i);
        }
        self.meta.push(meta);
        self.bindings.push(TensorBinding { uid, data });
    }

    /// Binds `uid` to an input buffer (read only). `Graph::execute` refuses the pack when the
    /// tensor is written by the graph (an output must be bound with [`VariantPack::output`]).
    pub fn input<T: Element>(self, uid: i64, buffer: &'a Buffer<T>) -> Self {
        self.with(uid, buffer)
    }

    /// Binds `uid` to an output buffer: the `&mut` is required by the type, so an output
    /// cannot be bound read-only through this call.
    pub fn output<T: Element>(self, uid: i64, buffer: &'a mut Buffer<T>) -> Self {
        self.with(uid, buffer)
    }

    /// Binds the tensor `tensor` (the handle the graph returned for it) to a buffer:
    /// `&buffer` for an input, `&mut buffer` for an output. The handle is resolved to the
    /// tensor's UID when `Graph::execute` runs, so UIDs assigned by the build need not be
    /// known. The checks of [`VariantPack::with`] apply.
    ///
    /// A [`TensorId`] is an index into its graph: a handle of another graph that happens to be
    /// in range names this graph's tensor of that index.
    ///
    /// # Errors (at `Graph::execute`)
    /// `INVALID_VALUE` when `tensor` is not a tensor of the graph (`the variant pack binds
    /// tensor #9, but the graph has 4 tensors; …`) or is virtual (`the variant pack binds
    /// tensor 'Matmul_0::C' (#2), which is virtual …`).
    pub fn bind(mut self, tensor: TensorId, buffer: impl Bind<'a>) -> Self {
        let meta = self.meta_of(&buffer);
        self.pending.push(Pending {
            key: TensorKey::Id(tensor),
            data: buffer.bind(),
            meta,
        });
        self
    }

    /// Binds the tensor named `name` ([`crate::TensorAttributes::name`]; an op output's
    /// default name is `"<node>::<ROLE>"`, e.g. `Matmul_0::C`) to a buffer: `&buffer` for an
    /// input, `&mut buffer` for an output. Resolved when `Graph::execute` runs.
    ///
    /// # Errors (at `Graph::execute`)
    /// `INVALID_VALUE` when no tensor of the graph has that name (`the variant pack binds
    /// tensor name 'q', but no tensor of the graph has that name; …`, listing the names
    /// that take a buffer), when several do (`… names 2 tensors of the graph …`), or when the
    /// one it names is virtual.
    pub fn named(mut self, name: impl Into<String>, buffer: impl Bind<'a>) -> Self {
        let meta = self.meta_of(&buffer);
        self.pending.push(Pending {
            key: TensorKey::Name(name.into()),
            data: buffer.bind(),
            meta,
        });
        self
    }

    /// Gives tensor `uid` the `dims` and `strides` (in elements) for this execute: a shape
    /// override (upstream RFC 0008 phase 1, the variant pack's `OVERRIDE_*_EXT` attributes).
    /// The graph must have been built with
    /// [`Graph::set_override_shape_enabled(true)`](crate::Graph::set_override_shape_enabled);
    /// its dims are then the largest each tensor takes, and one plan serves every smaller
    /// shape without a rebuild. Override the non-virtual tensors whose shape changes (inputs
    /// and outputs alike); the engine derives the virtual ones. A second override of a UID
    /// replaces the first. The bound buffer need only hold the override's extent.
    ///
    /// # Errors (at `Graph::execute`, nothing run)
    /// `INVALID_VALUE` with a message starting `shape override` when the graph has no
    /// override flag, the UID is not a bound non-virtual tensor of the graph, the rank differs,
    /// a dim is `<= 0` or larger than built, a stride is `<= 0`, the strides reorder the built
    /// layout, or the graph's nodes do not run at these shapes (e.g. a matmul whose A was
    /// shortened but not its output C). Engines that cannot serve overrides are not chosen for
    /// a flagged graph at build. The CPU engine serves them bit for bit as a build at that
    /// shape; the GPU engine re-prepares its kernel's launch at the new shape (a kernel whose
    /// entry does not serve it is refused by name; a GPU plan loaded without its graph, from
    /// `to_compiled_plan_binary` bytes, runs only at its built shape).
    ///
    /// [`Graph::shape_overrides_for`](crate::Graph::shape_overrides_for) computes every
    /// override from the same graph made at the smaller shape; [`Self::override_shapes`] adds
    /// them all.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes as T};
    /// use hipdnn::VariantPack;
    /// # fn main() -> hipdnn::Result<()> {
    /// let handle = Handle::cpu()?;
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float).set_override_shape_enabled(true);
    /// let a = g.tensor(T::new("a").uid(1).dims([8, 4])); // up to 8 rows
    /// let b = g.tensor(T::new("b").uid(2).dims([4, 2]));
    /// let c = g.matmul(a, b, MatmulAttributes::new());
    /// g.set_output(c, true).set_uid(c, 3);
    /// g.build(&handle)?;
    /// // Three rows this time: A (3, 4) and C (3, 2), packed.
    /// let (ab, bb) = (Buffer::from_slice(&[1f32; 12]), Buffer::from_slice(&[0.5f32; 8]));
    /// let mut cb = Buffer::<f32>::zeros(6);
    /// let pack = VariantPack::new()
    ///     .input(1, &ab)
    ///     .input(2, &bb)
    ///     .output(3, &mut cb)
    ///     .override_shape(1, [3, 4], [4, 1])
    ///     .override_shape(3, [3, 2], [2, 1]);
    /// g.execute(&handle, pack, None)?;
    /// assert_eq!(cb.to_vec()?, [2f32; 6]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn override_shape(
        mut self,
        uid: i64,
        dims: impl Into<Vec<i64>>,
        strides: impl Into<Vec<i64>>,
    ) -> Self {
        self.overrides.retain(|o| o.uid != uid);
        self.overrides
            .push(hipdnn_backend::ShapeOverride::new(uid, dims, strides));
        self
    }

    /// [`Self::override_shape`] for each of `overrides`, e.g. what
    /// [`Graph::shape_overrides_for`](crate::Graph::shape_overrides_for) computes from the
    /// same graph made at the smaller shape. Errors as [`Self::override_shape`] (at execute).
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes as T};
    /// use hipdnn::VariantPack;
    /// # fn main() -> hipdnn::Result<()> {
    /// let handle = Handle::cpu()?;
    /// // The same graph at `rows` rows.
    /// let linear = |rows: i64| {
    ///     let mut g = Graph::new();
    ///     g.set_io_data_type(DataType::Float);
    ///     let a = g.tensor(T::new("a").uid(1).dims([rows, 4]));
    ///     let b = g.tensor(T::new("b").uid(2).dims([4, 2]));
    ///     let c = g.matmul(a, b, MatmulAttributes::new());
    ///     g.set_output(c, true).set_uid(c, 3);
    ///     g
    /// };
    /// let mut g = linear(8);
    /// g.set_override_shape_enabled(true);
    /// g.build(&handle)?;
    /// let overrides = g.shape_overrides_for(&linear(3))?; // A (3, 4) and C (3, 2)
    /// let (ab, bb) = (Buffer::from_slice(&[1f32; 12]), Buffer::from_slice(&[0.5f32; 8]));
    /// let mut cb = Buffer::<f32>::zeros(6);
    /// let pack = VariantPack::new()
    ///     .input(1, &ab)
    ///     .input(2, &bb)
    ///     .output(3, &mut cb)
    ///     .override_shapes(overrides);
    /// g.execute(&handle, pack, None)?;
    /// assert_eq!(cb.to_vec()?, [2f32; 6]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn override_shapes(
        self,
        overrides: impl IntoIterator<Item = hipdnn_backend::ShapeOverride>,
    ) -> Self {
        overrides
            .into_iter()
            .fold(self, |p, o| p.override_shape(o.uid, o.dims, o.strides))
    }

    /// The shape overrides of this pack, in the order given.
    pub fn shape_overrides(&self) -> &[hipdnn_backend::ShapeOverride] {
        &self.overrides
    }

    /// Number of bindings (a tensor bound twice by different keys counts twice until
    /// `execute` resolves them).
    pub fn len(&self) -> usize {
        self.bindings.len() + self.pending.len()
    }

    /// True when nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty() && self.pending.is_empty()
    }

    /// The UIDs bound by UID, in binding order (bindings by [`TensorId`] or name are resolved
    /// at execute time and not listed).
    pub fn uids(&self) -> Vec<i64> {
        self.bindings.iter().map(|e| e.uid).collect()
    }

    /// Turns the bindings by [`TensorId`] and by name into UID bindings against `g`; a later
    /// binding of a tensor replaces an earlier one, whichever way each named it.
    ///
    /// # Errors
    /// `INVALID_VALUE` naming the binding: a handle outside the graph, a name no tensor or
    /// several tensors have, a virtual tensor, a tensor without a UID.
    pub(crate) fn resolve(&mut self, g: &Graph) -> Result<(), Error> {
        for p in std::mem::take(&mut self.pending) {
            let uid = resolve_key(g, &p.key)?;
            match self.bindings.iter().position(|b| b.uid == uid) {
                Some(i) if self.meta[i].seq > p.meta.seq => {}
                _ => self.push(uid, p.data, p.meta),
            }
        }
        Ok(())
    }
}

/// The UID of the tensor `key` names in `g`.
fn resolve_key(g: &Graph, key: &TensorKey) -> Result<i64, Error> {
    let id = match key {
        TensorKey::Id(id) => {
            if id.index() >= g.tensor_count() {
                return Err(Error::invalid_value(format!(
                    "the variant pack binds tensor #{}, but the graph has {} tensors; bind a TensorId this graph returned{}",
                    id.index(),
                    g.tensor_count(),
                    if g.tensor_count() == 0 {
                        " (a plan loaded without its graph binds by UID only)"
                    } else {
                        ""
                    }
                )));
            }
            *id
        }
        TensorKey::Name(name) => match g.tensors_by_name(name).as_slice() {
            [id] => *id,
            [] => {
                let names: Vec<String> = g
                    .tensors()
                    .filter(|(_, t)| {
                        !t.is_virtual && (t.value.is_none() || t.is_runtime_pass_by_value)
                    })
                    .map(|(_, t)| format!("'{}'", t.name))
                    .collect();
                return Err(Error::invalid_value(if names.is_empty() {
                    format!(
                        "the variant pack binds tensor name '{name}', but the graph has no tensor that takes a buffer (a plan loaded without its graph binds by UID only)"
                    )
                } else {
                    format!(
                        "the variant pack binds tensor name '{name}', but no tensor of the graph has that name; the tensors that take a buffer are {}",
                        names.join(", ")
                    )
                }));
            }
            many => {
                let uids: Vec<String> = many
                    .iter()
                    .map(|&t| {
                        g.tensor_attributes(t)
                            .uid
                            .map_or_else(|| format!("#{}", t.index()), |u| format!("uid {u}"))
                    })
                    .collect();
                return Err(Error::invalid_value(format!(
                    "the variant pack binds tensor name '{name}', which names {} tensors of the graph ({}); rename them (Graph::set_tensor_name) or bind by TensorId or UID",
                    many.len(),
                    uids.join(", ")
                )));
            }
        },
    };
    let t = g.tensor_attributes(id);
    if t.is_virtual {
        return Err(Error::invalid_value(format!(
            "the variant pack binds tensor '{}' (#{}), which is virtual: an intermediate has no buffer; mark it an output with Graph::set_output before build, or do not bind it",
            t.name,
            id.index()
        )));
    }
    t.uid.ok_or_else(|| {
        Error::invalid_value(format!(
            "the variant pack binds tensor '{}' (#{}), which has no UID yet; build the graph first (build assigns UIDs)",
            t.name,
            id.index()
        ))
    })
}
