//! A power written as an operator: small models bring `x ** 2` (and
//! `x ^ 2`) from Python and spreadsheets into SQL, where SQLite has neither
//! (a syntax error near `*`, an unrecognized token `^`) but has `POWER`.
//! Each such operator becomes a `POWER(base, exponent)` call over the
//! operands next to it, the rightmost first, so `a ** b ** c` reads as
//! `a ** (b ** c)`, as in Python.

use super::super::sql_text::{skip_spaces, unit_offset, units, Unit};

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
    let units = units(sql);
    let sign = |i: usize| match units.get(i) {
        Some(&(_, Unit::Sign(c))) => Some(c),
        _ => None,
    };
    // The operator's last unit: `^`, or the second star of `**`.
    let at = (0..units.len()).rev().find(|&i| {
        sign(i) == Some('^') || (sign(i) == Some('*') && i > 0 && sign(i - 1) == Some('*'))
    })?;
    let operator_start = if sign(at) == Some('^') { at } else { at - 1 };
    let mut base_end = operator_start;
    while base_end > 0 && units[base_end - 1].1.is_space() {
        base_end -= 1;
    }
    let base_start = operand_before(&units, base_end)?;
    let exponent_start = skip_spaces(&units, at + 1);
    let exponent_end = operand_after(&units, exponent_start)?;
    let offset = |i: usize| unit_offset(sql, &units, i);
    Some(format!(
        "{}POWER({}, {}){}",
        &sql[..offset(base_start)],
        &sql[offset(base_start)..offset(base_end)],
        &sql[offset(exponent_start)..offset(exponent_end)],
        &sql[offset(exponent_end)..]
    ))
}

/// The unit index of the parenthesis matching the one at `at`: searched
/// forward from an opening one, backward from a closing one.
fn matching(units: &[(usize, Unit<'_>)], at: usize) -> Option<usize> {
    let (deeper, forward) = match units.get(at)?.1 {
        Unit::Sign('(') => ('(', true),
        Unit::Sign(')') => (')', false),
        _ => return None,
    };
    let mut depth = 0usize;
    let mut walk: Box<dyn Iterator<Item = usize>> = if forward {
        Box::new(at..units.len())
    } else {
        Box::new((0..=at).rev())
    };
    walk.find(|&i| {
        match units[i].1 {
            Unit::Sign(c) if c == deeper => depth += 1,
            Unit::Sign('(' | ')') => depth -= 1,
            _ => {}
        }
        depth == 0
    })
}

/// Where the operand whose units end before `end` starts: a parenthesised
/// group with the name of its call, or a name or number.
fn operand_before(units: &[(usize, Unit<'_>)], end: usize) -> Option<usize> {
    let mut start = end;
    if end > 0 && units[end - 1].1 == Unit::Sign(')') {
        start = matching(units, end - 1)?;
    }
    while start > 0 && units[start - 1].1.is_name_part() {
        start -= 1;
    }
    (start < end).then_some(start)
}

/// Where the operand that starts at unit `start` ends (exclusive): an
/// optional sign, then a name or number, a call, or a parenthesised group.
fn operand_after(units: &[(usize, Unit<'_>)], start: usize) -> Option<usize> {
    let mut end = start;
    if matches!(units.get(end), Some((_, Unit::Sign('-' | '+')))) {
        end = skip_spaces(units, end + 1);
    }
    let name_start = end;
    while units.get(end).is_some_and(|(_, u)| u.is_name_part()) {
        end += 1;
    }
    if matches!(units.get(end), Some((_, Unit::Sign('(')))) {
        end = matching(units, end)? + 1;
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
