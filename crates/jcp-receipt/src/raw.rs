//! Byte-level helpers shared by the reference reader ([`crate::receipt`],
//! [`crate::cose`]) and the zero-copy one ([`crate::fast`]): short-text
//! equality, a cursor over canonical CBOR heads, and the walk over an array
//! of texts already checked. A leaf module: it uses nothing else of this
//! crate, so neither reader borrows from the other.

/// Byte-string equality for the short texts a decoder compares on every
/// record (map keys, did and id cache hits): word compares, never a libc
/// `memcmp` call (a call per key was a visible share of the audit's decode,
/// docs/performance.md). Same answer as `a == b`, held to it by
/// `s8_decoder_compare_is_slice_equality`.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
    }
    let word = |s: &[u8]| s.first_chunk::<8>().map_or(0, |c| u64::from_ne_bytes(*c));
    let mut acc = 0u64;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        acc |= word(x) ^ word(y);
    }
    // The last eight bytes (overlapping the words above when n is not a multiple of 8).
    acc |= word(&a[n - 8..]) ^ word(&b[n - 8..]);
    acc == 0
}

/// A cursor over canonical CBOR bytes: each read checks the shortest
/// form and answers `None` on anything else.
pub(crate) struct Cur<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cur<'a> {
    pub(crate) fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// A head in its shortest form: (major, argument).
    pub(crate) fn head(&mut self) -> Option<(u8, u64)> {
        let ib = self.byte()?;
        let (major, ai) = (ib >> 5, ib & 0x1f);
        let v = match ai {
            0..=23 => u64::from(ai),
            24 => {
                let v = u64::from(self.byte()?);
                (v >= 24).then_some(v)?
            }
            25 => {
                let s = self.take(2)?;
                let v = u64::from(u16::from_be_bytes([s[0], s[1]]));
                (v > 0xff).then_some(v)?
            }
            26 => {
                let s = self.take(4)?;
                let v = u64::from(u32::from_be_bytes([s[0], s[1], s[2], s[3]]));
                (v > 0xffff).then_some(v)?
            }
            27 => {
                let s = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                let v = u64::from_be_bytes(a);
                (v > 0xffff_ffff).then_some(v)?
            }
            _ => return None,
        };
        Some((major, v))
    }

    pub(crate) fn len_of(&mut self, major: u8) -> Option<usize> {
        let (m, n) = self.head()?;
        if m != major {
            return None;
        }
        usize::try_from(n).ok()
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len_of(2)?;
        self.take(n)
    }

    /// A text string's bytes, UTF-8 unchecked (see [`FVal::Text`]). A
    /// length below 24 sits in the initial byte (always its shortest form)
    /// and one of 24..=255 in the next (shortest form iff it is ≥ 24): both
    /// read at once (every key, did and id of a record is one or the other),
    /// the rest through [`Cur::head`].
    #[inline]
    pub(crate) fn text_bytes(&mut self) -> Option<&'a [u8]> {
        let ib = *self.b.get(self.pos)?;
        if (0x60..0x78).contains(&ib) {
            self.pos += 1;
            return self.take(usize::from(ib - 0x60));
        }
        if ib == 0x78 {
            let n = *self.b.get(self.pos + 1)?;
            if n < 24 {
                return None;
            }
            self.pos += 2;
            return self.take(usize::from(n));
        }
        let n = self.len_of(3)?;
        self.take(n)
    }

    /// An unsigned integer; below 24 it is the initial byte itself.
    #[inline]
    pub(crate) fn uint(&mut self) -> Option<u64> {
        let ib = *self.b.get(self.pos)?;
        if ib < 0x18 {
            self.pos += 1;
            return Some(u64::from(ib));
        }
        let (m, n) = self.head()?;
        (m == 0).then_some(n)
    }

    pub(crate) fn done(&self) -> bool {
        self.pos == self.b.len()
    }
}

/// The text strings of a [`TextItems::Cbor`] array, in order (checked when
/// the array was read; walking stops at anything else).
pub(crate) fn text_items(enc: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut c = Cur { b: enc, pos: 0 };
    std::iter::from_fn(move || if c.done() { None } else { c.text_bytes() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §8 decoding compares keys and cached texts with `same_bytes`: it
    /// must be exactly slice equality, for every length up to past the
    /// longest text it sees and a difference at every position.
    #[test]
    fn s8_decoder_compare_is_slice_equality() {
        for n in 0..=80usize {
            let a: Vec<u8> = (0..n).map(|i| u8::try_from((i * 7 + 3) % 256).unwrap_or(0)).collect();
            assert!(same_bytes(&a, &a.clone()), "equal, length {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x40;
                assert!(!same_bytes(&a, &b), "differs at {at} of {n}");
            }
            assert!(!same_bytes(&a, &a[..n.saturating_sub(1)]) || n == 0, "shorter, length {n}");
        }
        proptest::proptest!(|(a in proptest::collection::vec(0u8..4, 0..40), b in proptest::collection::vec(0u8..4, 0..40))| {
            proptest::prop_assert_eq!(same_bytes(&a, &b), a == b);
        });
    }
}
