//! An output buffer the worker pool's threads write at disjoint places.

pub struct SharedOut<T>(*mut T);

// SAFETY: callers write disjoint places only (the contract of `write` and
// `at`).
unsafe impl<T> Sync for SharedOut<T> {}

impl<T: Copy> SharedOut<T> {
    /// The buffer must outlive every write through this handle.
    pub fn new(buffer: *mut T) -> SharedOut<T> {
        SharedOut(buffer)
    }

    /// SAFETY: `at..at + values.len()` lies in the buffer and no other
    /// thread writes there.
    pub unsafe fn write(&self, at: usize, values: &[T]) {
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.at(at), values.len()) }
    }

    /// Where element `at` lives, for a kernel that writes in place.
    ///
    /// SAFETY: `at` lies in the buffer; only this thread writes what the
    /// caller writes through the pointer.
    pub unsafe fn at(&self, at: usize) -> *mut T {
        unsafe { self.0.add(at) }
    }
}
