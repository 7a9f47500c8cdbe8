//! Key/value states of recent prompts, keyed by their tokens. A request
//! reuses the longest cached prefix of its prompt and computes only the
//! rest; entries are dropped least recently used first when the memory
//! budget is exceeded.
//!
//! A position's states come out slightly different depending on how many
//! positions were computed with it in one pass, so reusing states computed
//! for another prompt can change what a greedy call writes. Prompts are
//! therefore computed in blocks aligned to multiples of the block length,
//! and an entry records how many of its positions came from whole aligned
//! blocks (`exact`): those equal what a prefill from scratch computes.
//! Entries of earlier questions (earlier epochs) are reused only that far,
//! so an answer does not depend on which questions came before it (a
//! resumed run equals an uninterrupted one); entries of the current
//! question are reused wholly, its calls being made in the same order
//! every time.

use super::kv::KvSnapshot;

pub struct PrefixCache {
    entries: Vec<Entry>,
    budget_bytes: usize,
    block: usize,
    epoch: u64,
    clock: u64,
}

struct Entry {
    tokens: Vec<u32>,
    kv: KvSnapshot,
    /// Leading positions computed in whole aligned blocks.
    exact: usize,
    epoch: u64,
    last_used: u64,
}

/// Cached states a prompt can start from.
pub struct Hit {
    pub kv: KvSnapshot,
    /// Positions reused.
    pub shared: usize,
    /// Leading positions of those that came from whole aligned blocks.
    pub exact: usize,
}

impl Hit {
    /// Whether computing on from here in aligned blocks gives what a
    /// prefill from scratch gives.
    pub fn continues_exactly(&self, block: usize) -> bool {
        starts_exactly(self.shared, self.exact, block)
    }
}

/// Whether reusing `shared` positions of an entry whose first `exact` came
/// from whole aligned blocks leaves an exact, aligned start.
fn starts_exactly(shared: usize, exact: usize, block: usize) -> bool {
    shared <= exact && shared.is_multiple_of(block)
}

/// The positions of `positions` that fill whole blocks.
pub fn whole_blocks(positions: usize, block: usize) -> usize {
    positions / block * block
}

impl PrefixCache {
    /// `block` is the prefill's pass length, to which reuse of earlier
    /// questions' states is aligned.
    pub fn new(budget_bytes: usize, block: usize) -> Self {
        PrefixCache {
            entries: Vec::new(),
            budget_bytes,
            block,
            epoch: 0,
            clock: 0,
        }
    }

