//! [`Slots`]: the store's records, by slot number.

use std::ops::{Index, IndexMut};

use crate::store::expiry::Slot;
use crate::store::stored::StoredRecord;

/// Records by slot number: the first [`Slots::CHUNK`] in a vector that doubles as it
/// grows, the rest in fixed-size chunks.
///
/// A `Vec` of all records would double its capacity as it grows: up to half of it unused
/// (at 600,000 records, 75 MB reserved for 43 MB of records), and each doubling copies
/// every record held while the shard's lock is held. Chunks grow the table
/// [`Slots::CHUNK`] records at a time, so at most one chunk is unused and nothing held
/// is ever moved; the price is one more pointer to follow per access. A store that holds
/// few records (one of a backend's many shards) would waste most of a whole chunk, so the
/// first chunk's worth lives in a plain vector, moved only while it is small.
///
/// A chunk is allocated whole but filled as records arrive (a vector with room for
/// [`Slots::CHUNK`]), never written ahead as empty slots: a new record is appended
/// without reading the slot it goes to, and without the whole chunk written (and its
/// pages faulted in) at once when the chunk starts. Under a stream of new keys, reading
/// the empty slot waited on memory: appending took about 180 ns less per new record.
#[derive(Default)]
pub(crate) struct Slots {
    head: Vec<Option<StoredRecord>>,
    /// Every chunk but the last holds [`Slots::CHUNK`] slots; the last holds the rest.
    chunks: Vec<Vec<Option<StoredRecord>>>,
    /// Slots handed out so far: every slot below is in `head` or a chunk.
    len: usize,
}

impl Slots {
    /// Records per chunk (80 KiB of records).
    pub(crate) const CHUNK: usize = 1 << Slots::CHUNK_BITS;
    const CHUNK_BITS: u32 = 10;

    /// Empty slots with room for `capacity` records before the first chunk.
    pub(crate) fn with_capacity(capacity: usize) -> Slots {
        Slots {
            head: Vec::with_capacity(capacity.min(Slots::CHUNK)),
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Slots handed out so far, occupied or not.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated, handed out or not.
    pub(crate) fn capacity(&self) -> usize {
        self.head.capacity() + self.chunks.len() * Slots::CHUNK
    }

    /// The record in `slot`, if the slot was handed out and is occupied.
    pub(crate) fn get(&self, slot: Slot) -> Option<&StoredRecord> {
        if (slot as usize) < self.len {
            self[slot].as_ref()
        } else {
            None
        }
    }

    /// Puts `record` in a new slot, after every slot handed out so far.
    pub(crate) fn push(&mut self, record: StoredRecord) -> Slot {
        let slot = self.len;
        self.len += 1;
        if slot < Slots::CHUNK {
            self.head.push(Some(record));
        } else {
            if (slot - Slots::CHUNK).is_multiple_of(Slots::CHUNK) {
                self.chunks.push(Vec::with_capacity(Slots::CHUNK));
            }
            // Slots are handed out in order, so the new one ends the last chunk.
            self.chunks
                .last_mut()
                .expect("a chunk was added for this slot")
                .push(Some(record));
        }
        slot as Slot
    }

    /// Takes every record out, in slot order, and leaves no slot handed out: what
    /// compaction moves into fresh slots. Each chunk is freed as soon as it is read.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = StoredRecord> + use<> {
        self.len = 0;
        let head = std::mem::take(&mut self.head).into_iter().flatten();
        let chunks = std::mem::take(&mut self.chunks)
            .into_iter()
            .flat_map(|chunk| chunk.into_iter().flatten());
        head.chain(chunks)
    }

    /// Every slot handed out, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Option<StoredRecord>> {
        self.head
            .iter()
            .chain(self.chunks.iter().flat_map(|chunk| chunk.iter()))
            .take(self.len)
    }
}

impl Index<Slot> for Slots {
    type Output = Option<StoredRecord>;

    fn index(&self, slot: Slot) -> &Option<StoredRecord> {
        let slot = slot as usize;
        match slot.checked_sub(Slots::CHUNK) {
            None => &self.head[slot],
            Some(far) => &self.chunks[far >> Slots::CHUNK_BITS][far & (Slots::CHUNK - 1)],
        }
    }
}

impl IndexMut<Slot> for Slots {
    fn index_mut(&mut self, slot: Slot) -> &mut Option<StoredRecord> {
        let slot = slot as usize;
        match slot.checked_sub(Slots::CHUNK) {
            None => &mut self.head[slot],
            Some(far) => &mut self.chunks[far >> Slots::CHUNK_BITS][far & (Slots::CHUNK - 1)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::keyhash::KeyHash;
    use crate::store::stamp::Stamp;
    use crate::token::ClaimToken;
    use std::hash::RandomState;
    use std::time::Duration;

    fn record(key: &str) -> StoredRecord {
        let token = ClaimToken::from_bytes([0; 16]);
        let hash = KeyHash::of(&RandomState::new(), key.as_bytes());
        StoredRecord::claimed(
            key,
            hash,
            "fp",
            1,
            token,
            Stamp::from_nanos(0),
            Duration::ZERO,
        )
    }

    #[test]
    fn slots_span_chunks_and_keep_their_records() {
        let mut slots = Slots::default();
        let count = 3 * Slots::CHUNK + 3;
        for i in 0..count {
            assert_eq!(slots.push(record(&format!("k{i}"))), i as Slot);
        }
        assert_eq!(slots.len(), count);
        assert_eq!(
            slots.head.len(),
            Slots::CHUNK,
            "the first chunk's worth in the head"
        );
        assert_eq!(slots.chunks.len(), 3, "then a chunk at a time");
        assert!(
            slots
                .chunks
                .iter()
                .all(|chunk| chunk.capacity() == Slots::CHUNK),
            "each chunk allocated whole, so none is ever moved"
        );
        assert_eq!(
            slots.chunks[2].len(),
            3,
            "the last filled as records arrive"
        );
        assert_eq!(slots.capacity(), 4 * Slots::CHUNK);
        assert_eq!(
            slots[Slots::CHUNK as Slot].as_ref().map(StoredRecord::key),
            Some("k1024".to_owned())
        );
        slots[5] = None;
        assert!(slots[5].is_none());
        let keys: Vec<_> = slots
            .iter()
            .map(|record| record.as_ref().map(StoredRecord::key))
            .collect();
        assert_eq!(
            keys.len(),
            count,
            "the unused rest of the last chunk is not listed"
        );
        assert_eq!(keys[4].as_deref(), Some("k4"));
        assert_eq!(keys[5], None);
        assert_eq!(keys[count - 1], Some(format!("k{}", count - 1)));

        let drained: Vec<String> = slots.drain().map(|r| r.key()).collect();
        assert_eq!(drained.len(), count - 1, "every occupied slot, once");
        assert_eq!(drained[5], "k6");
        assert_eq!((slots.len(), slots.capacity()), (0, 0));
    }

    #[test]
    fn a_few_records_take_a_few_slots_not_a_chunk() {
        let mut slots = Slots::default();
        for i in 0..3 {
            slots.push(record(&format!("k{i}")));
        }
        assert!(slots.capacity() < 16, "{}", slots.capacity());
    }
}
