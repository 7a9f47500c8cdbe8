//! A power written as an operator: small models bring `x ** 2` (and
//! `x ^ 2`) from Python and spreadsheets into SQL, where SQLite has neither
//! (a syntax error near `*`, an unrecognized token `^`) but has `POWER`.
//! Each such operator becomes a `POWER(base, exponent)` call over the
//! operands next to it, the rightmost first, so `a ** b ** c` reads as
//! `a ** (b ** c)`, as in Python.

/// Rewrites made on one query at most, so a text of nothing but operators
/// cannot keep the repair busy.
const MAX_REWRITES: usize = 16;

/// `sql` with each `**` and `^` between two operands (a number, a name, a
/// call or a parenthesised group, the exponent with an optional sign)
/// written as a `POWER` call; None when there is none.
pub(super) fn power_calls(sql: &str) -> Option<String> {
    let mut text = sql.to_string();
    for _ in 0..MAX_REWRITES {
        match rewrite_last(&text) {
            Some(rewritten) => text = rewritten,
            None => break,
        }
    }
    (text != sql).then_some(text)
}

/// `sql` with its last power operator outside string literals rewritten;
/// None when there is none, or its operands cannot be told.
fn rewrite_last(sql: &str) -> Option<String> {
    let chars: Vec<char> = sql.chars().collect();
    let in_literal = literal_mask(&chars);
    let at = (0..chars.len()).rev().find(|&i| {
        !in_literal[i]
            && (chars[i] == '^'
                || (chars[i] == '*' && i > 0 && chars[i - 1] == '*' && !in_literal[i - 1]))
    })?;
    let width = if chars[at] == '^' { 1 } else { 2 };
    let operator_start = at + 1 - width;
    let base_end = skip_back_spaces(&chars, operator_start);
    let base_start = operand_before(&chars, &in_literal, base_end)?;
    let exponent_start = skip_spaces(&chars, at + 1);
    let exponent_end = operand_after(&chars, &in_literal, exponent_start)?;
    let piece = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    Some(format!(
        "{}POWER({}, {}){}",
        piece(0, base_start),
        piece(base_start, base_end),
        piece(exponent_start, exponent_end),
        piece(exponent_end, chars.len())
    ))
}

/// Whether each character lies inside a string literal (quotes included).
fn literal_mask(chars: &[char]) -> Vec<bool> {
    let mut inside = false;
    chars
        .iter()
        .map(|&c| {
            if c == '\'' {
                inside = !inside;
                true
            } else {
                inside
            }
        })
        .collect()
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.'
}

fn skip_spaces(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

fn skip_back_spaces(chars: &[char], mut end: usize) -> usize {
    while end > 0 && chars[end - 1].is_whitespace() {
        end -= 1;
    }
    end
}

/// Where the operand that ends at `end` starts: a parenthesised group with
/// the name of its call, or a name or number.
fn operand_before(chars: &[char], in_literal: &[bool], end: usize) -> Option<usize> {
    let mut start = end;
    if end > 0 && chars[end - 1] == ')' && !in_literal[end - 1] {
        let mut depth = 0usize;
        loop {
            start = start.checked_sub(1)?;
            match chars[start] {
                _ if in_literal[start] => {}
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    while start > 0 && is_name_char(chars[start - 1]) && !in_literal[start - 1] {
        start -= 1;
    }
    (start < end).then_some(start)
}

/// Where the operand that starts at `start` ends: an optional sign, then a
/// name or number, a call, or a parenthesised group.
fn operand_after(chars: &[char], in_literal: &[bool], start: usize) -> Option<usize> {
    let mut end = start;
    if matches!(chars.get(end), Some('-' | '+')) {
        end = skip_spaces(chars, end + 1);
    }
    let name_start = end;
    while chars
        .get(end)
        .is_some_and(|&c| is_name_char(c) && !in_literal[end])
    {
        end += 1;
    }
    if chars.get(end) == Some(&'(') {
        let mut depth = 0usize;
        loop {
            match chars.get(end)? {
                _ if in_literal[end] => {}
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end += 1;
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
    }
    (end > name_start).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_operators_become_power_calls() {
        assert_eq!(
            power_calls("SELECT sqrt(1 - (c.Drag * (c.Top_Speed / 3600) ** 2)) FROM cars AS c")
                .as_deref(),
            Some("SELECT sqrt(1 - (c.Drag * POWER((c.Top_Speed / 3600), 2))) FROM cars AS c")
        );
        assert_eq!(
            power_calls("SELECT x / (3 * 10**-6) FROM t").as_deref(),
            Some("SELECT x / (3 * POWER(10, -6)) FROM t")
        );
        // Right to left, as Python reads a chain; calls are operands.
        assert_eq!(
            power_calls("SELECT a ** b ^ SQRT(c) FROM t").as_deref(),
            Some("SELECT POWER(a, POWER(b, SQRT(c))) FROM t")
        );
    }

    #[test]
    fn literals_and_stars_are_left_alone() {
        for sql in [
            "SELECT COUNT(*) * 2 FROM t WHERE a = '2 ** 3'",
            "SELECT * FROM t",
            "SELECT a * -2 FROM t",
        ] {
            assert_eq!(power_calls(sql), None, "{sql}");
        }
    }
}
