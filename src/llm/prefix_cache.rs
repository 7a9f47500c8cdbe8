//! Key/value states of recent prompts, keyed by their tokens. A request
//! reuses the longest cached prefix of its prompt and computes only the
//! rest; entries are dropped least recently used first when the memory
//! budget is exceeded.

use super::kv::KvSnapshot;

pub struct PrefixCache {
    entries: Vec<Entry>,
    budget_bytes: usize,
    clock: u64,
}

struct Entry {
    tokens: Vec<u32>,
    kv: KvSnapshot,
    last_used: u64,
}

impl PrefixCache {
    pub fn new(budget_bytes: usize) -> Self {
        PrefixCache {
            entries: Vec::new(),
            budget_bytes,
            clock: 0,
        }
    }

    /// The cached states sharing the longest prefix with `tokens`, and how
    /// many positions of it apply (at most `max_len`).
    pub fn lookup(&mut self, tokens: &[u32], max_len: usize) -> Option<(KvSnapshot, usize)> {
        self.clock += 1;
        let (best, shared) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_prefix(&e.tokens, tokens).min(max_len)))
            .max_by_key(|&(_, shared)| shared)?;
        if shared == 0 {
            return None;
        }
        let entry = &mut self.entries[best];
        entry.last_used = self.clock;
        Some((entry.kv.clone(), shared))
    }

    /// Whether some entry already holds the states of all of `tokens`.
    pub fn covers(&self, tokens: &[u32]) -> bool {
        self.entries.iter().any(|e| e.tokens.starts_with(tokens))
    }

    /// Keeps the states of `tokens`; an entry whose tokens are a prefix of
    /// these is replaced, since the new one serves every request it did.
    pub fn insert(&mut self, tokens: Vec<u32>, kv: KvSnapshot) {
        if kv.bytes() > self.budget_bytes {
            return;
        }
        self.clock += 1;
        self.entries
            .retain(|e| !(e.tokens.len() <= tokens.len() && tokens.starts_with(&e.tokens)));
        self.entries.push(Entry {
            tokens,
            kv,
            last_used: self.clock,
        });
        while self.bytes() > self.budget_bytes {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i)
                .expect("over budget means not empty");
            self.entries.swap_remove(oldest);
        }
    }

    pub fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.kv.bytes()).sum()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::kv::KvCache;
    use candle_core::Device;

    fn snapshot(len: usize) -> KvSnapshot {
        let mut cache =
            KvCache::new(1, 1, 1, 2, 16, candle_core::DType::F32, &Device::Cpu).unwrap();
        cache.advance(len);
        cache.snapshot(0, len).unwrap()
    }

    #[test]
    fn longest_prefix_wins_and_lru_evicts() {
        let each = snapshot(4).bytes();
        let mut cache = PrefixCache::new(2 * each);
        cache.insert(vec![1, 2, 3, 4], snapshot(4));
        cache.insert(vec![1, 2, 9, 9], snapshot(4));
        let (_, shared) = cache.lookup(&[1, 2, 3, 7, 8], 4).unwrap();
        assert_eq!(shared, 3);
        assert_eq!(cache.lookup(&[1, 2, 3, 4, 5], 3).unwrap().1, 3);
        assert!(cache.lookup(&[5, 6], 2).is_none());
        // [1,2,9,9] is now least recently used and makes room.
        cache.insert(vec![7, 7, 7, 7], snapshot(4));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.lookup(&[1, 2, 9, 9], 4).unwrap().1, 2);
        assert!(cache.covers(&[7, 7, 7]));
        assert!(!cache.covers(&[7, 7, 7, 7, 7]));
        // An extension replaces its prefix.
        cache.insert(vec![7, 7, 7, 7, 7], snapshot(5));
        assert!(cache.bytes() <= 2 * each + snapshot(5).bytes());
    }
}