    /// From now on, the entries of question `epoch` count as the current
    /// question's and all others as earlier ones'.
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// The cached states sharing the longest usable prefix with `tokens`
    /// (at most `max_len` positions): the current question's entries as
    /// far as they match (past the first block of a longer prompt), earlier
    /// ones up to their last whole aligned block and only where the current
    /// question's best match would go on in aligned blocks from an exact
    /// start anyway.
    pub fn lookup(&mut self, tokens: &[u32], max_len: usize) -> Option<Hit> {
        self.clock += 1;
        let block = self.block;
        let usable = |e: &Entry| {
            let shared = common_prefix(&e.tokens, tokens).min(max_len);
            if e.epoch == self.epoch {
                shared
            } else {
                whole_blocks(shared.min(e.exact), block)
            }
        };
        let best = |current: bool| {
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| (e.epoch == self.epoch) == current)
                .map(|(i, e)| (i, usable(e)))
                // Ties go to the latest used, an order that does not
                // depend on where entries sit in the list.
                .max_by_key(|&(i, shared)| (shared, self.entries[i].last_used))
                .filter(|&(_, shared)| shared > 0)
        };
        // A match of this question's own that ends inside the first block
        // of a longer prompt (prompts whose system messages open alike)
        // saves little, and computing on from it would bar an earlier
        // question's longer exact match (the same prompt's schema asked
        // for another question): it is left aside. That depends on the
        // prompt alone, so a first question computes what a later one does.
        let current = best(true).filter(|&(_, shared)| shared >= block || max_len < block);
        let current_is_exact =
            current.is_none_or(|(i, shared)| starts_exactly(shared, self.entries[i].exact, block));
        let chosen = match (current, best(false)) {
            (Some(c), Some(e)) if current_is_exact && e.1 > c.1 => e,
            (Some(c), _) => c,
            (None, Some(e)) => e,
            (None, None) => return None,
        };
        let (index, shared) = chosen;
        let entry = &mut self.entries[index];
        entry.last_used = self.clock;
        Some(Hit {
            kv: entry.kv.clone(),
            shared,
            exact: shared.min(entry.exact),
        })
    }

    /// The most leading positions of `tokens` an entry of the current
    /// question holds.
    pub fn held_for_this_question(&self, tokens: &[u32]) -> usize {
        self.entries
            .iter()
            .filter(|e| e.epoch == self.epoch)
            .map(|e| common_prefix(&e.tokens, tokens))
            .max()
            .unwrap_or(0)
    }

    /// Whether an entry of the current question already holds the states
    /// of all of `tokens`.
    pub fn covers(&self, tokens: &[u32]) -> bool {
        self.held_for_this_question(tokens) == tokens.len()
    }

    /// Keeps the states of `tokens`, of which the first `exact` positions
    /// came from whole aligned blocks; an entry whose tokens are a prefix
    /// of these is replaced, since the new one serves every request it did.
    pub fn insert(&mut self, tokens: Vec<u32>, kv: KvSnapshot, exact: usize) {
        if kv.bytes() > self.budget_bytes {
            return;
        }
        self.clock += 1;
        self.entries
            .retain(|e| !(e.tokens.len() <= tokens.len() && tokens.starts_with(&e.tokens)));
        self.entries.push(Entry {
            tokens,
            kv,
            exact,
            epoch: self.epoch,
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
        let mut cache = PrefixCache::new(2 * each, 1);
        cache.insert(vec![1, 2, 3, 4], snapshot(4), 4);
        cache.insert(vec![1, 2, 9, 9], snapshot(4), 4);
        let hit = cache.lookup(&[1, 2, 3, 7, 8], 4).unwrap();
        assert_eq!((hit.shared, hit.exact), (3, 3));
        assert_eq!(cache.lookup(&[1, 2, 3, 4, 5], 3).unwrap().shared, 3);
        assert!(cache.lookup(&[5, 6], 2).is_none());
        // [1,2,9,9] is now least recently used and makes room.
        cache.insert(vec![7, 7, 7, 7], snapshot(4), 4);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.lookup(&[1, 2, 9, 9], 4).unwrap().shared, 2);
        assert!(cache.covers(&[7, 7, 7]));
        assert!(!cache.covers(&[7, 7, 7, 7, 7]));
        // An extension replaces its prefix.
        cache.insert(vec![7, 7, 7, 7, 7], snapshot(5), 5);
        assert!(cache.bytes() <= 2 * each + snapshot(5).bytes());
    }

    #[test]
    fn earlier_questions_are_reused_only_in_whole_aligned_blocks() {
        let mut cache = PrefixCache::new(1 << 20, 4);
        let prompt: Vec<u32> = (0..12).collect();
        // 10 tokens, the first 8 in whole blocks of 4.
        cache.insert(prompt[..10].to_vec(), snapshot(10), 8);
        // The same question reuses all it shares.
        assert_eq!(cache.lookup(&prompt, 11).unwrap().shared, 10);
        assert!(cache.covers(&prompt[..10]));

        cache.set_epoch(1);
        // A later one: up to the last whole aligned block it shares.
        let hit = cache.lookup(&prompt, 11).unwrap();
        assert_eq!((hit.shared, hit.exact), (8, 8));
        assert!(hit.continues_exactly(4));
        let mut other = prompt[..7].to_vec();
        other.extend([50, 51, 52]);
        assert_eq!(cache.lookup(&other, 9).unwrap().shared, 4);
        assert!(cache.lookup(&[0, 1, 2, 60], 3).is_none());
        // Not counted as holding the prompt: this question keeps its own.
        assert!(!cache.covers(&prompt[..10]));

        // This question's own entry ends inside a block: computing on from
        // it is not a prefill from scratch, so the earlier, longer exact
        // match must not take its place.
        cache.insert(vec![0, 1, 2, 3, 4, 99], snapshot(6), 4);
        let mine = cache.lookup(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 9).unwrap();
        assert_eq!((mine.shared, mine.exact), (5, 4));
        assert!(!mine.continues_exactly(4));
        // Ending exactly on a block boundary, it may: the longer exact
        // match gives the states computing on from it would give.
        let mut cache = PrefixCache::new(1 << 20, 4);
        cache.insert(prompt[..10].to_vec(), snapshot(10), 8);
        cache.set_epoch(1);
        cache.insert(vec![0, 1, 2, 3, 98], snapshot(5), 4);
        let hit = cache.lookup(&prompt, 11).unwrap();
        assert_eq!((hit.shared, hit.exact), (8, 8));
    }

    #[test]
    fn a_match_of_this_question_shorter_than_a_block_leaves_room_for_an_earlier_one() {
        let mut cache = PrefixCache::new(1 << 20, 4);
        // An earlier question's prompt, another system message's this one's.
        let review: Vec<u32> = vec![1, 2, 3, 4, 5, 6, 7, 8, 9];
        cache.insert(review.clone(), snapshot(9), 8);
        cache.set_epoch(1);
        cache.insert(vec![1, 2, 70, 71, 72, 73], snapshot(6), 4);
        let hit = cache.lookup(&review, 8).unwrap();
        assert_eq!((hit.shared, hit.exact), (8, 8));
        // Alone, the short match is not used either; a prompt that ends
        // inside the first block uses it.
        let mut cache = PrefixCache::new(1 << 20, 4);
        cache.insert(vec![1, 2, 70, 71, 72, 73], snapshot(6), 4);
        assert!(cache.lookup(&review, 8).is_none());
        assert_eq!(cache.lookup(&[1, 2, 70, 80], 3).unwrap().shared, 3);
        assert_eq!(cache.held_for_this_question(&[1, 2, 70, 80]), 3);
        cache.set_epoch(2);
        assert_eq!(cache.held_for_this_question(&[1, 2, 70, 80]), 0);
    }
}
