//! A column the query's tables lack, held by a table one foreign key away
//! (or two, through a table the query does not read): small models often
//! write a column of the table they meant to join without writing the
//! join, or with an alias they never bind. The join is added along those
//! keys.

use super::super::sql_text::{add_join, name_in_query, qualify_bare, replace_qualified};
use super::{SchemaNames, Scope};
use crate::db::quote_identifier;
use crate::db::schema::{Schema, Table};

/// One foreign key: `table.column` refers to `other.other_column`.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::search) struct KeyLink {
    pub table: String,
    pub column: String,
    pub other: String,
    pub other_column: String,
}

/// The keys of `schema` whose target column is known: those it declares,
/// or, for a database that declares none, those its names and values imply
/// (filled in when it was loaded).
pub(in crate::search) fn key_links(schema: &Schema) -> Vec<KeyLink> {
    schema
        .tables
        .iter()
        .flat_map(|t| t.foreign_keys.iter().map(move |fk| (t, fk)))
        .filter_map(|(t, fk)| {
            let other = schema.table(&fk.foreign_table)?;
            let other_column = match &fk.foreign_column {
                Some(c) => c.clone(),
                None => primary_key(other)?.to_string(),
            };
            Some(KeyLink {
                table: t.name.clone(),
                column: fk.column.clone(),
                other: other.name.clone(),
                other_column,
            })
        })
        .collect()
}

/// The table's primary key when it is one column.
fn primary_key(table: &Table) -> Option<&str> {
    match table.primary_key_columns()[..] {
        [pk] => Some(pk),
        _ => None,
    }
}

/// How a table the query lacks is reached from one it binds: along one
/// key, or two through a table the query does not bind either.
#[derive(Debug, Clone, Copy)]
struct Route<'a> {
    holder: &'a str,
    /// The key from a bound table (`near`) to the next table on the way.
    first: &'a KeyLink,
    /// The key from the table between to the holder, on a two-key route.
    second: Option<(&'a str, &'a KeyLink)>,
}

impl Route<'_> {
    /// The bound table the route starts from.
    fn near(&self) -> &str {
        let next = self.second.map_or(self.holder, |(middle, _)| middle);
        far_end(self.first, next)
    }
}

/// `JOIN binding ON left.column = right.column`, the columns quoted.
fn join_clause(binding: &str, left: (&str, &str), right: (&str, &str)) -> String {
    format!(
        "JOIN {binding} ON {}.{} = {}.{}",
        left.0,
        quote_identifier(left.1),
        right.0,
        quote_identifier(right.1)
    )
}

/// The table at the other end of `key` from `table`.
fn far_end<'k>(key: &'k KeyLink, table: &str) -> &'k str {
    if key.table.eq_ignore_ascii_case(table) {
        &key.other
    } else {
        &key.table
    }
}

/// `key`'s column on `table`'s side, and on the other side.
fn key_columns<'k>(key: &'k KeyLink, table: &str) -> (&'k str, &'k str) {
    if key.table.eq_ignore_ascii_case(table) {
        (&key.column, &key.other_column)
    } else {
        (&key.other_column, &key.column)
    }
}

