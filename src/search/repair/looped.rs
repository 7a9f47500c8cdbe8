//! A query caught in a loop inside its SELECT list, before any FROM
//! (`(1 + x) * (1 + x) * ...`, one column listed over and over). The
//! decoder's loop cut leaves a text no end of which can run: an end before
//! the FROM reads no table (`cut`). Such a query is kept up to the end of
//! the loop's first turn, at the shallowest place there where a term of
//! the list or expression ends, with the parentheses open there closed;
//! the model then writes the rest from a FROM (`redecode`).

use super::super::sql_text::{units, Unit};

/// A turn must repeat this many times back to back (the decoder cuts at
/// the third repeat)...
const MIN_TURNS: usize = 3;
/// ...over at least this many bytes, so that a few repeated signs (`)))`)
/// are no loop.
const MIN_LOOP_BYTES: usize = 24;
/// Longest turn looked for, in bytes (the decoder looks for up to 64
/// tokens, some 3 to 5 characters each).
const MAX_TURN_BYTES: usize = 320;
/// Signs that join one term to the next in a SELECT list or an expression.
const JOINERS: [char; 6] = [',', '*', '+', '-', '/', '|'];

/// Where the loop that ends `text` starts, and the length of its turn: the
/// shortest turn repeated [`MIN_TURNS`] times or more over the text's
/// tail. None when the text does not end in a loop.
fn trailing_loop(text: &[u8]) -> Option<(usize, usize)> {
    let n = text.len();
    (1..=MAX_TURN_BYTES.min(n / MIN_TURNS)).find_map(|turn| {
        let repeated = (turn..n)
            .rev()
            .take_while(|&i| text[i] == text[i - turn])
            .count();
        let covered = repeated + turn;
        (covered >= MIN_TURNS * turn && covered >= MIN_LOOP_BYTES).then_some((n - covered, turn))
    })
}

/// The places in a query, given as its `units`, where a term ends and a
/// joining sign follows (after spaces, if any): the byte offset just past
/// the term, and the parentheses open there. Signs inside string literals
/// do not count.
fn term_ends(units: &[(usize, Unit<'_>)]) -> Vec<(usize, i32)> {
    let mut ends = Vec::new();
    let mut depth = 0i32;
    // Just past the latest term, while only spaces have followed it.
    let mut term_end: Option<usize> = None;
    for &(at, unit) in units {
        match unit {
            _ if unit.is_space() => {}
            Unit::Sign(c) if JOINERS.contains(&c) => {
                if let Some(end) = term_end.take() {
                    ends.push((end, depth));
                }
            }
            Unit::Sign('(') => {
                depth += 1;
                term_end = None;
            }
            // A closed group or quoted name ends a term.
            Unit::Sign(c @ (')' | '"' | '`' | ']')) => {
                depth -= i32::from(c == ')');
                term_end = Some(at + 1);
            }
            Unit::Sign(_) => term_end = None,
            Unit::Word(text) | Unit::Literal(text) => term_end = Some(at + text.len()),
        }
    }
    ends
}

/// `sql`, which reads no table yet and ends in a loop, kept through the
/// loop's first turn up to where a FROM may follow: the shallowest term end
/// within one turn after the first, the earliest of equals, with the
/// parentheses open there closed. None for a query with a FROM, one that
/// does not end in a loop, or a loop with no term end.
pub(super) fn before_from(sql: &str) -> Option<String> {
    let sql = sql.trim_end();
    let units = units(sql);
    if units
        .iter()
        .any(|(_, u)| matches!(u, Unit::Word(w) if w.eq_ignore_ascii_case("from")))
    {
        return None;
    }
    let (start, turn) = trailing_loop(sql.as_bytes())?;
    let second_turn = start + turn..start + 2 * turn;
    let (at, open) = term_ends(&units)
        .into_iter()
        .filter(|(at, _)| second_turn.contains(at))
        .min_by_key(|&(at, depth)| (depth, at))?;
    let open = usize::try_from(open).ok()?;
    Some(format!("{}{}", &sql[..at], ")".repeat(open)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_a_turn_repeated_three_times_at_the_end() {
        let text = b"SELECT a, b, c, d, c, d, c, d, c, d";
        let (start, turn) = trailing_loop(text).expect("a loop");
        assert_eq!(&text[start..start + turn], b", c, d");
        // Two turns are no loop; three short ones too short to tell from
        // ordinary text.
        assert_eq!(
            trailing_loop(b"SELECT alpha, beta, gamma, beta, gamma"),
            None
        );
        assert_eq!(trailing_loop(b"SELECT a, b, c, d, c, d, c, d"), None);
        assert_eq!(trailing_loop(b"SELECT ((((x))))"), None);
        assert_eq!(trailing_loop(b"SELECT a, b, c, d, e, f, g"), None);
    }

    #[test]
    fn a_product_looping_before_its_from_keeps_one_turn_at_depth_zero() {
        let sql = "SELECT (1 + T.a) * (1 + T.b) * (1 + T.b) * (1 + T.b) * (1 + T.b) * (1 + T";
        assert_eq!(
            before_from(sql).as_deref(),
            Some("SELECT (1 + T.a) * (1 + T.b)")
        );
    }

    #[test]
    fn a_select_list_looping_over_columns_keeps_them_once() {
        let sql = "SELECT R.Name,\n    R.Kind,\n    R.Note,\n    R.Note,\n    R.Note,\n    \
                   R.Note,\n    R.Note,\n    R.No";
        assert_eq!(
            before_from(sql).as_deref(),
            Some("SELECT R.Name,\n    R.Kind,\n    R.Note")
        );
    }

    #[test]
    fn groups_left_open_by_the_loop_are_closed() {
        let sql = "SELECT (2 * (100 * 0.8 * 500 * 1000 * 1000 * 1000 * 1000 * 1000 * 1000 * 10";
        assert_eq!(
            before_from(sql).as_deref(),
            Some("SELECT (2 * (100 * 0.8 * 500 * 1000))")
        );
    }

    #[test]
    fn queries_with_a_from_or_without_a_loop_are_left_alone() {
        let with_from = "SELECT a FROM t WHERE b IN (c, d, d, d, d, d, d, d, d, d, d, d, d, d";
        assert_eq!(before_from(with_from), None);
        assert_eq!(before_from("SELECT a, b, c, d, e, f, g, h, i, j"), None);
    }

    #[test]
    fn a_joining_sign_inside_a_literal_ends_no_term() {
        let quoted = "SELECT 'x, y' || 'x, y' || 'x, y' || 'x, y' || 'x, y' || 'x, y' || 'x";
        assert_eq!(
            before_from(quoted).as_deref(),
            Some("SELECT 'x, y' || 'x, y'")
        );
    }
}
