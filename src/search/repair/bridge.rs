//! Keys joined past the table that links them. Small models often equate
//! the keys of two tables that meet only through a third
//! (`course.Course_ID = teacher.Teacher_ID`, where `course_arrange` refers
//! to both): two id columns share values by accident, so the query runs,
//! finds rows and pairs them at random. Or they equate a key with a key
//! its table reaches two steps away (`appointments.doctor_id =
//! specialties.code`, where the doctor's row names the specialty). When
//! neither column refers to the other and exactly one table refers to
//! both, or is referred to by one and refers to the other, the equality
//! goes through that table; the query is kept when it then finds a value.

use super::join::KeyLink;
use super::{kept_if_it_finds_a_value, SchemaNames};
use crate::db::{quote_identifier, Executor, QueryResult};
use crate::search::sql_text::{
    add_join, equalities, name_in_query, pieces, table_aliases, table_bound_to,
};
use std::sync::Arc;

/// One side of an equality: a table and its column.
type Side<'a> = (&'a str, &'a str);

/// A table that a side of an equality can be joined to by a key.
struct Reach<'s> {
    table: &'s str,
    /// The table's column that meets the side.
    column: &'s str,
    /// Whether that column is the table's key referring to the side (a
    /// table linking both sides), not the key the side refers to (a table
    /// the side's own key leads to).
    by_its_own_key: bool,
}

impl SchemaNames {
    /// `sql` (which ran) with its first equality of two keys that no key
    /// links, where one table links both (`bridge`), routed through it,
    /// and its result; None when there is no such equality or the routed
    /// query finds no value.
    pub fn bridge_keys(
        &self,
        executor: &Executor,
        sql: &str,
    ) -> Option<(String, Arc<QueryResult>)> {
        let pieces = pieces(sql);
        let bound = table_aliases(sql);
        let table_of = |name: &str| table_bound_to(&bound, name);
        for at in equalities(&pieces) {
            let word = |i: usize| pieces[at + i].text();
            let (Some(left), Some(right)) = (table_of(word(0)), table_of(word(4))) else {
                continue;
            };
            let (left_side, right_side) = ((left, word(2)), (right, word(6)));
            let Some((middle, to_left, to_right)) = self.bridge(left_side, right_side) else {
                continue;
            };
            // The query's own name for the table between, when it reads it
            // once; else the table joined under its own name.
            let reads_middle = bound.iter().any(|(_, t)| t.eq_ignore_ascii_case(middle));
            let middle_name = match name_in_query(&bound, middle) {
                Some(name) => name.to_string(),
                None if !reads_middle => quote_identifier(middle),
                None => continue,
            };
            let (to_left, to_right) = (quote_identifier(to_left), quote_identifier(to_right));
            let routed = format!(
                "{}.{} = {middle_name}.{to_left} AND {middle_name}.{to_right} = {}.{}",
                word(0),
                word(2),
                word(4),
                word(6)
            );
            let mut texts: Vec<&str> = pieces.iter().map(|p| p.text()).collect();
            texts.splice(at..at + 7, [routed.as_str()]);
            let mut rewritten = texts.concat();
            if !reads_middle {
                rewritten = add_join(&rewritten, word(0), &format!("JOIN {middle_name}"), false)?;
            }
            return kept_if_it_finds_a_value(executor, rewritten);
        }
        None
    }

