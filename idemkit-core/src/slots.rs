//! [`Slots`]: the store's records, by slot number.

use std::ops::{Index, IndexMut};

use crate::expiry::Slot;
use crate::record::Record;

/// Records by slot number, kept in fixed-size chunks.
///
/// A `Vec` of records would double its capacity as it grows: up to half of it unused
/// (at 600,000 records, 75 MB reserved for 43 MB of records), and each doubling copies
/// every record held while the shard's lock is held. Chunks grow the table
/// [`Slots::CHUNK`] records at a time, so at most one chunk is unused and nothing held
/// is ever moved; the price is one more pointer to follow per access.
#[derive(Default)]
pub(crate) struct Slots {
    chunks: Vec<Box<[Option<Record>]>>,
    /// Slots handed out so far: every slot below is in a chunk.
    len: usize,
}

impl Slots {
    /// Records per chunk (72 KiB of records).
    pub(crate) const CHUNK: usize = 1 << Slots::CHUNK_BITS;
    const CHUNK_BITS: u32 = 10;

    /// Slots handed out so far, occupied or not.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Puts `record` in a new slot, after every slot handed out so far.
    pub(crate) fn push(&mut self, record: Record) -> Slot {
        let slot = self.len;
        if slot % Slots::CHUNK == 0 {
            self.chunks.push((0..Slots::CHUNK).map(|_| None).collect());
        }
        self.len += 1;
        let slot = slot as Slot;
        self[slot] = Some(record);
        slot
    }

    /// Every slot handed out, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Option<Record>> {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.iter())
            .take(self.len)
    }

    fn place(slot: Slot) -> (usize, usize) {
        let slot = slot as usize;
        (slot >> Slots::CHUNK_BITS, slot & (Slots::CHUNK - 1))
    }
}

impl Index<Slot> for Slots {
    type Output = Option<Record>;

    fn index(&self, slot: Slot) -> &Option<Record> {
        let (chunk, at) = Slots::place(slot);
        &self.chunks[chunk][at]
    }
}

impl IndexMut<Slot> for Slots {
    fn index_mut(&mut self, slot: Slot) -> &mut Option<Record> {
        let (chunk, at) = Slots::place(slot);
        &mut self.chunks[chunk][at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stamp::Stamp;
    use crate::token::ClaimToken;
    use std::time::Duration;

    fn record(key: &str) -> Record {
        let token = ClaimToken::from_bytes([0; 16]);
        Record::claimed(key, "fp", 1, token, Stamp::from_nanos(0), Duration::ZERO)
    }

    #[test]
    fn slots_span_chunks_and_keep_their_records() {
        let mut slots = Slots::default();
        let count = 2 * Slots::CHUNK + 3;
        for i in 0..count {
            assert_eq!(slots.push(record(&format!("k{i}"))), i as Slot);
        }
        assert_eq!(slots.len(), count);
        assert_eq!(slots.chunks.len(), 3, "a chunk at a time");
        assert_eq!(
            slots[Slots::CHUNK as Slot].as_ref().map(Record::key),
            Some("k1024")
        );
        slots[5] = None;
        assert!(slots[5].is_none());
        let keys: Vec<_> = slots
            .iter()
            .map(|record| record.as_ref().map(Record::key))
            .collect();
        assert_eq!(
            keys.len(),
            count,
            "the unused rest of the last chunk is not listed"
        );
        assert_eq!(keys[4], Some("k4"));
        assert_eq!(keys[5], None);
        assert_eq!(keys[count - 1], Some(format!("k{}", count - 1).as_str()));
    }
}
