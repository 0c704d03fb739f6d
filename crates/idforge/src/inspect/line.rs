//! [`Line`]: bytes appended to a `Vec<u8>` with the position and capacity held in the writer
//! itself, not read back from the vector after every append.
//!
//! A line of `inspect` output is 40 to 60 appends of a few bytes each. Through `&mut Vec<u8>`
//! every append loads the vector's length and capacity and stores the length again: the
//! vector sits behind a pointer, and the compiler cannot tell that the bytes stored do not
//! overwrite its fields. `Line` keeps the buffer's pointer, length and capacity as its own
//! fields. Where it is a local (in the writer's `Emit`) whose address is never passed on, the
//! compiler keeps them in registers: the appends are inlined, growing (rare) goes through the
//! vector and hands the new pointer and capacity back, and a call that is not inlined gets a
//! copy of the line ([`Line::with`]) instead of its address. One such address passed on puts the
//! line back in memory for the whole function (the writer keeps `Emit`'s methods and the
//! small appends `#[inline(always)]` for that reason).

use std::ptr;

/// A line being appended to a vector; the vector's length is set when the line is dropped.
///
/// Invariants: `buf` and `cap` are `vec`'s pointer and capacity; `len <= cap`; `buf[..len]`
/// is initialised (the vector's bytes when the line began, then those appended). The vector is
/// borrowed mutably for the line's life, so nothing else moves or reads its buffer meanwhile.
pub(super) struct Line<'a> {
    vec: &'a mut Vec<u8>,
    buf: *mut u8,
    len: usize,
    cap: usize,
}

impl<'a> Line<'a> {
    /// A line appended to `vec`, with room for at least `room` bytes reserved now.
    #[inline]
    pub(super) fn new(vec: &'a mut Vec<u8>, room: usize) -> Line<'a> {
        vec.reserve(room);
        Line {
            buf: vec.as_mut_ptr(),
            len: vec.len(),
            cap: vec.capacity(),
            vec,
        }
    }

    /// The length of the vector with what was appended so far.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends `bytes` (one store for an array of a few bytes).
    #[inline(always)]
    pub(super) fn extend_from_slice(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        if self.cap - self.len < n {
            self.grow(n);
        }
        // SAFETY: `cap - len >= n` (checked, or made so by `grow`): `buf[len..len + n]` lies in
        // the vector's allocation, which `bytes` (borrowed elsewhere) cannot overlap while the
        // vector is borrowed mutably by this line.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.buf.add(self.len), n) };
        self.len += n;
    }

    /// Appends one byte.
    #[inline(always)]
    pub(super) fn push(&mut self, byte: u8) {
        if self.cap == self.len {
            self.grow(1);
        }
        // SAFETY: `len < cap`, as above.
        unsafe { self.buf.add(self.len).write(byte) };
        self.len += 1;
    }

    /// Cuts the line back to `len` bytes (nothing if it is shorter already).
    #[inline(always)]
    pub(super) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Runs `f` on a copy of this line, then takes the copy's pointer, length and capacity
    /// back. For calls that are not inlined: a line whose address is never passed on keeps
    /// its fields in registers (the copy's address is passed instead).
    #[inline(always)]
    pub(super) fn with<R>(&mut self, f: impl FnOnce(&mut Line<'_>) -> R) -> R {
        let mut copy = Line {
            vec: &mut *self.vec,
            buf: self.buf,
            len: self.len,
            cap: self.cap,
        };
        let r = f(&mut copy);
        (self.buf, self.len, self.cap) = (copy.buf, copy.len, copy.cap);
        r
    }

    /// Makes room for `n` more bytes: the vector's length set, its `reserve`, its new pointer
    /// and capacity taken. The line's own address is not passed on, so its fields stay in
    /// registers where it is used.
    #[inline(always)]
    fn grow(&mut self, n: usize) {
        (self.buf, self.cap) = grow(self.vec, self.len, n);
    }
}

#[cold]
#[inline(never)]
fn grow(vec: &mut Vec<u8>, len: usize, n: usize) -> (*mut u8, usize) {
    // SAFETY: `len <= capacity` and `vec[..len]` is initialised (the line's invariants).
    unsafe { vec.set_len(len) };
    vec.reserve(n);
    (vec.as_mut_ptr(), vec.capacity())
}

impl Drop for Line<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `len <= cap` and `buf[..len]` is initialised (the invariants).
        unsafe { self.vec.set_len(self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn appends_grow_and_cut_as_a_vector_does() {
        // Lines that outgrow the room reserved, again and again, from a vector that holds
        // bytes already: the same bytes as the vector's own methods make.
        for room in [0, 1, 7, 64] {
            let mut got = b"kept".to_vec();
            got.shrink_to_fit();
            let mut want = got.clone();
            {
                let mut line = Line::new(&mut got, room);
                for i in 0..300u32 {
                    let chunk: Vec<u8> = (0..i % 37).map(|j| (i + j) as u8).collect();
                    line.extend_from_slice(&chunk);
                    want.extend_from_slice(&chunk);
                    line.push(i as u8);
                    want.push(i as u8);
                    if i % 5 == 0 {
                        let at = line.len() - (i as usize % 3);
                        line.truncate(at);
                        want.truncate(at);
                    }
                    assert_eq!(line.len(), want.len());
                }
            }
            assert_eq!(got, want, "room {room}");
        }
    }

    #[test]
    fn a_copy_that_grows_hands_the_buffer_back() {
        // Copies made by `with` outgrow the buffer (again and again, from a vector exactly
        // full), cut back and append; the line goes on after each copy where the copy left
        // off. Small enough for Miri, which finds a write through a freed buffer.
        for room in [0, 3] {
            let mut got = b"kept".to_vec();
            got.shrink_to_fit();
            let mut want = got.clone();
            {
                let mut line = Line::new(&mut got, room);
                for i in 0..24u8 {
                    line.push(i);
                    want.push(i);
                    let len = line.with(|copy| {
                        for j in 0..i {
                            copy.extend_from_slice(&[j; 5]);
                            copy.push(b'.');
                        }
                        copy.truncate(copy.len() - usize::from(i % 4));
                        copy.len()
                    });
                    for j in 0..i {
                        want.extend_from_slice(&[j; 5]);
                        want.push(b'.');
                    }
                    want.truncate(want.len() - usize::from(i % 4));
                    assert_eq!((len, line.len()), (want.len(), want.len()));
                    line.extend_from_slice(b"|after");
                    want.extend_from_slice(b"|after");
                }
            }
            assert_eq!(got, want, "room {room}");
        }
    }

    #[test]
    fn a_line_dropped_while_unwinding_keeps_what_it_appended() {
        let mut v = Vec::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut line = Line::new(&mut v, 0);
            line.extend_from_slice(b"abc");
            panic!("stop");
        }));
        assert!(result.is_err());
        assert_eq!(v, b"abc");
    }
}