    /// The one table that refers to both sides, or that one side refers
    /// to and that refers to the other, with its columns meeting the left
    /// and the right, when the two sides are keys of different tables
    /// (each in some key link) that neither refer to one another nor to the
    /// same column.
    fn bridge<'s>(
        &'s self,
        left: Side<'_>,
        right: Side<'_>,
    ) -> Option<(&'s str, &'s str, &'s str)> {
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        if same(left.0, right.0) || same(left.1, right.1) {
            return None;
        }
        let refers = |k: &KeyLink, (table, column): Side<'_>| {
            same(&k.other, table) && same(&k.other_column, column)
        };
        let owns = |k: &KeyLink, (table, column): Side<'_>| {
            same(&k.table, table) && same(&k.column, column)
        };
        let is_key = |side: Side<'_>| self.keys.iter().any(|k| refers(k, side) || owns(k, side));
        if !is_key(left) || !is_key(right) {
            return None;
        }
        let linked = self
            .keys
            .iter()
            .any(|k| (owns(k, left) && refers(k, right)) || (owns(k, right) && refers(k, left)));
        // Two columns that refer to one same column are comparable.
        let same_target = self.keys.iter().filter(|k| owns(k, left)).any(|k| {
            self.keys
                .iter()
                .any(|u| owns(u, right) && refers(u, (&k.other, &k.other_column)))
        });
        if linked || same_target {
            return None;
        }
        let outside = |table: &str| !same(table, left.0) && !same(table, right.0);
        // The tables that reach a side, each with the column it reaches
        // it by: its own key referring to the side, or its key the side
        // refers to.
        let reaching = |side: Side<'_>| -> Vec<Reach<'s>> {
            let referring = self
                .keys
                .iter()
                .filter(|k| refers(k, side) && outside(&k.table));
            let referred = self
                .keys
                .iter()
                .filter(|k| owns(k, side) && outside(&k.other));
            referring
                .map(|k| Reach {
                    table: &k.table,
                    column: &k.column,
                    by_its_own_key: true,
                })
                .chain(referred.map(|k| Reach {
                    table: &k.other,
                    column: &k.other_column,
                    by_its_own_key: false,
                }))
                .collect()
        };
        let (to_left, to_right) = (reaching(left), reaching(right));
        // Both sides referring to the table between would meet in one of
        // its rows by two different keys: no route a query means.
        let mut middles = to_left
            .iter()
            .flat_map(|l| to_right.iter().map(move |r| (l, r)))
            .filter(|(l, r)| same(l.table, r.table) && (l.by_its_own_key || r.by_its_own_key));
        let (l, r) = middles.next()?;
        // A table reaching a side twice, or two such tables, leave the
        // route open.
        let unique =
            |reaches: &[Reach<'_>]| reaches.iter().filter(|k| same(k.table, l.table)).count() == 1;
        if middles.next().is_some() || !unique(&to_left) || !unique(&to_right) {
            return None;
        }
        Some((l.table, l.column, r.column))
    }
}

#[cfg(test)]
mod tests {
    use crate::db::Executor;
    use crate::search::repair::SchemaNames;

    /// Teachers and courses whose ids overlap, the table that arranges
    /// them, and rooms that no key reaches.
    fn school() -> (tempfile::TempDir, Executor, SchemaNames) {
        crate::search::repair::database_from(
            "CREATE TABLE course (Course_ID INTEGER PRIMARY KEY, Course TEXT);
             CREATE TABLE teacher (Teacher_ID INTEGER PRIMARY KEY, Name TEXT);
             CREATE TABLE course_arrange (Course_ID INTEGER REFERENCES course(Course_ID),
                 Teacher_ID INTEGER REFERENCES teacher, Grade INTEGER);
             INSERT INTO course VALUES (1, 'Math'), (2, 'Art');
             INSERT INTO teacher VALUES (1, 'Joe'), (2, 'Ann');
             INSERT INTO course_arrange VALUES (1, 2, 3), (2, 1, 1);",
        )
    }

    #[test]
    fn ids_of_two_tables_are_joined_through_the_table_that_refers_to_both() {
        let (_dir, executor, names) = school();
        let sql = "SELECT T2.Name, T1.Course FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = T2.Teacher_ID ORDER BY T2.Name";
        let (routed, result) = names.bridge_keys(&executor, sql).unwrap();
        assert_eq!(
            routed,
            "SELECT T2.Name, T1.Course FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = course_arrange.Course_ID AND course_arrange.Teacher_ID = T2.Teacher_ID JOIN course_arrange ORDER BY T2.Name"
        );
        // Joe teaches Art, Ann teaches Math: not the pairs equal ids give.
        assert_eq!(result.rows.len(), 2);
        assert_eq!(result.rows[0][0].to_string(), "Ann");
        assert_eq!(result.rows[0][1].to_string(), "Math");
    }

    #[test]
    fn a_table_between_that_the_query_reads_is_used_under_its_alias() {
        let (_dir, executor, names) = school();
        let sql = "SELECT T2.Name FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = T2.Teacher_ID JOIN course_arrange AS T3 ON T1.Course_ID = T3.Course_ID WHERE T1.Course = 'Math'";
        let (routed, result) = names.bridge_keys(&executor, sql).unwrap();
        assert_eq!(
            routed,
            "SELECT T2.Name FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = T3.Course_ID AND T3.Teacher_ID = T2.Teacher_ID JOIN course_arrange AS T3 ON T1.Course_ID = T3.Course_ID WHERE T1.Course = 'Math'"
        );
        assert_eq!(result.rows[0][0].to_string(), "Ann");
    }

