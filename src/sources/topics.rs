//! The entities a question names, found among a graph's node names: every
//! run of the question's words that is a name (as written, or ignoring
//! case, with the punctuation around it or without) is a mention. Names
//! written like names (first and last word capitalised or a number) come
//! first, then longer ones: "who directed Jet Lag" names the film, not the
//! tag `director` a graph may also hold.

use crate::error::Result;

/// The longest run of words tried as one name.
const MAX_WORDS: usize = 12;

/// Words that name no topic on their own, although a graph may hold them
/// as names (a tag `the`, a film `It`).
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "also", "an", "and", "are", "as", "at", "be", "been", "by", "did", "do", "does",
    "for", "from", "has", "have", "how", "in", "is", "it", "its", "of", "on", "or", "same", "than",
    "that", "the", "these", "this", "those", "to", "was", "were", "what", "when", "where", "which",
    "who", "whom", "whose", "with",
];

/// A run of the question's words that names a node.
#[derive(Debug)]
struct Mention {
    /// The first word and one past the last.
    start: usize,
    end: usize,
    node: String,
    name_like: bool,
    chars: usize,
}

/// The nodes the question names: the best mention, and every other one
/// written like a name when the best is too (a question may name a film
/// and a director). `lookup` gives the node a text names, if any.
pub(super) fn find(
    question: &str,
    mut lookup: impl FnMut(&str) -> Result<Option<String>>,
) -> Result<Vec<String>> {
    let words: Vec<&str> = question.split_whitespace().collect();
    let mut mentions = Vec::new();
    for start in 0..words.len() {
        for end in start + 1..=(start + MAX_WORDS).min(words.len()) {
            let run = words[start..end].join(" ");
            if let Some(mention) = mention_of(&run, start, end, &mut lookup)? {
                mentions.push(mention);
            }
        }
    }
    mentions.sort_by(|a, b| (b.name_like, b.chars, a.start).cmp(&(a.name_like, a.chars, b.start)));
    let mut chosen: Vec<Mention> = Vec::new();
    for mention in mentions {
        let overlaps = chosen
            .iter()
            .any(|c| mention.start < c.end && c.start < mention.end);
        let joins = chosen.is_empty() || (mention.name_like && chosen[0].name_like);
        if !overlaps && joins && !chosen.iter().any(|c| c.node == mention.node) {
            chosen.push(mention);
        }
    }
    Ok(chosen.into_iter().map(|m| m.node).collect())
}

/// The mention `run` makes, trying it as written, then without the
/// punctuation or possessive around it.
fn mention_of(
    run: &str,
    start: usize,
    end: usize,
    lookup: &mut impl FnMut(&str) -> Result<Option<String>>,
) -> Result<Option<Mention>> {
    if end - start == 1 && FUNCTION_WORDS.contains(&run.to_lowercase().as_str()) {
        return Ok(None);
    }
    let closing = |c: char| "?,.;:!\"')".contains(c);
    let trailing = run.trim_end_matches(closing);
    let variants = [
        run,
        trailing,
        trailing
            .strip_suffix("'s")
            .unwrap_or(trailing)
            .trim_start_matches(['"', '\'', '(']),
    ];
    for (i, text) in variants.iter().enumerate() {
        if text.is_empty() || variants[..i].contains(text) {
            continue;
        }
        if let Some(node) = lookup(text)? {
            return Ok(Some(Mention {
                start,
                end,
                node,
                name_like: name_like(text),
                chars: text.chars().count(),
            }));
        }
    }
    Ok(None)
}

/// Whether the first and last words (those beginning with a letter or a
/// digit) begin with a capital or a digit, as a title or a name does:
/// `Enter the Dragon`, `House of 9`, `1408`.
fn name_like(text: &str) -> bool {
    let initials: Vec<char> = text
        .split_whitespace()
        .filter_map(|w| w.chars().next())
        .filter(|c| c.is_alphanumeric())
        .collect();
    let capital = |c: &char| c.is_uppercase() || c.is_numeric();
    initials.first().is_some_and(capital) && initials.last().is_some_and(capital)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Topics found with a lookup over `names`, exact first, then ignoring
    /// case.
    fn topics(question: &str, names: &[&str]) -> Vec<String> {
        let folded: HashMap<String, &str> = names.iter().map(|n| (n.to_lowercase(), *n)).collect();
        find(question, |text| {
            Ok(names
                .iter()
                .find(|n| **n == text)
                .copied()
                .or_else(|| folded.get(&text.to_lowercase()).copied())
                .map(String::from))
        })
        .unwrap()
    }

    #[test]
    fn a_name_written_as_a_name_wins_over_a_longer_common_word() {
        let names = ["director", "Jet Lag", "Lag"];
        assert_eq!(
            topics("who is the director of Jet Lag", &names),
            ["Jet Lag"]
        );
    }

    #[test]
    fn a_title_with_small_words_inside_is_one_name() {
        let names = ["Dragon", "Enter the Dragon", "words"];
        assert_eq!(
            topics("describe movie Enter the Dragon in a few words", &names),
            ["Enter the Dragon"]
        );
        assert_eq!(topics("who stars in 1408?", &["stars", "1408"]), ["1408"]);
    }

    #[test]
    fn in_a_lowercase_question_the_longest_name_wins_alone() {
        let names = ["Warwick Davis", "Davis", "movies"];
        assert_eq!(
            topics("which movies can be described by warwick davis", &names),
            ["Warwick Davis"]
        );
    }

    #[test]
    fn punctuation_and_possessives_around_a_name_are_dropped_unless_part_of_it() {
        let names = ["Is Anybody There?", "Heat", "Barfi!"];
        assert_eq!(
            topics("who starred in Is Anybody There?", &names),
            ["Is Anybody There?"]
        );
        assert_eq!(topics("who was Heat's director?", &names), ["Heat"]);
        assert_eq!(topics("who wrote \"Heat\"?", &names), ["Heat"]);
        assert_eq!(
            topics("the writer of Barfi! wrote what", &names),
            ["Barfi!"]
        );
    }

    #[test]
    fn two_names_are_both_topics_and_function_words_are_none() {
        let names = ["Tom Cruise", "Michael Mann", "The", "films"];
        assert_eq!(
            topics(
                "The films starring Tom Cruise and directed by Michael Mann",
                &names
            ),
            ["Michael Mann", "Tom Cruise"]
        );
        assert!(topics("what is the best", &names).is_empty());
    }
}
