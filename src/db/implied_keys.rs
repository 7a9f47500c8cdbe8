//! Keys a database implies without declaring them. Databases made by
//! programs or loaded from files often declare no foreign key at all,
//! though their columns name each other's keys (`concert.Stadium_ID` for
//! `stadium.Stadium_ID`, `WarningRule.GaugeId` for `RainGauge.Id`). Shown
//! as keys, they tell the model how the tables join, and the focused
//! schema and the join repairs follow them.

use super::key_names::{names_key, names_own_key, Naming};
use super::open::Deadline;
use super::schema::{quote_identifier, ForeignKey, Table};
use rusqlite::Connection;
use std::time::Duration;

/// Adds to `tables` the keys their names and values imply; meant for a
/// database that declares none. A column refers to another table's key
/// when its name names it ([`names_key`]) and its values are the key's,
/// all but a few; where the rows cannot tell (an empty table, a check out
/// of time) a name with the key's name or a key word in it decides, a
/// name that is only the table's name (`Country`) does not. A table's own
/// key refers only to a table with more rows. A table's key is its
/// one-column primary key or, where it declares none, its first column
/// named as its key ([`names_own_key`]) that names each row once. A
/// column that may refer to two keys refers to neither.
pub(super) fn imply_keys(
    conn: &Connection,
    deadline: &Deadline,
    tables: &mut [Table],
    timeout: Duration,
) {
    let probe = Probe {
        conn,
        deadline,
        timeout,
    };
    let keys: Vec<(usize, String)> = tables
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_view)
        .filter_map(|(i, t)| Some((i, probe.key_of(t)?)))
        .collect();
    let mut implied = Vec::new();
    for (t, table) in tables.iter().enumerate().filter(|(_, t)| !t.is_view) {
        for column in &table.columns {
            if let Some((other, key)) = key_referred_to(&probe, tables, &keys, t, &column.name) {
                implied.push((
                    t,
                    ForeignKey {
                        column: column.name.clone(),
                        foreign_table: tables[other].name.clone(),
                        foreign_column: Some(key.to_string()),
                        implied: true,
                    },
                ));
            }
        }
    }
    deadline.disarm();
    for (t, key) in implied {
        tables[t].foreign_keys.push(key);
    }
}

/// The table (its index) and key that `tables[t].column` refers to, by
/// the rule of [`imply_keys`]; `keys` holds each table's key.
fn key_referred_to<'k>(
    probe: &Probe,
    tables: &[Table],
    keys: &'k [(usize, String)],
    t: usize,
    column: &str,
) -> Option<(usize, &'k str)> {
    let table = &tables[t];
    let is_own_key = keys.iter().any(|(k, key)| *k == t && key == column);
    let fits: Vec<(usize, &str, Fit)> = keys
        .iter()
        .filter(|(other, _)| *other != t)
        .filter(|(other, _)| !is_own_key || holds_more_rows(&tables[*other], table))
        .filter_map(|(other, key)| {
            let naming = names_key(column, &tables[*other].name, key)?;
            let fit = probe.values_fit(table, column, &tables[*other], key);
            let allowed = match naming {
                Naming::AsKey => fit != Fit::No,
                Naming::ByTableOnly => fit == Fit::Yes,
            };
            allowed.then_some((*other, key.as_str(), fit))
        })
        .collect();
    let shown: Vec<_> = fits.iter().filter(|(_, _, fit)| *fit == Fit::Yes).collect();
    match (&fits[..], &shown[..]) {
        ([(other, key, _)], _) | (_, [(other, key, _)]) => Some((*other, key)),
        _ => None,
    }
}

/// Whether `table` holds more rows than `other`: a table's own key
/// refers to another table's key of the same name (`hiring.Employee_ID`,
/// one hiring for some employees) only where that table holds more rows.
fn holds_more_rows(table: &Table, other: &Table) -> bool {
    matches!((table.row_count, other.row_count), (Some(a), Some(b)) if a > b)
}

/// The most distinct values per thousand of a column that may be missing
/// from the key it refers to.
const MAX_DANGLING_PER_MILLE: i64 = 50;

/// Rows of a table read to tell whether a column is a key or refers to
/// one: enough to show a pattern, few enough that a table of millions is
/// checked in milliseconds.
const ROWS_READ: usize = 20_000;

/// What a table's rows say of a column referring to a key.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fit {
    /// The column's values are values of the key.
    Yes,
    /// Too many are not.
    No,
    /// The column holds no value, or the check ran out of time.
    Unknown,
}