impl SchemaNames {
    /// `sql` with the table that holds the missing `qualifier.column` (or
    /// bare `column`) joined to one of the tables `scope` binds along a
    /// route of keys (one key, else two through a table the query does not
    /// read; from the first bound table that has one), and the reference
    /// pointed at it. A qualifier that is neither bound nor a table's name
    /// (`T4.x` in a query binding T1 to T3) becomes the joined table's
    /// alias. None unless exactly one table that holds the column is
    /// reached.
    pub(super) fn join_missing(
        &self,
        sql: &str,
        scope: &Scope,
        qualifier: Option<&str>,
        column: &str,
    ) -> Option<String> {
        let bound = &scope.bound;
        let is_bound = |table: &str| bound.iter().any(|(_, t)| t.eq_ignore_ascii_case(table));
        let is_table = |name: &str| {
            self.tables
                .iter()
                .any(|(t, _)| t.eq_ignore_ascii_case(name))
        };
        let unbound_qualifier =
            qualifier.filter(|q| !bound.iter().any(|(n, _)| n.eq_ignore_ascii_case(q)));
        // A qualifier that names an unjoined table says which table is meant.
        let names_table = unbound_qualifier.filter(|q| is_table(q));
        let new_alias = unbound_qualifier.filter(|q| !is_table(q));
        let holders: Vec<&str> = self
            .tables
            .iter()
            .map(|(t, _)| t.as_str())
            .filter(|t| !is_bound(t) && self.has_column(t, column))
            .filter(|t| names_table.is_none_or(|q| q.eq_ignore_ascii_case(t)))
            .collect();
        let mut routes = self.routes(&holders, &is_bound);
        // A qualifier bound to one of the query's tables (`T1.x` for T1's
        // table) says which side the column was meant to come from.
        let qualified_table = qualifier
            .and_then(|q| bound.iter().find(|(n, _)| n.eq_ignore_ascii_case(q)))
            .map(|(_, t)| t.as_str());
        if let Some(table) = qualified_table {
            let starts_there = |r: &Route<'_>| r.near().eq_ignore_ascii_case(table);
            if routes.iter().any(starts_there) {
                routes.retain(starts_there);
            }
        }
        // One table holds the column but several of the query's tables reach
        // it: any of them gives a query that runs; the first bound, usually
        // the one the FROM clause opens with, is taken. Two holders leave
        // the meaning open.
        let holder = routes.first()?.holder;
        if routes.iter().any(|r| r.holder != holder) {
            return None;
        }
        let position = |r: &Route<'_>| {
            bound
                .iter()
                .position(|(_, t)| t.eq_ignore_ascii_case(r.near()))
        };
        let route = routes.iter().min_by_key(|r| position(r))?;
        // The query's name for the table joined to: the qualifier written,
        // when it is that table's; else the table's one alias or own name.
        let near = match qualified_table {
            Some(table) if table.eq_ignore_ascii_case(route.near()) => qualifier?,
            _ => name_in_query(bound, route.near())?,
        };
        let holder_q = quote_identifier(route.holder);
        let holder_name = new_alias.map_or(holder_q.clone(), str::to_string);
        let holder_binding = match new_alias {
            Some(alias) => format!("{holder_q} AS {alias}"),
            None => holder_q.clone(),
        };
        let join = match route.second {
            None => {
                let (near_column, holder_column) = key_columns(route.first, route.near());
                join_clause(
                    &holder_binding,
                    (near, near_column),
                    (&holder_name, holder_column),
                )
            }
            Some((middle, second)) => {
                let middle_q = quote_identifier(middle);
                let (near_column, middle_in) = key_columns(route.first, route.near());
                let (middle_out, holder_column) = key_columns(second, middle);
                let to_middle = join_clause(&middle_q, (near, near_column), (&middle_q, middle_in));
                let to_holder = join_clause(
                    &holder_binding,
                    (&middle_q, middle_out),
                    (&holder_name, holder_column),
                );
                format!("{to_middle} {to_holder}")
            }
        };
        let joined = add_join(sql, near, &join, scope.outer_only)?;
        match (qualifier, unbound_qualifier) {
            // Already written `holder.column` or `alias.column`: the join
            // makes it valid.
            (Some(_), Some(_)) => Some(joined),
            (Some(q), None) => replace_qualified(&joined, (q, column), (&holder_q, column)),
            (None, _) => qualify_bare(&joined, column, &holder_q, scope.outer_only),
        }
    }

    /// Whether some route of at most two keys leads from `holder` to `table`.
    pub(super) fn within_two_keys(&self, table: &str, holder: &str) -> bool {
        !self
            .routes(&[holder], &|t: &str| t.eq_ignore_ascii_case(table))
            .is_empty()
    }

    /// The key column of `table`, and the keys of the `holder` rows that
    /// `condition` picks, read along the one route of keys from `holder` to
    /// `table` (one key, else two): for tracks and artists, `album_id` and
    /// `(SELECT album_id FROM albums WHERE artist_id IN (SELECT artist_id
    /// FROM artists WHERE name = 'Queen'))`. None when no route, or more
    /// than one, leads there.
    pub(super) fn keys_along_route(
        &self,
        table: &str,
        holder: &str,
        condition: &str,
    ) -> Option<(String, String)> {
        let routes = self.routes(&[holder], &|t: &str| t.eq_ignore_ascii_case(table));
        let [route] = routes.as_slice() else {
            return None;
        };
        let holder_q = quote_identifier(holder);
        let (near_column, keys) = match route.second {
            None => {
                let (near_column, holder_column) = key_columns(route.first, table);
                let keys = format!(
                    "(SELECT {} FROM {holder_q} WHERE {condition})",
                    quote_identifier(holder_column)
                );
                (near_column, keys)
            }
            Some((middle, second)) => {
                let (near_column, middle_in) = key_columns(route.first, table);
                let (middle_out, holder_column) = key_columns(second, middle);
                let keys = format!(
                    "(SELECT {} FROM {} WHERE {} IN (SELECT {} FROM {holder_q} WHERE {condition}))",
                    quote_identifier(middle_in),
                    quote_identifier(middle),
                    quote_identifier(middle_out),
                    quote_identifier(holder_column)
                );
                (near_column, keys)
            }
        };
        Some((quote_identifier(near_column), keys))
    }

    /// The routes from each holder to a table `is_bound` accepts: the
    /// one-key routes, or when there are none, the two-key routes through
    /// a table it does not accept.
    fn routes<'a>(
        &'a self,
        holders: &[&'a str],
        is_bound: &impl Fn(&str) -> bool,
    ) -> Vec<Route<'a>> {
        let touching = |table: &'a str| {
            self.keys.iter().filter(move |k| {
                k.table.eq_ignore_ascii_case(table) || k.other.eq_ignore_ascii_case(table)
            })
        };
        let direct: Vec<Route<'a>> = holders
            .iter()
            .flat_map(|&holder| touching(holder).map(move |k| (holder, k)))
            .filter(|(holder, k)| is_bound(far_end(k, holder)))
            .map(|(holder, first)| Route {
                holder,
                first,
                second: None,
            })
            .collect();
        if !direct.is_empty() {
            return direct;
        }
        let mut two = Vec::new();
        for &holder in holders {
            for second in touching(holder) {
                let middle = far_end(second, holder);
                if is_bound(middle) || middle.eq_ignore_ascii_case(holder) {
                    continue;
                }
                for first in touching(middle) {
                    let near = far_end(first, middle);
                    if is_bound(near) && !std::ptr::eq(first, second) {
                        two.push(Route {
                            holder,
                            first,
                            second: Some((middle, second)),
                        });
                    }
                }
            }
        }
        two
    }
}

