//! Two equalities of one value with two different ISO dates, both
//! required (`order_date = '2024-03-01' AND order_date = '2024-03-31'`),
//! can never hold together: the query finds nothing, or counts nothing,
//! whatever the data. A model that writes them for "in March" means the
//! days from the one date to the other, so such a pair becomes
//! `order_date BETWEEN '2024-03-01' AND '2024-03-31'`.

use super::rewrite::{conjoin, conjuncts, is_and, is_iso_date, rewrite_query};
use sqlparser::ast::{BinaryOperator, Expr, VisitorMut};
use std::ops::ControlFlow;

/// `sql` with every such pair of equalities made a range; None when it
/// has none (or is no query the parser reads).
pub(super) fn as_ranges(sql: &str) -> Option<String> {
    // Most queries hold no two date literals: they are not parsed.
    if iso_date_openings(sql) < 2 {
        return None;
    }
    let mut widener = Widener { changed: false };
    rewrite_query(sql, &mut widener, |w| w.changed)
}

/// How many times `sql` holds a quote followed by four digits and a dash.
fn iso_date_openings(sql: &str) -> usize {
    sql.as_bytes()
        .windows(6)
        .filter(|w| w[0] == b'\'' && w[1..5].iter().all(u8::is_ascii_digit) && w[5] == b'-')
        .count()
}

struct Widener {
    changed: bool,
}

impl VisitorMut for Widener {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if !is_and(expr) {
            return ControlFlow::Continue(());
        }
        let mut terms = conjuncts(expr.clone());
        if widen_one_pair(&mut terms) {
            while widen_one_pair(&mut terms) {}
            if let Some(widened) = conjoin(terms) {
                *expr = widened;
                self.changed = true;
            }
        }
        ControlFlow::Continue(())
    }
}

/// The value and the date of `value = 'YYYY-MM-DD'`, either way round.
fn equal_to_date(term: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = term
    else {
        return None;
    };
    match (is_iso_date(left), is_iso_date(right)) {
        (false, true) => Some((left, right)),
        (true, false) => Some((right, left)),
        _ => None,
    }
}

/// Replaces the first pair of terms that equate one value with two
/// different dates by the range between the dates, where the first of
/// them stood; false when there is none.
fn widen_one_pair(terms: &mut Vec<Expr>) -> bool {
    for i in 0..terms.len() {
        for j in i + 1..terms.len() {
            let (Some((value, a)), Some((other, b))) =
                (equal_to_date(&terms[i]), equal_to_date(&terms[j]))
            else {
                continue;
            };
            if value.to_string() != other.to_string() {
                continue;
            }
            let (a_text, b_text) = (a.to_string(), b.to_string());
            if a_text == b_text {
                continue;
            }
            let (low, high) = if a_text < b_text { (a, b) } else { (b, a) };
            let range = Expr::Between {
                expr: Box::new(value.clone()),
                negated: false,
                low: Box::new(low.clone()),
                high: Box::new(high.clone()),
            };
            terms[i] = range;
            terms.remove(j);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_dates_one_value_must_equal_become_the_days_between() {
        assert_eq!(
            as_ranges(
                "SELECT SUM(revenue) FROM sales WHERE order_date = '2024-03-01' AND order_date = '2024-03-31'"
            )
            .as_deref(),
            Some("SELECT SUM(revenue) FROM sales WHERE order_date BETWEEN '2024-03-01' AND '2024-03-31'")
        );
        // Anywhere in a chain of conditions, either way round and in
        // either order.
        assert_eq!(
            as_ranges(
                "SELECT COUNT(*) FROM sales AS s WHERE s.region = 'West' AND '2024-06-30' = s.day AND (s.units > 3 AND s.day = '2024-04-01')"
            )
            .as_deref(),
            Some("SELECT COUNT(*) FROM sales AS s WHERE s.region = 'West' AND s.day BETWEEN '2024-04-01' AND '2024-06-30' AND s.units > 3")
        );
    }

    #[test]
    fn conditions_that_can_hold_together_are_left() {
        for sql in [
            "SELECT * FROM sales WHERE order_date = '2024-03-01' OR order_date = '2024-03-31'",
            "SELECT * FROM sales WHERE order_date = '2024-03-01' AND ship_date = '2024-03-31'",
            "SELECT * FROM sales WHERE order_date = '2024-03-01' AND order_date = '2024-03-01'",
            "SELECT * FROM sales WHERE maker = 'Audi' AND maker = 'BMW'",
            "SELECT * FROM sales WHERE order_date >= '2024-03-01' AND order_date <= '2024-03-31'",
        ] {
            assert_eq!(as_ranges(sql), None, "{sql}");
        }
    }
}
