//! Dates stored as text in a written form, `MM/DD/YYYY`, `DD/MM/YYYY`,
//! `DD.MM.YYYY` or `DD-MM-YYYY`: SQLite's date functions read none of
//! them (`strftime('%Y', '03/15/2021')` is NULL), and as text they sort by
//! month or day before the year, so "the latest order" is December's of
//! any year. Whether the month or the day comes first is read from the
//! examples: a first field past 12 is a day, a second one a month.

use crate::db::Value;

/// How a column writes its dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::search) struct WrittenForm {
    separator: char,
    /// None where no example tells.
    month_first: Option<bool>,
}

impl WrittenForm {
    /// The form as people write it: `MM/DD/YYYY`, or `DD.MM.YYYY`, or
    /// `MM/DD/YYYY or DD/MM/YYYY` where the examples do not tell.
    pub(super) fn name(&self) -> String {
        let s = self.separator;
        let month_first = format!("MM{s}DD{s}YYYY");
        let day_first = format!("DD{s}MM{s}YYYY");
        match self.month_first {
            Some(true) => month_first,
            Some(false) => day_first,
            None => format!("{month_first} or {day_first}"),
        }
    }

    /// How the prompt tells the model to read `column` (`table.column`)
    /// as a date: as `YYYY-MM-DD` where the order is known, and its year
    /// always.
    pub(super) fn reading(&self, column: &str) -> String {
        let year = format!("substr({column}, 7, 4)");
        match self.iso(column) {
            Some(iso) => format!("Read one as YYYY-MM-DD with {iso}; its year is {year}."),
            None => format!("Its year is {year}."),
        }
    }

    /// Whether the examples told the month from the day.
    pub(in crate::search) fn order_known(&self) -> bool {
        self.month_first.is_some()
    }

    /// `column` (SQL naming a column of this form) read as `YYYY-MM-DD`;
    /// None where the order of month and day is not known.
    pub(in crate::search) fn iso(&self, column: &str) -> Option<String> {
        let part = |first: bool| {
            if first {
                format!("substr({column}, 1, 2)")
            } else {
                format!("substr({column}, 4, 2)")
            }
        };
        let month_first = self.month_first?;
        Some(format!(
            "substr({column}, 7, 4) || '-' || {} || '-' || {}",
            part(month_first),
            part(!month_first)
        ))
    }
}

/// The written form every example of a column shares; None when one is
/// no such date (or the examples contradict each other).
pub(in crate::search) fn written_form(examples: &[Value]) -> Option<WrittenForm> {
    let mut separator = None;
    let (mut first_past_12, mut second_past_12) = (false, false);
    for value in examples {
        let Value::Text(text) = value else {
            return None;
        };
        let (sep, first, second) = fields(text)?;
        if *separator.get_or_insert(sep) != sep {
            return None;
        }
        first_past_12 |= first > 12;
        second_past_12 |= second > 12;
    }
    let month_first = match (first_past_12, second_past_12) {
        (true, true) => return None,
        (true, false) => Some(false),
        (false, true) => Some(true),
        (false, false) => None,
    };
    Some(WrittenForm {
        separator: separator?,
        month_first,
    })
}

/// The separator and the first two fields of `NN?NN?YYYY` (a time may
/// follow after a space), each field 1 to 31.
fn fields(text: &str) -> Option<(char, u32, u32)> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = bytes.get(range)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(digits).ok()?.parse().ok())?
    };
    let separator = *bytes.get(2)? as char;
    let ends_well = bytes.get(10).is_none_or(|&b| b == b' ');
    if !matches!(separator, '/' | '.' | '-')
        || bytes.get(5) != Some(&(separator as u8))
        || !ends_well
    {
        return None;
    }
    let (first, second) = (number(0..2)?, number(3..5)?);
    number(6..10)?;
    let in_range = |n: u32| (1..=31).contains(&n);
    (in_range(first) && in_range(second)).then_some((separator, first, second))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(examples: &[&str]) -> Option<WrittenForm> {
        written_form(
            &examples
                .iter()
                .map(|e| Value::Text((*e).into()))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_order_of_month_and_day_is_read_from_the_examples() {
        let us = form(&["03/15/2021", "12/01/2022"]).unwrap();
        assert_eq!(us.name(), "MM/DD/YYYY");
        assert_eq!(
            us.reading("o.d"),
            "Read one as YYYY-MM-DD with substr(o.d, 7, 4) || '-' || substr(o.d, 1, 2) \
             || '-' || substr(o.d, 4, 2); its year is substr(o.d, 7, 4)."
        );
        let european = form(&["15.03.2021 08:30", "01.12.2022"]).unwrap();
        assert_eq!(european.name(), "DD.MM.YYYY");
        assert!(european
            .reading("d")
            .contains("substr(d, 4, 2) || '-' || substr(d, 1, 2)"));
        // Nothing past 12: the year only.
        let unknown = form(&["03/05/2021", "12/01/2022"]).unwrap();
        assert_eq!(unknown.name(), "MM/DD/YYYY or DD/MM/YYYY");
        assert_eq!(unknown.reading("d"), "Its year is substr(d, 7, 4).");
    }

    #[test]
    fn other_texts_are_no_written_dates() {
        for examples in [
            &["2021-03-15"][..],
            &["3/15/2021"],
            &["03/15/2021", "15.03.2021"],
            &["13/15/2021", "15/13/2021"],
            &["03/15/21"],
            &["AB/CD/EFGH"],
            &["03/15/2021x"],
        ] {
            assert_eq!(form(examples), None, "{examples:?}");
        }
    }
}