    #[test]
    fn a_query_fixed_until_it_runs_is_then_joined_through_the_table_between() {
        let (_dir, executor, names) = school();
        // Each column under the other table's alias: fixed first, then routed.
        let sql = "SELECT T1.Name, T2.Course FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = T2.Teacher_ID";
        let (mended, result) = names
            .mend(&executor, sql, &executor.query(sql), false, "")
            .unwrap();
        assert_eq!(
            mended,
            "SELECT T2.Name, T1.Course FROM course AS T1 JOIN teacher AS T2 ON T1.Course_ID = course_arrange.Course_ID AND course_arrange.Teacher_ID = T2.Teacher_ID JOIN course_arrange"
        );
        assert_eq!(result.rows.len(), 2);
    }

    /// Appointments that name a doctor, doctors that name a specialty by
    /// its code.
    fn clinic() -> (tempfile::TempDir, Executor, SchemaNames) {
        crate::search::repair::database_from(
            "CREATE TABLE specialty (code TEXT PRIMARY KEY, title TEXT);
             CREATE TABLE doctor (doctor_id INTEGER PRIMARY KEY, name TEXT,
                 specialty TEXT REFERENCES specialty(code));
             CREATE TABLE visit (visit_id INTEGER PRIMARY KEY,
                 doctor_id INTEGER REFERENCES doctor(doctor_id), fee INTEGER);
             INSERT INTO specialty VALUES ('CARD', 'Cardiology'), ('GP', 'General Practice');
             INSERT INTO doctor VALUES (1, 'Grant', 'CARD'), (2, 'Becker', 'GP');
             INSERT INTO visit VALUES (1, 1, 250), (2, 2, 90), (3, 1, 270);",
        )
    }

    #[test]
    fn a_key_equated_with_a_key_two_steps_away_goes_through_the_table_it_refers_to() {
        let (_dir, executor, names) = clinic();
        let sql = "SELECT AVG(T1.fee) FROM visit AS T1 JOIN specialty AS T2 ON T1.doctor_id = T2.code WHERE T2.title = 'Cardiology'";
        assert!(!executor.query(sql).unwrap().digest.has_non_null());
        let (routed, result) = names
            .mend(&executor, sql, &executor.query(sql), false, "")
            .unwrap();
        assert_eq!(
            routed,
            "SELECT AVG(T1.fee) FROM visit AS T1 JOIN specialty AS T2 ON T1.doctor_id = doctor.doctor_id AND doctor.specialty = T2.code JOIN doctor WHERE T2.title = 'Cardiology'"
        );
        assert_eq!(result.rows[0][0].to_string(), "260");
    }

    #[test]
    fn two_keys_referring_to_one_table_by_different_columns_are_not_routed() {
        let (_dir, executor, names) = crate::search::repair::database_from(
            "CREATE TABLE item (shelf INTEGER UNIQUE, slot INTEGER UNIQUE, name TEXT);
             CREATE TABLE a (a_id INTEGER PRIMARY KEY, shelf INTEGER REFERENCES item(shelf));
             CREATE TABLE b (b_id INTEGER PRIMARY KEY, slot INTEGER REFERENCES item(slot));
             INSERT INTO item VALUES (1, 1, 'x');
             INSERT INTO a VALUES (1, 1);
             INSERT INTO b VALUES (1, 1);",
        );
        let sql = "SELECT * FROM a JOIN b ON a.shelf = b.slot";
        assert!(names.bridge_keys(&executor, sql).is_none());
    }

    #[test]
    fn joins_along_keys_and_joins_of_other_columns_are_left_alone() {
        let (_dir, executor, names) = school();
        for sql in [
            "SELECT T2.Name FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID",
            "SELECT T2.Name FROM course AS T1 JOIN teacher AS T2 ON T1.Course = T2.Name",
            "SELECT T1.Course FROM course AS T1 JOIN course AS T2 ON T1.Course_ID = T2.Course_ID",
        ] {
            assert!(names.bridge_keys(&executor, sql).is_none(), "{sql}");
        }
    }
}
