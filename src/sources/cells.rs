//! Reading one cell of a table file: numbers written as people write them
//! (thousands separators, percent signs, currency symbols, units) and dates
//! in the common written forms, normalised to ISO 8601.

use chrono::NaiveDate;

/// A cell read as a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number {
    pub value: f64,
    /// No fractional part or exponent was written.
    pub integer: bool,
    /// Written as a bare numeral (`12`, `-3.5`), so the column can hold the
    /// number itself with nothing lost.
    pub plain: bool,
}

const CURRENCY: &[char] = &['$', '€', '£', '¥', '₹', '₩', '₽'];
const MINUS: &[char] = &['-', '−', '–'];
/// A unit after a number is a short word: `km`, `kg`, `mph`, `pts`, `1st`.
const MAX_UNIT_CHARS: usize = 5;

/// The number a cell states, if it states one and nothing else.
pub fn parse_number(cell: &str) -> Option<Number> {
    let text = cell.trim();
    if let Some(plain) = parse_plain(text) {
        return Some(plain);
    }
    let (negative, rest) = match text.strip_prefix(MINUS) {
        Some(rest) => (true, rest.trim_start()),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let rest = rest.trim_start_matches(CURRENCY).trim_start();
    let rest = strip_suffix_unit(rest)?;
    let (value, integer) = parse_grouped(rest)?;
    Some(Number {
        value: if negative { -value } else { value },
        integer,
        plain: false,
    })
}

/// A bare numeral: optional minus, digits, optional fraction and exponent.
fn parse_plain(text: &str) -> Option<Number> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let starts_well = digits.starts_with(|c: char| c.is_ascii_digit())
        || (digits.starts_with('.') && digits[1..].starts_with(|c: char| c.is_ascii_digit()));
    // `007` is an identifier, not seven; `0.5` and `0` are numbers.
    let leading_zero = digits.len() > 1
        && digits.starts_with('0')
        && digits[1..].starts_with(|c: char| c.is_ascii_digit());
    if !starts_well || leading_zero || !digits.chars().all(|c| "0123456789.eE+-".contains(c)) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    Some(Number {
        value,
        integer: !text.contains(['.', 'e', 'E']),
        plain: true,
    })
}

/// The text before a trailing `%` or unit word, or all of it.
fn strip_suffix_unit(text: &str) -> Option<&str> {
    if let Some(rest) = text.strip_suffix('%') {
        return Some(rest.trim_end());
    }
    let number_end = text
        .char_indices()
        .rfind(|(_, c)| c.is_ascii_digit())
        .map(|(i, _)| i + 1)?;
    let unit = text[number_end..].trim();
    let is_unit = unit.chars().count() <= MAX_UNIT_CHARS
        && unit
            .chars()
            .all(|c| c.is_alphabetic() || matches!(c, '/' | '.' | '²' | '³'))
        && !is_month(unit);
    is_unit.then(|| text[..number_end].trim_end())
}

/// `3 April` is a day, not three Aprils.
fn is_month(word: &str) -> bool {
    const MONTHS: &[&str] = &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
        "march", "april", "june", "july",
    ];
    MONTHS.contains(&word.trim_end_matches('.').to_lowercase().as_str())
}

/// Digits in groups of three separated by commas, and an optional fraction.
fn parse_grouped(text: &str) -> Option<(f64, bool)> {
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let groups: Vec<&str> = whole.split(',').collect();
    let first_ok = ((1..=3).contains(&groups[0].len()) || groups.len() == 1)
        && !(groups[0].len() > 1 && groups[0].starts_with('0'));
    let groups_ok = groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()))
        && !groups[0].is_empty()
        && groups[1..].iter().all(|g| g.len() == 3);
    let fraction_ok =
        fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    if !(first_ok && groups_ok && fraction_ok) {
        return None;
    }
    let mut digits = groups.concat();
    if let Some(f) = fraction {
        digits.push('.');
        digits.push_str(f);
    }
    Some((digits.parse().ok()?, fraction.is_none()))
}

/// Written date forms read, day-first only where a dot separates (as in
/// `5.1.2010`); `01/05/2010` is read month-first, as in the US.
const DATE_FORMATS: &[&str] = &[
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%B %d, %Y",
    "%B %d %Y",
    "%b %d, %Y",
    "%b %d %Y",
    "%b. %d, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%d %B, %Y",
];

/// The ISO 8601 form (`YYYY-MM-DD`) of a cell that is a date.
pub fn parse_date(cell: &str) -> Option<String> {
    let text = cell.trim();
    // Every form holds a four-digit year; without one, `5 May` would pass.
    if text.len() < 8 || !has_year(text) {
        return None;
    }
    DATE_FORMATS
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(text, format).ok())
        .map(|date| date.format("%Y-%m-%d").to_string())
}

