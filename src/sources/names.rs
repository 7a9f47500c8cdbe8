//! Names made unique as they are handed out: a repeated name gets `_2`,
//! `_3`, ... in order of appearance, compared without case, as SQLite
//! compares names.

#[derive(Default)]
pub struct NameSet(std::collections::HashSet<String>);

impl NameSet {
    /// `base`, or `base_N` with the first N that is not taken yet.
    pub fn take(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 2;
        while !self.0.insert(name.to_lowercase()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }
}
