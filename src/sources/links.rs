//! Keys between table files. Files exported from one database keep their
//! links only as shared values (`employees.dept` holds the codes of
//! `departments.dept_code`); declared as foreign keys, they show the model
//! how the tables join, and the join and value repairs follow them.

use super::store::StoredTable;
use crate::db::schema::folded_name;
use std::collections::HashSet;

/// A column of one table that holds another table's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub column: String,
    pub table: String,
    pub key: String,
}

/// A column of a table refers to a column of another table when that
/// column names each of its rows once (distinct values, at least two of
/// them), every value of the column is one of them, and the column holds
/// at least two distinct values. Whole numbers fit many keys by chance (a
/// count of 1 to 40 fits any numbering of 40 rows), so a column of them
/// must also share the start of its name with the key or its table
/// (`dept_id` and `dept`). Where a column fits several keys, the one its
/// name shares is taken; where that leaves more than one, none.
pub fn references(tables: &[StoredTable]) -> Vec<Vec<Reference>> {
    let keys: Vec<Vec<(usize, HashSet<&str>)>> = tables
        .iter()
        .map(|table| {
            (0..table.columns.len())
                .filter_map(|c| Some((c, distinct_key_values(table, c)?)))
                .collect()
        })
        .collect();
    tables
        .iter()
        .enumerate()
        .map(|(t, table)| {
            (0..table.columns.len())
                .filter_map(|c| reference_of(tables, &keys, t, c))
                .collect()
        })
        .collect()
}

/// The key column `c` of table `t` refers to, by the rule of
/// [`references`]; `keys` holds each table's key columns and their values.
fn reference_of(
    tables: &[StoredTable],
    keys: &[Vec<(usize, HashSet<&str>)>],
    t: usize,
    c: usize,
) -> Option<Reference> {
    let table = &tables[t];
    let values = column_values(table, c)?;
    if values.len() < 2 {
        return None;
    }
    let mut fits = Vec::new();
    for (other, columns) in keys.iter().enumerate().filter(|&(other, _)| other != t) {
        for (key, held) in columns {
            if !values.is_subset(held) {
                continue;
            }
            let named = names_share_a_start(
                &table.columns[c].name,
                &tables[other].columns[*key].name,
                &tables[other].name,
            );
            if named || !table.holds_integers(c) {
                fits.push((other, *key, named));
            }
        }
    }
    let named: Vec<_> = fits.iter().filter(|f| f.2).collect();
    let (other, key, _) = match (&fits[..], &named[..]) {
        (_, [one]) => **one,
        ([one], []) => *one,
        _ => return None,
    };
    Some(Reference {
        column: table.columns[c].name.clone(),
        table: tables[other].name.clone(),
        key: tables[other].columns[key].name.clone(),
    })
}

/// The distinct values of a column as written in the file; None for a
/// column not written as such (the row index, a number or date read from
/// text).
fn column_values(table: &StoredTable, column: usize) -> Option<HashSet<&str>> {
    let cells = table.file_cells(column)?;
    Some(cells.flatten().collect())
}

/// The values of a column that names each row once; None for any other.
fn distinct_key_values(table: &StoredTable, column: usize) -> Option<HashSet<&str>> {
    let cells: Vec<Option<&str>> = table.file_cells(column)?.collect();
    let values: HashSet<&str> = cells.iter().flatten().copied().collect();
    (values.len() >= 2 && values.len() == cells.len()).then_some(values)
}

/// Shortest start two names must share.
const MIN_SHARED_START: usize = 3;

/// Whether one of `column` (or `column` without a closing `id`) and
/// `key` (or `key`'s table) starts with the other, ignoring case and
/// underscores (`dept` and `dept_code`, `customer_id` and `customers`).
fn names_share_a_start(column: &str, key: &str, key_table: &str) -> bool {
    let column = folded_name(column);
    let stem = column.strip_suffix("id").unwrap_or(&column);
    let others = [folded_name(key), folded_name(key_table)];
    [column.as_str(), stem].iter().any(|name| {
        others.iter().any(|other| {
            let (short, long) = if name.len() <= other.len() {
                (*name, other.as_str())
            } else {
                (other.as_str(), *name)
            };
            short.len() >= MIN_SHARED_START && long.starts_with(short)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::RawTable;

    fn table(name: &str, header: &[&str], rows: &[&[&str]]) -> StoredTable {
        let text = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect();
        StoredTable::new(
            name.into(),
            RawTable::from_text(text(header), rows.iter().map(|r| text(r)).collect()),
        )
    }

    fn departments() -> StoredTable {
        table(
            "departments",
            &["Dept Code", "Name", "Floor"],
            &[
                &["ENG", "Engineering", "1"],
                &["HR", "People", "2"],
                &["OPS", "Operations", "3"],
            ],
        )
    }

    #[test]
    fn a_column_of_another_files_codes_refers_to_them() {
        let employees = table(
            "employees",
            &["Name", "Dept", "Level"],
            &[
                &["Ann", "ENG", "1"],
                &["Bo", "OPS", "3"],
                &["Cy", "ENG", "2"],
            ],
        );
        let links = references(&[employees, departments()]);
        assert_eq!(
            links[0],
            [Reference {
                column: "dept".into(),
                table: "departments".into(),
                key: "dept_code".into(),
            }]
        );
        // `level`'s 1 to 3 fit `floor`'s numbering, but the names share
        // nothing; the key table refers to nothing.
        assert!(links[1].is_empty());
    }

    #[test]
    fn whole_numbers_refer_to_a_key_whose_name_they_share() {
        let customers = table(
            "customers",
            &["Id", "Name"],
            &[&["1", "Ann"], &["2", "Bo"], &["3", "Cy"]],
        );
        let orders = table(
            "orders",
            &["Customer ID", "Total"],
            &[&["1", "10"], &["3", "12"], &["3", "2"]],
        );
        let links = references(&[customers, orders]);
        assert_eq!(
            links[1],
            [Reference {
                column: "customer_id".into(),
                table: "customers".into(),
                key: "id".into(),
            }]
        );
    }

    #[test]
    fn a_column_that_fits_two_keys_or_one_value_refers_to_none() {
        let sites = table(
            "sites",
            &["Code", "City"],
            &[&["ENG", "Oslo"], &["OPS", "Rome"]],
        );
        let staff = table(
            "staff",
            &["Unit", "Grade"],
            &[&["ENG", "A"], &["OPS", "A"], &["ENG", "A"]],
        );
        let links = references(&[staff, departments(), sites]);
        assert!(links[0].is_empty(), "{:?}", links[0]);
    }
}