/// Bounded queries over the database's rows.
struct Probe<'a> {
    conn: &'a Connection,
    deadline: &'a Deadline,
    timeout: Duration,
}

impl Probe<'_> {
    /// The table's key, by the rule of [`imply_keys`].
    fn key_of(&self, table: &Table) -> Option<String> {
        match table.primary_key_columns()[..] {
            [key] => return Some(key.to_string()),
            [] => {}
            _ => return None,
        }
        table
            .columns
            .iter()
            .filter(|c| names_own_key(&c.name, &table.name))
            .find(|c| self.names_each_row_once(&table.name, &c.name))
            .map(|c| c.name.clone())
    }

    /// Whether `table.column` names each of the table's first
    /// [`ROWS_READ`] rows once.
    fn names_each_row_once(&self, table: &str, column: &str) -> bool {
        let sql = format!(
            "SELECT count(*) > 0 AND count(v) = count(*) AND count(DISTINCT v) = count(*) \
             FROM (SELECT {} AS v FROM {} LIMIT {ROWS_READ})",
            quote_identifier(column),
            quote_identifier(table)
        );
        self.ask(&sql, |row| row.get::<_, bool>(0)).unwrap_or(false)
    }

    /// Whether the values of `table.column` in its first [`ROWS_READ`]
    /// rows are values of `other.key`, all but a few of them (stored data
    /// keeps some links to rows since deleted: [`MAX_DANGLING_PER_MILLE`]).
    fn values_fit(&self, table: &Table, column: &str, other: &Table, key: &str) -> Fit {
        let sql = format!(
            "SELECT count(DISTINCT v), count(DISTINCT CASE WHEN v NOT IN \
             (SELECT {key} FROM {other} WHERE {key} IS NOT NULL) THEN v END) \
             FROM (SELECT {column} AS v FROM {table} LIMIT {ROWS_READ})",
            key = quote_identifier(key),
            other = quote_identifier(&other.name),
            column = quote_identifier(column),
            table = quote_identifier(&table.name),
        );
        match self.ask(&sql, |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
        }) {
            Some((0, _)) | None => Fit::Unknown,
            Some((values, dangling)) if dangling * 1000 <= values * MAX_DANGLING_PER_MILLE => {
                Fit::Yes
            }
            Some(_) => Fit::No,
        }
    }

    /// One row of `sql` within the time limit; None when it ran out of
    /// time or failed.
    fn ask<T>(
        &self,
        sql: &str,
        read: impl FnOnce(&rusqlite::Row) -> rusqlite::Result<T>,
    ) -> Option<T> {
        self.deadline.arm(self.timeout);
        self.conn.query_row(sql, [], read).ok()
    }
}

#[cfg(test)]
mod tests {
    use crate::db::{IntrospectOptions, Schema};

