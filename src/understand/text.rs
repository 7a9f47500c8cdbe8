//! Small text helpers shared by verification, linking and the search's
//! notes: words, character trigrams and their Jaccard similarity, cutting.

use std::collections::HashSet;

/// `text` cut to `max` characters, marked with `...` where cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

/// Lower-case words (letters and digits), with `snake_case` and `camelCase`
/// names split apart.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Character trigrams of the lower-cased text, padded so that short
/// strings still have some.
pub fn trigrams(text: &str) -> HashSet<String> {
    let normal: Vec<char> = format!(" {} ", text.trim().to_lowercase())
        .chars()
        .collect();
    normal
        .windows(3)
        .map(|w| w.iter().collect::<String>())
        .collect()
}

pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let shared = a.intersection(b).count();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

pub fn similarity(a: &str, b: &str) -> f64 {
    jaccard(&trigrams(a), &trigrams(b))
}

/// Words too common to link anything.
pub fn is_stopword(word: &str) -> bool {
    const STOP: &[&str] = &[
        "a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "with", "and", "or", "is",
        "are", "was", "were", "be", "been", "what", "which", "who", "whom", "whose", "how", "many",
        "much", "do", "does", "did", "we", "have", "has", "had", "all", "each", "every", "from",
        "that", "this", "these", "those", "it", "its", "as", "than", "their", "there", "list",
        "show", "give", "find", "name", "names", "number", "count", "total", "me", "please",
        "return", "whats", "average", "most", "least", "more", "less", "per", "not", "any", "some",
        "between", "among", "into", "over", "under", "top", "when", "where",
    ];
    STOP.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_names_and_prose() {
        assert_eq!(words("Singer_ID isMale"), ["singer", "id", "is", "male"]);
        assert_eq!(words("What's the km/h?"), ["what", "s", "the", "km", "h"]);
    }

    #[test]
    fn trigram_similarity_ranks_spellings() {
        assert_eq!(similarity("France", "france"), 1.0);
        assert!(similarity("Frnace", "France") > similarity("Germany", "France"));
        assert_eq!(similarity("", ""), 0.0);
    }
}