#[cfg(test)]
mod tests {
    use super::key_links;
    use crate::db::{ExecConfig, Executor, Schema};
    use crate::search::repair::SchemaNames;

    /// Teachers, courses and the table that arranges them, with keys.
    fn school() -> (tempfile::TempDir, Executor, SchemaNames) {
        crate::search::repair::database_from(
            "CREATE TABLE course (Course_ID INTEGER PRIMARY KEY, Course TEXT, Room TEXT);
             CREATE TABLE teacher (Teacher_ID INTEGER PRIMARY KEY, Name TEXT, Room TEXT);
             CREATE TABLE course_arrange (Course_ID INTEGER REFERENCES course(Course_ID),
                 Teacher_ID INTEGER REFERENCES teacher, Grade INTEGER);
             INSERT INTO course VALUES (1, 'Math', 'A'), (2, 'Art', 'B');
             INSERT INTO teacher VALUES (10, 'Joe', 'C'), (11, 'Ann', 'D');
             INSERT INTO course_arrange VALUES (1, 10, 3), (2, 11, 1);",
        )
    }

    /// `sql` repaired on `school()` until it runs, starting from the error
    /// SQLite gives it: the repaired text and how many rows it returns.
    fn repaired_on_school(sql: &str) -> (String, usize) {
        let (_dir, executor, names) = school();
        let error = executor.query(sql).unwrap_err().to_string();
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, &error, false)
            .unwrap();
        (fixed, result.rows.len())
    }

    #[test]
    fn a_column_of_an_unjoined_table_is_reached_along_its_key() {
        let (fixed, rows) = repaired_on_school("SELECT T1.Name, T2.Course FROM course_arrange AS T1 JOIN course AS T2 ON T1.Course_ID = T2.Course_ID ORDER BY T2.Course");
        assert_eq!(
            fixed,
            "SELECT teacher.Name, T2.Course FROM course_arrange AS T1 JOIN course AS T2 ON T1.Course_ID = T2.Course_ID JOIN teacher ON T1.Teacher_ID = teacher.Teacher_ID ORDER BY T2.Course"
        );
        assert_eq!(rows, 2);
    }

    #[test]
    fn a_query_with_each_column_under_the_wrong_name_is_fixed_one_by_one() {
        // Four fixes: two columns moved across the join, one reached by
        // joining its table, one misspelt.
        let (fixed, rows) = repaired_on_school("SELECT T1.Course, T2.Grade, T1.Name FROM course_arrange AS T1 JOIN course AS T2 ON T1.Course_ID = T2.Course_ID WHERE T2.Cours <> 'Art'");
        assert_eq!(
            fixed,
            "SELECT T2.Course, T1.Grade, teacher.Name FROM course_arrange AS T1 JOIN course AS T2 ON T1.Course_ID = T2.Course_ID JOIN teacher ON T1.Teacher_ID = teacher.Teacher_ID WHERE T2.Course <> 'Art'"
        );
        assert_eq!(rows, 1);
    }

    #[test]
    fn a_join_reaches_a_table_bound_under_a_quoted_name() {
        let (fixed, rows) = repaired_on_school("SELECT T2.Name FROM course AS T1 JOIN `course_arrange` AS T2 ON T1.Course_ID = T2.Course_ID");
        assert_eq!(
            fixed,
            "SELECT teacher.Name FROM course AS T1 JOIN `course_arrange` AS T2 ON T1.Course_ID = T2.Course_ID JOIN teacher ON T2.Teacher_ID = teacher.Teacher_ID"
        );
        assert_eq!(rows, 2);
    }

    #[test]
    fn the_qualifier_written_says_where_the_join_goes() {
        // course_arrange is also read in the subquery; T2 names the outer one.
        let (fixed, rows) = repaired_on_school("SELECT T2.Name FROM course AS T1 JOIN course_arrange AS T2 ON T1.Course_ID = T2.Course_ID WHERE T2.Grade NOT IN (SELECT Grade FROM course_arrange WHERE Grade < 2)");
        assert_eq!(
            fixed,
            "SELECT teacher.Name FROM course AS T1 JOIN course_arrange AS T2 ON T1.Course_ID = T2.Course_ID JOIN teacher ON T2.Teacher_ID = teacher.Teacher_ID WHERE T2.Grade NOT IN (SELECT Grade FROM course_arrange WHERE Grade < 2)"
        );
        assert_eq!(rows, 1);
        // A column whose name is also a table's name is still missing from
        // the query's own tables.
        let (fixed, _) = repaired_on_school("SELECT T1.Course FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID");
        assert!(
            fixed.ends_with("JOIN course ON T1.Course_ID = course.Course_ID"),
            "{fixed}"
        );
    }

    #[test]
    fn a_qualifier_picks_the_key_when_the_holder_reaches_two_tables() {
        let (_dir, _executor, names) = school();
        // course_arrange holds `Grade` and has keys to both tables; T1 says
        // the column was meant to come from course's side.
        let sql = "SELECT T1.Grade FROM course AS T1 JOIN teacher AS T2 ON T1.Room = T2.Room";
        assert_eq!(
            names.fixes("no such column: T1.Grade", sql),
            vec!["SELECT course_arrange.Grade FROM course AS T1 JOIN teacher AS T2 ON T1.Room = T2.Room JOIN course_arrange ON T1.Course_ID = course_arrange.Course_ID"]
        );
        // Bare, it is joined to the first of the query's tables.
        let bare = "SELECT Grade FROM course AS T1 JOIN teacher AS T2 ON T1.Room = T2.Room";
        assert_eq!(
            names.fixes("no such column: Grade", bare),
            vec!["SELECT course_arrange.Grade FROM course AS T1 JOIN teacher AS T2 ON T1.Room = T2.Room JOIN course_arrange ON T1.Course_ID = course_arrange.Course_ID"]
        );
    }

    #[test]
    fn a_database_without_declared_keys_is_joined_by_the_keys_it_implies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rain.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE RainGauge (Id INTEGER PRIMARY KEY, Status TEXT);
             CREATE TABLE WarningRule (Id INTEGER PRIMARY KEY, GaugeId INTEGER, RuleName TEXT);
             CREATE TABLE Station (Station_ID INTEGER PRIMARY KEY, Region TEXT);
             CREATE TABLE Reading (Id INTEGER PRIMARY KEY, station_id INTEGER, Notes TEXT);
             INSERT INTO RainGauge VALUES (1, 'active');
             INSERT INTO WarningRule VALUES (1, 1, 'Heavy');",
        )
        .unwrap();
        drop(conn);
        let schema = Schema::load(&path, &Default::default()).unwrap();
        let mut keys: Vec<String> = key_links(&schema)
            .iter()
            .map(|k| format!("{}.{} -> {}.{}", k.table, k.column, k.other, k.other_column))
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "Reading.station_id -> Station.Station_ID",
                "WarningRule.GaugeId -> RainGauge.Id"
            ]
        );
        let executor = Executor::open(&path, ExecConfig::default()).unwrap();
        let names = SchemaNames::of(&schema);
        let sql = "SELECT Status FROM WarningRule WHERE RuleName = 'Heavy'";
        let (fixed, result) = names
            .fix_until_it_runs(&executor, sql, "no such column: Status", false)
            .unwrap();
        assert_eq!(
            fixed,
            "SELECT RainGauge.Status FROM WarningRule JOIN RainGauge ON WarningRule.GaugeId = RainGauge.Id WHERE RuleName = 'Heavy'"
        );
        assert_eq!(result.rows.len(), 1);
    }

    #[test]
    fn a_bare_column_in_a_subquery_joins_at_the_subquerys_level() {
        let (fixed, rows) = repaired_on_school("SELECT Course FROM course WHERE Course_ID IN (SELECT Course_ID FROM course_arrange WHERE Name = 'Joe')");
        assert_eq!(
            fixed,
            "SELECT Course FROM course WHERE Course_ID IN (SELECT Course_ID FROM course_arrange JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE teacher.Name = 'Joe')"
        );
        assert_eq!(rows, 1);
    }

    #[test]
    fn a_table_read_only_in_a_subquery_is_joined_for_the_outer_query() {
        // teacher is read in the subquery, out of the outer query's sight;
        // the join makes `Teacher_ID` ambiguous in the outer query only.
        let (fixed, rows) = repaired_on_school("SELECT Name FROM course_arrange WHERE Grade > 1 AND Teacher_ID IN (SELECT Teacher_ID FROM teacher WHERE Room = 'C')");
        assert_eq!(
            fixed,
            "SELECT teacher.Name FROM course_arrange JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE Grade > 1 AND course_arrange.Teacher_ID IN (SELECT Teacher_ID FROM teacher WHERE Room = 'C')"
        );
        assert_eq!(rows, 1);
    }

    #[test]
    fn a_dot_dropped_between_alias_and_column_is_put_back() {
        let (fixed, _) = repaired_on_school("SELECT T1.Grade FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID WHERE T2 Name = 'Joe'");
        assert_eq!(
            fixed,
            "SELECT T1.Grade FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID WHERE T2.Name = 'Joe'"
        );
        // `Title` is no column: the words stay apart.
        let (_dir, _executor, names) = school();
        assert!(names
            .fixes(
                "near \"Title\": syntax error",
                "SELECT T2 Title FROM teacher AS T2"
            )
            .is_empty());
    }

    #[test]
    fn a_table_two_keys_away_is_joined_through_the_table_between() {
        // course reaches teacher only through course_arrange.
        let (fixed, rows) = repaired_on_school("SELECT Name FROM course WHERE Course = 'Math'");
        assert_eq!(
            fixed,
            "SELECT teacher.Name FROM course JOIN course_arrange ON course.Course_ID = course_arrange.Course_ID JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE Course = 'Math'"
        );
        assert_eq!(rows, 1);
    }

    #[test]
    fn an_alias_used_but_never_bound_names_the_joined_table() {
        let (fixed, rows) = repaired_on_school("SELECT T2.Name, C.Course FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID");
        assert_eq!(
            fixed,
            "SELECT T2.Name, C.Course FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID JOIN course AS C ON T1.Course_ID = C.Course_ID"
        );
        assert_eq!(rows, 2);
    }

    #[test]
    fn a_column_qualified_by_an_unjoined_table_gets_that_table_joined() {
        let (_dir, _executor, names) = school();
        let sql = "SELECT Grade FROM course_arrange WHERE teacher.Name = 'Ann'";
        assert_eq!(
            names.fixes("no such column: teacher.Name", sql),
            vec!["SELECT Grade FROM course_arrange JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE teacher.Name = 'Ann'"]
        );
    }

    #[test]
    fn a_one_table_query_moves_only_to_a_table_with_every_column_it_reads() {
        let (_dir, _executor, names) = school();
        let sql = "SELECT Name FROM course_arrange WHERE Teacher_ID > 10";
        assert_eq!(
            names.fixes("no such column: Name", sql),
            vec![
                "SELECT Name FROM teacher WHERE Teacher_ID > 10",
                "SELECT teacher.Name FROM course_arrange JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE Teacher_ID > 10",
            ]
        );
        // teacher has no Grade: only the join keeps it.
        let sql = "SELECT Name FROM course_arrange WHERE Grade > 1";
        assert_eq!(
            names.fixes("no such column: Name", sql),
            vec!["SELECT teacher.Name FROM course_arrange JOIN teacher ON course_arrange.Teacher_ID = teacher.Teacher_ID WHERE Grade > 1"]
        );
    }

    #[test]
    fn an_ambiguous_column_takes_the_first_table_that_has_it() {
        let (fixed, _) = repaired_on_school("SELECT Teacher_ID FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID");
        assert_eq!(
            fixed,
            "SELECT T1.Teacher_ID FROM course_arrange AS T1 JOIN teacher AS T2 ON T1.Teacher_ID = T2.Teacher_ID"
        );
    }

    #[test]
    fn no_join_is_guessed_when_two_tables_could_hold_the_column() {
        let (_dir, _executor, names) = school();
        // Course and teacher both have a `Room` and are both one key from
        // course_arrange: the choice is left open.
        let sql = "SELECT Room FROM course_arrange WHERE Grade > 1";
        assert!(names.fixes("no such column: Room", sql).is_empty());
        // No table has `Title`.
        let sql = "SELECT Title FROM course_arrange";
        assert!(names.fixes("no such column: Title", sql).is_empty());
    }
}