    /// The keys of a database made by `ddl`, as `table.column ->
    /// table.key (implied)`.
    fn implied(ddl: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(ddl)
            .unwrap();
        let schema = Schema::load(&path, &IntrospectOptions::default()).unwrap();
        let mut keys: Vec<String> = schema
            .tables
            .iter()
            .flat_map(|t| {
                t.foreign_keys.iter().map(move |k| {
                    let target = k.foreign_column.as_deref().unwrap_or("?");
                    let how = if k.implied { "implied" } else { "declared" };
                    format!(
                        "{}.{} -> {}.{target} ({how})",
                        t.name, k.column, k.foreign_table
                    )
                })
            })
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn columns_that_name_a_key_and_hold_its_values_refer_to_it() {
        let keys = implied(
            "CREATE TABLE stadium (Stadium_ID INTEGER PRIMARY KEY, Name TEXT);
             CREATE TABLE concert (concert_ID INTEGER PRIMARY KEY, Stadium_ID TEXT, Year INT);
             CREATE TABLE RainGauge (Id INTEGER PRIMARY KEY, Status TEXT);
             CREATE TABLE WarningRule (Id INTEGER PRIMARY KEY, GaugeId INTEGER);
             INSERT INTO stadium VALUES (1, 'A'), (2, 'B');
             INSERT INTO concert VALUES (1, '2', 2014), (2, NULL, 2015);
             INSERT INTO RainGauge VALUES (7, 'on');
             INSERT INTO WarningRule VALUES (1, 7);",
        );
        assert_eq!(
            keys,
            [
                "WarningRule.GaugeId -> RainGauge.Id (implied)",
                "concert.Stadium_ID -> stadium.Stadium_ID (implied)"
            ]
        );
    }

    #[test]
    fn tables_without_primary_keys_are_keyed_by_a_column_naming_each_row() {
        // As a program writing data frames leaves them: no keys declared.
        let keys = implied(
            "CREATE TABLE customers (customer_id INT, name TEXT);
             CREATE TABLE orders (order_id INT, customer_id INT, total REAL);
             CREATE TABLE country (Name TEXT, Code TEXT);
             CREATE TABLE city (Name TEXT, CountryCode TEXT);
             CREATE TABLE Student (StuID INT, Name TEXT);
             CREATE TABLE Has_Pet (StuID INT, Pet TEXT);
             INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bo');
             INSERT INTO orders VALUES (10, 1, 5.0), (11, 1, 7.5), (12, 2, 1.0);
             INSERT INTO country VALUES ('Aruba', 'ABW'), ('Chile', 'CHL');
             INSERT INTO city VALUES ('Oranjestad', 'ABW'), ('Arica', 'CHL'), ('Lota', 'CHL');
             INSERT INTO Student VALUES (1, 'Ann'), (2, 'Bo');
             INSERT INTO Has_Pet VALUES (1, 'cat'), (1, 'dog');",
        );
        assert_eq!(
            keys,
            [
                "Has_Pet.StuID -> Student.StuID (implied)",
                "city.CountryCode -> country.Code (implied)",
                "orders.customer_id -> customers.customer_id (implied)",
            ]
        );
    }

    #[test]
    fn a_column_named_by_the_tables_name_refers_to_its_key() {
        let keys = implied(
            "CREATE TABLE ship (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE countries (CountryId INTEGER PRIMARY KEY, Name TEXT);
             CREATE TABLE death (id INTEGER PRIMARY KEY, caused_by_ship_id INT, Country INT);
             CREATE TABLE employee (Employee_ID INTEGER PRIMARY KEY);
             CREATE TABLE hiring (Employee_ID INTEGER PRIMARY KEY, Shop TEXT);
             INSERT INTO ship VALUES (1, 'A'), (2, 'B');
             INSERT INTO countries VALUES (1, 'X'), (2, 'Y');
             INSERT INTO death VALUES (1, 2, 1), (2, 1, 2);
             INSERT INTO employee VALUES (1), (2), (3);
             INSERT INTO hiring VALUES (1, 'S'), (3, 'T');",
        );
        assert_eq!(
            keys,
            [
                "death.Country -> countries.CountryId (implied)",
                "death.caused_by_ship_id -> ship.id (implied)",
                // One hiring for some employees: the smaller table's key
                // refers to the larger's.
                "hiring.Employee_ID -> employee.Employee_ID (implied)",
            ]
        );
    }

    #[test]
    fn a_link_tables_columns_refer_to_the_tables_they_link() {
        // `PetID` names each of `Has_Pet`'s rows, yet it is not that
        // table's key: its name does not name the table.
        let keys = implied(
            "CREATE TABLE Student (StuID INTEGER PRIMARY KEY);
             CREATE TABLE Pets (PetID INTEGER PRIMARY KEY);
             CREATE TABLE Has_Pet (StuID INTEGER, PetID INTEGER);
             INSERT INTO Student VALUES (1001), (1002);
             INSERT INTO Pets VALUES (2001), (2002), (2003);
             INSERT INTO Has_Pet VALUES (1001, 2001), (1002, 2002), (1002, 2003);",
        );
        assert_eq!(
            keys,
            [
                "Has_Pet.PetID -> Pets.PetID (implied)",
                "Has_Pet.StuID -> Student.StuID (implied)"
            ]
        );
    }

    #[test]
    fn a_value_the_key_lacks_or_a_declared_key_means_none_is_implied() {
        let missing = implied(
            "CREATE TABLE stadium (Stadium_ID INTEGER PRIMARY KEY);
             CREATE TABLE concert (Stadium_ID INT);
             INSERT INTO stadium VALUES (1);
             INSERT INTO concert VALUES (1), (3);",
        );
        assert!(missing.is_empty(), "{missing:?}");
        let declared = implied(
            "CREATE TABLE stadium (Stadium_ID INTEGER PRIMARY KEY);
             CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY);
             CREATE TABLE concert (Stadium_ID INT, Singer_ID INT REFERENCES singer);",
        );
        assert_eq!(declared, ["concert.Singer_ID -> singer.? (declared)"]);
    }
}