fn has_year(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|run| run.len() == 4)
}

/// What a column of cells holds, decided over its non-empty cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Every cell a bare integer: stored as INTEGER.
    Integer,
    /// Every cell a bare numeral: stored as REAL.
    Real,
    Text,
    /// Mostly numbers written with separators, units or signs: the text
    /// stays, and a second column holds the numbers.
    TextWithNumber {
        integer: bool,
    },
    /// Mostly dates not yet in ISO form: the text stays, and a second
    /// column holds the ISO dates.
    TextWithDate,
}

/// The share of a column's cells that must read as numbers (or dates) for
/// it to get a numeric (or date) column: a few `n/a` or `—` cells should not
/// leave a column of figures as text only.
const TYPED_SHARE: f64 = 0.8;

pub fn column_kind<'a>(cells: impl Iterator<Item = &'a str> + Clone) -> ColumnKind {
    let filled: Vec<&str> = cells.map(str::trim).filter(|c| !c.is_empty()).collect();
    if filled.is_empty() {
        return ColumnKind::Text;
    }
    let numbers: Vec<Number> = filled.iter().filter_map(|c| parse_number(c)).collect();
    if numbers.len() == filled.len() && numbers.iter().all(|n| n.plain) {
        return if numbers.iter().all(|n| n.integer) && filled.iter().all(|c| fits_i64(c)) {
            ColumnKind::Integer
        } else {
            ColumnKind::Real
        };
    }
    let enough = |count: usize| count as f64 >= TYPED_SHARE * filled.len() as f64;
    if enough(numbers.len()) {
        return ColumnKind::TextWithNumber {
            integer: numbers.iter().all(|n| n.integer && n.value.abs() < 9e15),
        };
    }
    let dates = filled.iter().filter_map(|c| parse_date(c)).count();
    let already_iso = filled.iter().all(|c| parse_date(c).as_deref() == Some(*c));
    if enough(dates) && !already_iso {
        return ColumnKind::TextWithDate;
    }
    ColumnKind::Text
}

fn fits_i64(cell: &str) -> bool {
    cell.parse::<i64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(cell: &str) -> Option<f64> {
        parse_number(cell).map(|n| n.value)
    }

    #[test]
    fn numbers_are_read_through_their_decorations() {
        assert_eq!(value("14,749"), Some(14749.0));
        assert_eq!(value("1,234,567.5"), Some(1234567.5));
        assert_eq!(value("$1,200"), Some(1200.0));
        assert_eq!(value("-€3.50"), Some(-3.5));
        assert_eq!(value("45%"), Some(45.0));
        assert_eq!(value("12.5 km"), Some(12.5));
        assert_eq!(value("1st"), Some(1.0));
        assert_eq!(value("−7"), Some(-7.0));
        assert!(parse_number("42").unwrap().plain);
        assert!(!parse_number("14,749").unwrap().plain);
    }

    #[test]
    fn text_that_only_contains_digits_is_not_a_number() {
        for cell in [
            "2-1",
            "1,23",
            "12,3456",
            "Route 66",
            "3 April",
            "",
            "n/a",
            "1.2.3",
            "007",
            "12 kilometres",
        ] {
            assert_eq!(value(cell), None, "{cell}");
        }
    }

    #[test]
    fn dates_in_written_forms_become_iso() {
        assert_eq!(parse_date("January 5, 2010").as_deref(), Some("2010-01-05"));
        assert_eq!(parse_date("5 Jan 2010").as_deref(), Some("2010-01-05"));
        assert_eq!(parse_date("2010/01/05").as_deref(), Some("2010-01-05"));
        assert_eq!(parse_date("01/05/2010").as_deref(), Some("2010-01-05"));
        assert_eq!(parse_date("5.1.2010").as_deref(), Some("2010-01-05"));
        assert_eq!(parse_date("2010"), None);
        assert_eq!(parse_date("May 5"), None);
    }

    #[test]
    fn a_column_is_typed_by_most_of_its_cells() {
        let kind = |cells: &[&str]| column_kind(cells.iter().copied());
        assert_eq!(kind(&["1", "2", "", "30"]), ColumnKind::Integer);
        assert_eq!(kind(&["1", "2.5"]), ColumnKind::Real);
        assert_eq!(
            kind(&["14,749", "5,465", "982", "1,002", "n/a"]),
            ColumnKind::TextWithNumber { integer: true }
        );
        assert_eq!(kind(&["Alaska", "United", "1"]), ColumnKind::Text);
        assert_eq!(
            kind(&["May 5, 2010", "June 1, 2011"]),
            ColumnKind::TextWithDate
        );
        assert_eq!(kind(&["2010-05-05", "2011-06-01"]), ColumnKind::Text);
        assert_eq!(kind(&["", " "]), ColumnKind::Text);
    }
}
