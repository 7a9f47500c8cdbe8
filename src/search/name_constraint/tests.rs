use super::*;
use crate::error::Result;
use crate::llm::scripted::ScriptedModel;
use crate::llm::{Generation, Prompt, Sampling};
use crate::understand::demo;

fn checker() -> Box<dyn TextChecker> {
    let no_tokenizer = ScriptedModel::new(Vec::<String>::new());
    NameConstraint::for_schema(&demo::schema(), &no_tokenizer, false)
        .0
        .checker()
}

/// Whether each piece in turn is allowed after the ones before.
fn verdicts(pieces: &[&str]) -> Vec<bool> {
    verdicts_of(checker(), pieces)
}

fn verdicts_of(mut c: Box<dyn TextChecker>, pieces: &[&str]) -> Vec<bool> {
    pieces
        .iter()
        .map(|p| {
            let ok = c.allows(p);
            c.push(p);
            ok
        })
        .collect()
}

#[test]
fn outside_a_query_span_anything_goes() {
    assert_eq!(
        verdicts(&["The lift", " column", " is", " nosuch"]),
        [true; 4]
    );
    // A closed span is over.
    assert_eq!(
        verdicts(&["```sql\nSELECT 1\n```", "\nnosuch here"]),
        [true, true]
    );
    // A closing tag written a token at a time closes the span.
    assert_eq!(
        verdicts(&["<sql>\nSELECT Age FROM singer\n", "</", "sq", "l>"]),
        [true; 4]
    );
}

#[test]
fn a_table_after_from_or_join_is_checked_letter_by_letter() {
    assert_eq!(
        verdicts(&[
            "```sql\nSELECT * FROM sing",
            "er",
            " AS T1 JOIN conc",
            "ert"
        ]),
        [true, true, true, true]
    );
    assert_eq!(verdicts(&["<sql>SELECT * FROM", " singers"]), [true, false]);
    assert_eq!(verdicts(&["<sql>SELECT * FROM", " plan"]), [true, false]);
    // A comma in a FROM clause names another table.
    assert_eq!(
        verdicts(&["<sql>SELECT * FROM singer,", " stad"]),
        [true, true]
    );
    assert_eq!(
        verdicts(&["<sql>SELECT * FROM singer,", " pla"]),
        [true, false]
    );
}

#[test]
fn the_first_table_holds_a_column_named_bare_before_it() {
    // Age is singer's alone; Name is singer's and stadium's.
    let age = "<sql>SELECT avg(Age) FROM ";
    assert_eq!(verdicts(&[age, "sing", "er"]), [true, true, true]);
    assert_eq!(verdicts(&[age, "stad"]), [true, false]);
    assert_eq!(
        verdicts(&["<sql>SELECT Name FROM ", "stadium "]),
        [true, true]
    );
    // A later table, qualified or aliased names, and a subquery's
    // own FROM are not bound by it.
    assert_eq!(
        verdicts(&[age, "singer JOIN ", "stadium "]),
        [true, true, true]
    );
    assert_eq!(
        verdicts(&["<sql>SELECT T2.Age FROM ", "stadium "]),
        [true, true]
    );
    assert_eq!(
        verdicts(&["<sql>SELECT count(*) AS Age FROM ", "stadium "]),
        [true, true]
    );
    assert_eq!(
        verdicts(&["<sql>SELECT Age, (SELECT max(Capacity) FROM ", "stadium)"]),
        [true, true]
    );
}

/// A tokenizer that writes a word's first four letters (after its
/// leading space) as its first token.
struct FourLetterStarts;

impl LanguageModel for FourLetterStarts {
    fn name(&self) -> &str {
        "four-letter-starts"
    }

    fn generate(&self, _: &Prompt, _: &Sampling) -> Result<Generation> {
        Err(crate::error::Error::Inference("a tokenizer only".into()))
    }

    fn first_token_text(&self, text: &str) -> Option<String> {
        let space = usize::from(text.starts_with(' '));
        Some(text.chars().take(space + 4).collect())
    }
}

#[test]
fn the_first_table_begins_as_the_tokenizer_begins_it() {
    let schema = demo::schema();
    let checker = || {
        NameConstraint::for_schema(&schema, &FourLetterStarts, false)
            .0
            .checker()
    };
    // Age is singer's alone: its name begins ` sing`, not ` sin`.
    let age = "<sql>SELECT avg(Age) FROM";
    assert_eq!(verdicts_of(checker(), &[age, " sing", "er"]), [true; 3]);
    assert_eq!(verdicts_of(checker(), &[age, " singer"]), [true, true]);
    assert_eq!(verdicts_of(checker(), &[age, " sin"]), [true, false]);
    assert_eq!(verdicts_of(checker(), &[age, "\nSING"]), [true, true]);
    // Without a column named before it, any start of any table.
    let all = "<sql>SELECT * FROM";
    assert_eq!(verdicts_of(checker(), &[all, " sin", "ger"]), [true; 3]);
}

#[test]
fn a_qualified_column_must_belong_to_its_table_once_known() {
    // T1 is bound to singer: only singer's columns.
    let bound = "<sql>SELECT count(*) FROM singer AS T1 WHERE T1.";
    assert_eq!(verdicts(&[bound, "Age"]), [true, true]);
    assert_eq!(verdicts(&[bound, "Capacity"]), [true, false]);
    // With stadium joined as T2, T1 may name stadium's columns too: the
    // repair moves them to T2.
    let joined = "<sql>SELECT count(*) FROM singer AS T1 JOIN stadium AS T2 WHERE T1.";
    assert_eq!(verdicts(&[joined, "Capacity"]), [true, true]);
    assert_eq!(verdicts(&[joined, "Theme"]), [true, false]);
    // A join condition's keys belong to the tables that name them.
    let on = "<sql>SELECT count(*) FROM singer AS T1 JOIN stadium AS T2 ON T1.";
    assert_eq!(verdicts(&[on, "Capacity"]), [true, false]);
    assert_eq!(verdicts(&[on, "Singer_ID"]), [true, true]);
    let after_on = "<sql>SELECT count(*) FROM singer AS T1 JOIN stadium AS T2 ON T1.Age = T2.Capacity WHERE T1.";
    assert_eq!(verdicts(&[after_on, "Capacity"]), [true, true]);
    // An alias bound again by the outer query after a subquery bound
    // it: the outer binding holds in the outer join condition.
    let rebound = "<sql>SELECT (SELECT max(T1.Capacity) FROM stadium AS T1) FROM singer AS T1 JOIN concert AS T2 ON T1.";
    assert_eq!(verdicts(&[rebound, "Capacity"]), [true, false]);
    assert_eq!(verdicts(&[rebound, "Singer_ID"]), [true, true]);
    // An alias of a common table: its columns are not the schema's.
    let common = "<sql>WITH top AS (SELECT Age AS oldest FROM singer) SELECT t.";
    assert_eq!(
        verdicts(&[&format!("{common}oldest FROM top AS t WHERE t."), "oldest"]),
        [true, true]
    );
    // Not yet bound (SELECT before FROM): any column of the schema.
    assert_eq!(verdicts(&["<sql>SELECT T1.", "Capacity"]), [true, true]);
    assert_eq!(verdicts(&["<sql>SELECT T1.", "lift"]), [true, false]);
    // A table's own name qualifies its columns.
    assert_eq!(verdicts(&["<sql>SELECT singer.", "Name"]), [true, true]);
}

#[test]
fn a_bare_word_is_judged_when_it_ends() {
    let select = "```sql\nSELECT ";
    // Still growing: could become anything.
    assert_eq!(verdicts(&[select, "lif"]), [true, true]);
    // Ended by a comma: an invented column is refused...
    assert_eq!(verdicts(&[select, "lift,"]), [true, false]);
    // ...also when the piece that ends it only adds its terminator...
    assert_eq!(verdicts(&[select, "lif", ","]), [true, true, false]);
    assert_eq!(verdicts(&[select, "Age", ","]), [true, true, true]);
    // ...a real column, a keyword, a function or a qualifier is not.
    assert_eq!(verdicts(&[select, "Age,"]), [true, true]);
    assert_eq!(verdicts(&[select, "DISTINCT "]), [true, true]);
    assert_eq!(verdicts(&[select, "strftime("]), [true, true]);
    assert_eq!(verdicts(&[select, "liftoff("]), [true, false]);
    assert_eq!(verdicts(&[select, "X.", "Age "]), [true, true, true]);
    // A function's or a type's name is not a value on its own.
    assert_eq!(
        verdicts(&[select, "Name FROM singer ORDER BY", " date "]),
        [true, true, false]
    );
    assert_eq!(
        verdicts(&[
            select,
            "CAST(Age AS REAL), count(*), date('now') FROM singer "
        ]),
        [true, true]
    );
    // Aliases bound with AS, literals, numbers and quoted names are free.
    assert_eq!(
        verdicts(&[select, "count(*) AS n FROM singer ORDER BY n "]),
        [true, true]
    );
    assert_eq!(
        verdicts(&[
            select,
            "Name FROM singer WHERE Country = 'Lift off' AND Age > 30 "
        ]),
        [true, true]
    );
    assert_eq!(
        verdicts(&[select, "\"Song Name\" FROM singer "]),
        [true, true]
    );
    // A table's name is a qualifier, never a value on its own.
    let from = "```sql\nSELECT Name FROM singer WHERE ";
    // Keywords no read query holds begin no word (`materialized`).
    assert_eq!(verdicts(&[from, "Material"]), [true, false]);
    assert_eq!(verdicts(&[from, "Exclude"]), [true, false]);
    assert_eq!(verdicts(&[from, "stadium", " >"]), [true, true, false]);
    assert_eq!(verdicts(&[from, "stadium", "."]), [true, true, true]);
    // After a qualifier's dot a column stands, never a number; after
    // a number's, its fraction.
    assert_eq!(verdicts(&[from, "stadium.", "0"]), [true, true, false]);
    assert_eq!(verdicts(&[from, "Age * 0.", "6"]), [true, true, true]);
    assert_eq!(verdicts(&[from, "Age * 0.", "6 >"]), [true, true, true]);
    assert_eq!(verdicts(&[select, "singer", ".*"]), [true, true, true]);
}

#[test]
fn a_declared_function_may_be_called_only_when_functions_are_on() {
    let no_tokenizer = ScriptedModel::new(Vec::<String>::new());
    let with_functions = || {
        NameConstraint::for_schema(&demo::schema(), &no_tokenizer, true)
            .0
            .checker()
    };
    let select = "```sql\nSELECT ";
    let call = [select, "fn", "_age_in_months", "(Age) FROM singer "];
    assert_eq!(verdicts_of(with_functions(), &call), [true; 4]);
    assert_eq!(verdicts(&call), [true, true, false, false]);
    // The library's function is known either way; a name outside the
    // prefix stays invented, and a declared name is no column.
    let library = [select, "convert_unit(Age, 's', 'h') FROM singer "];
    assert_eq!(verdicts(&library), [true, true]);
    let statistic = [select, "stddev_samp(Age) FROM singer "];
    assert_eq!(verdicts(&statistic), [true, true]);
    assert_eq!(
        verdicts_of(with_functions(), &[select, "liftoff("]),
        [true, false]
    );
    assert_eq!(
        verdicts_of(with_functions(), &[select, "fn_age,"]),
        [true, false]
    );
}

#[test]
fn the_functions_block_a_query_opens_with_is_free_and_the_query_after_it_is_checked() {
    let block = [
        "```sql\n/*",
        "js\nfunction fn_speed(distance, hours) {\n  const v = distance / hours;",
        "\n  return v;\n}\n*/\nSELECT fn_speed(Age, 2) FROM singer",
    ];
    let no_tokenizer = ScriptedModel::new(Vec::<String>::new());
    let with_functions = NameConstraint::for_schema(&demo::schema(), &no_tokenizer, true)
        .0
        .checker();
    assert_eq!(verdicts_of(with_functions, &block), [true; 3]);
    // Past the block, names are checked again (the `;` inside the
    // function did not close the query).
    let after_block = "```sql\n/*js\nfunction f(x) { return x; }\n*/\nSELECT ";
    assert_eq!(verdicts(&[after_block, "Age FROM singer"]), [true, true]);
    assert_eq!(
        verdicts(&[after_block, "Liftoff FROM singer"]),
        [true, false]
    );
}

#[test]
fn before_from_a_long_word_must_start_a_name() {
    let select = "```sql\nSELECT ";
    // A word that starts no name is cut off before it can run on.
    assert_eq!(verdicts(&[select, "Lift"]), [true, false]);
    assert_eq!(verdicts(&[select, "AVG(", "Liftoff"]), [true, true, false]);
    // A start of a column, table, keyword or function may grow.
    assert_eq!(verdicts(&[select, "Capac"]), [true, true]);
    assert_eq!(verdicts(&[select, "singer_in"]), [true, true]);
    assert_eq!(verdicts(&[select, "DISTIN"]), [true, true]);
    assert_eq!(verdicts(&[select, "julian"]), [true, true]);
    // A short word may be a qualifier bound later.
    assert_eq!(
        verdicts(&[select, "T1", ".Name FROM singer AS T1"]),
        [true, true, true]
    );
    // A WITH query names its common tables, and their columns are
    // not the schema's.
    assert_eq!(
        verdicts(&[
            "```sql\nWITH ",
            "ranked AS (SELECT Age AS years FROM singer)"
        ]),
        [true, true]
    );
    assert_eq!(
        verdicts(&[
            "```sql\nWITH r AS (SELECT Age FROM singer), ",
            "older AS (SELECT Age FROM r) SELECT ",
            "years"
        ]),
        [true, true, true]
    );
}

#[test]
fn a_from_ends_only_once_it_binds_the_names_written_before_it() {
    // Theme is concert's: singer alone cannot end the FROM.
    let select = "```sql\nSELECT Name, Theme FROM singer";
    assert_eq!(verdicts(&[select, " WHERE"]), [true, false]);
    assert_eq!(verdicts(&[select, " ORDER"]), [true, false]);
    assert_eq!(verdicts(&[select, "\n```"]), [true, false]);
    assert_eq!(
        verdicts(&[select, " JOIN concert ON 1 = 1", " WHERE"]),
        [true, true, true]
    );
    // The table joined to bind Theme is one that has it.
    assert_eq!(verdicts(&[select, " JOIN stadium"]), [true, false]);
    assert_eq!(verdicts(&[select, " JOIN concert"]), [true, true]);
    assert_eq!(
        verdicts(&[select, " JOIN concert ON 1 = 1 JOIN ", "stadium"]),
        [true, true, true]
    );
    // A qualifier left unbound is the repairs' to mend.
    assert_eq!(
        verdicts(&["```sql\nSELECT T2.Theme FROM singer AS T1", " WHERE"]),
        [true, true]
    );
    // One bound to a table that lacks its column is held like a bare
    // column: the table that has it is joined, the repairs requalify.
    // (The alias is bound after the word it qualifies has ended.)
    let misqualified = ["```sql\nSELECT T1.Theme", " FROM", " singer AS T1"];
    let after = |more: &[&str]| verdicts(&[&misqualified[..], more].concat());
    assert_eq!(after(&[" WHERE"]), [true, true, true, false]);
    assert_eq!(after(&[" JOIN stadium"]), [true, true, true, false]);
    assert_eq!(
        after(&[" JOIN concert AS T2 ON 1 = 1", " WHERE"]),
        [true; 5]
    );
    assert_eq!(
        verdicts(&["```sql\nSELECT T1.Age", " FROM", " singer AS T1", " WHERE"]),
        [true; 4]
    );
    // Four tables joined (written where the rule stood aside), the
    // FROM may end whatever it lacks.
    let mut joined = checker();
    joined.push(select);
    joined.push(" JOIN singer ON 1 = 1 JOIN singer ON 1 = 1");
    assert!(!joined.allows(" WHERE"));
    joined.push(" JOIN singer ON 1 = 1");
    assert!(joined.allows(" WHERE"));
    // A subquery ends with the same test; an outer table counts.
    let outer = "```sql\nSELECT Name FROM singer WHERE Age IN (SELECT Theme, Capacity FROM concert";
    assert_eq!(verdicts(&[outer, ")"]), [true, false]);
    assert_eq!(
        verdicts(&[
            "```sql\nSELECT Name FROM singer WHERE Age IN (SELECT Theme, Age FROM concert",
            ")"
        ]),
        [true, true]
    );
    // Names bound inside a call count for the level that holds it.
    assert_eq!(
        verdicts(&["```sql\nSELECT Name, COUNT(Theme) FROM singer", " GROUP"]),
        [true, false]
    );
}

#[test]
fn after_a_table_alias_the_from_continues_or_ends() {
    // Theme is concert's: the FROM may not end at singer, and an alias
    // is no way out of it.
    let select = "```sql\nSELECT Name, Theme FROM singer";
    assert_eq!(verdicts(&[select, " T1", " BY"]), [true, true, false]);
    assert_eq!(verdicts(&[select, " T1", " HAVIN"]), [true, true, false]);
    assert_eq!(verdicts(&[select, " T1", " NOT"]), [true, true, false]);
    assert_eq!(verdicts(&[select, " T1", " `x"]), [true, true, false]);
    assert_eq!(verdicts(&[select, " T1", " 'x'"]), [true, true, false]);
    assert_eq!(
        verdicts(&[select, " AS T1", " J", "OIN concert"]),
        [true, true, true, true]
    );
    assert_eq!(verdicts(&[select, " T1,", " concert"]), [true, true, true]);
    // Nor is a clause spelt as an alias, nor a word on the next line.
    for alias in [
        " HAVINGS",
        " UNORDERED",
        " Hav",
        " AS WHE",
        "\nUN",
        "\n  T1",
    ] {
        assert_eq!(verdicts(&[select, alias]), [true, false], "{alias}");
    }
    assert_eq!(verdicts(&[select, "\n", "UNPIVOT"]), [true, true, false]);
    assert_eq!(verdicts(&[select, "\nJOIN concert"]), [true, true]);
    assert_eq!(verdicts(&[select, "\n", "J", "OIN concert"]), [true; 4]);
    assert_eq!(verdicts(&[select, "\nIN", "NER JOIN concert"]), [true; 3]);
    assert_eq!(verdicts(&[select, " T1\n", "JOIN concert"]), [true; 3]);
    for escape in [
        " ``",
        " `T1`",
        " \"T1\"",
        "\n``Database",
        " -- the rest",
        "\n/*",
    ] {
        assert_eq!(verdicts(&[select, escape]), [true, false], "{escape}");
    }
    assert_eq!(
        verdicts(&[select, " JOIN `concert`", " ON 1 = 1"]),
        [true; 3]
    );
    // A join's keywords come in order.
    assert_eq!(verdicts(&[select, " T1 LEFt", " 13"]), [true, true, false]);
    assert_eq!(verdicts(&[select, " LEFT", " Age"]), [true, true, false]);
    assert_eq!(
        verdicts(&[select, " T1 LEFT", " OUTER", " JOIN concert"]),
        [true; 4]
    );
    assert_eq!(verdicts(&[select, " NATURAL", " JOIN concert"]), [true; 3]);
    // Where the FROM may end, a clause follows the alias, which may be
    // any word; join syntax may stand where an alias could.
    let from = "```sql\nSELECT Name FROM singer";
    assert_eq!(verdicts(&[from, " T1 ", "ORDER BY Age"]), [true; 3]);
    assert_eq!(verdicts(&[from, " ord", " WHERE Age > 1"]), [true; 3]);
    assert_eq!(verdicts(&[from, "\nT1", " WHERE Age > 1"]), [true; 3]);
    assert_eq!(
        verdicts(&[from, " LEFT", " JOIN concert", " USING", " (Name)"]),
        [true; 5]
    );
    assert_eq!(
        verdicts(&[from, " \"the singers\"", " WHERE Age > 1"]),
        [true; 3]
    );
    // A column alias is not a table's.
    assert_eq!(
        verdicts(&["```sql\nSELECT Name AS n", " FROM singer"]),
        [true, true]
    );
    // A keyword is no table's alias, even where the FROM may end.
    for alias in ["\nEXPLAIN", " AS explain", " in", " Pragma"] {
        assert_eq!(
            verdicts(&[from, alias, " LEFT JOIN concert"]),
            [true, true, false],
            "{alias}"
        );
    }
    assert_eq!(verdicts(&[from, " ex", " WHERE Age > 1"]), [true; 3]);
    assert_eq!(
        verdicts(&[from, " in", "ner JOIN concert ON 1 = 1"]),
        [true; 3]
    );
}

#[test]
fn a_query_that_names_columns_ends_only_after_a_from() {
    let select = "```sql\nSELECT SUM(T1.Age) * 100";
    assert_eq!(verdicts(&[select, "\n```"]), [true, false]);
    assert_eq!(verdicts(&[select, ";"]), [true, false]);
    assert_eq!(verdicts(&["```sql\nSELECT Name", " WHERE"]), [true, false]);
    // A clause's word may grow into a column before the FROM.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.sqlite");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE orders (id INTEGER, order_date TEXT);")
        .unwrap();
    let schema = crate::db::Schema::load(&path, &Default::default()).unwrap();
    let no_tokenizer = ScriptedModel::new(Vec::<String>::new());
    let mut order = NameConstraint::for_schema(&schema, &no_tokenizer, false)
        .0
        .checker();
    order.push("```sql\nSELECT id,");
    assert!(order.allows(" order"));
    assert!(!order.allows(" order BY"));
    assert_eq!(
        verdicts(&[select, " FROM singer AS T1", ";\n```"]),
        [true; 3]
    );
    // A query of values alone needs no FROM; nor does a call's or a
    // window's inner level.
    assert_eq!(verdicts(&["```sql\nSELECT 1 + 2 AS n", ";"]), [true; 2]);
    assert_eq!(
        verdicts(&[
            "```sql\nSELECT Name, RANK() OVER (ORDER BY Age",
            ") FROM singer;"
        ]),
        [true; 2]
    );
    // A bare query ended by the model is held the same way.
    let mut bare = checker();
    bare.push("SELECT Name");
    assert!(!bare.allows_end());
    bare.push(" FROM singer");
    assert!(bare.allows_end());
}

#[test]
fn a_level_that_repeats_the_two_around_it_is_refused() {
    let looping =
        "```sql\nSELECT Name FROM singer WHERE Age IN (SELECT Age FROM singer WHERE Age IN (SELECT Age FROM singer WHERE Age IN (";
    assert_eq!(verdicts(&[looping, "SELECT"]), [true, false]);
    assert_eq!(verdicts(&[looping, "30, 40)"]), [true, true]);
    let twice =
        "```sql\nSELECT Name FROM singer WHERE Age IN (SELECT Age FROM singer WHERE Age IN (";
    assert_eq!(verdicts(&[twice, "SELECT"]), [true, true]);
    let cast = "```sql\nSELECT SUM(Cast(Cast(";
    assert_eq!(verdicts(&[cast, "Cast"]), [true, false]);
    assert_eq!(verdicts(&[cast, "Age AS INT) AS REAL)"]), [true, true]);
    assert_eq!(verdicts(&["```sql\nSELECT Pi (Pi (", "Pi"]), [true, true]);
    assert_eq!(
        verdicts(&["```sql\nSELECT Pi (Pi (Pi (", "Pi"]),
        [true, false]
    );
}

#[test]
fn a_parenthesis_that_closes_none_and_signs_sql_lacks_are_refused() {
    assert_eq!(
        verdicts(&["```sql\nSELECT CAST(CAST(Age AS REAL)", " AS REAL)", ")"]),
        [true, true, false]
    );
    assert_eq!(
        verdicts(&["```sql\nSELECT Age", "^", "2", " FROM singer"]),
        [true, false, true, true]
    );
    // Inside a literal or a quoted name they are text.
    assert_eq!(
        verdicts(&["```sql\nSELECT Age FROM singer WHERE Name = 'a)^'", ")"]),
        [true, false]
    );
    assert_eq!(verdicts(&["The answer (2^3))"]), [true]);
}

#[test]
fn a_query_may_end_only_where_its_last_word_is_whole() {
    let ended = |text: &str| {
        let mut c = checker();
        c.push(text);
        c.allows_end()
    };
    assert!(ended("```sql\nSELECT Age FROM singer WHERE Age"));
    assert!(!ended("```sql\nSELECT Age FROM singer WHERE Ag"));
    assert!(!ended("SELECT Age FROM singer WHERE Ag"));
    assert!(ended("The answer is Ag"));
}

#[test]
fn an_answer_that_is_a_query_is_checked_until_it_ends() {
    assert_eq!(verdicts(&["SELECT", " lift,"]), [true, false]);
    assert_eq!(verdicts(&["SEL", "ECT * FROM plan"]), [true, false]);
    assert_eq!(
        verdicts(&["SELECT Age FROM singer;", " The lift"]),
        [true, true]
    );
    assert_eq!(
        verdicts(&["SELECT Age FROM singer\n\n", "The lift"]),
        [true, true]
    );
    // Once T1 is bound to singer, T1 has no concert_ID (T2 has).
    assert_eq!(
        verdicts(&[
            "SELECT T1.Name FROM singer AS T1 JOIN concert AS T2 ON T1.",
            "concert_ID"
        ]),
        [true, false]
    );
}

#[test]
fn after_from_a_bare_column_is_in_scope_or_as_a_last_resort_two_keys_away() {
    // Age is singer's; Capacity is stadium's, three keys from singer
    // (singer_in_concert, concert, stadium).
    let outer = "SELECT Name FROM singer WHERE ";
    assert_eq!(verdicts(&[outer, "Age >"]), [true, true]);
    assert_eq!(verdicts(&[outer, "Capacity >"]), [true, false]);
    // Checked letter by letter there: no column within reach starts "Capa".
    assert_eq!(verdicts(&[outer, "Ag"]), [true, true]);
    assert_eq!(verdicts(&[outer, "Capa"]), [true, false]);
    // A column of a table the query forgot to join, two keys away
    // (concert, through singer_in_concert), is refused while anything
    // likely is allowed, and allowed as a last resort: the join repair
    // joins its table.
    let mut c = checker();
    c.push(outer);
    for piece in ["concert_Na", "concert_Name ="] {
        assert!(
            !c.allows(piece) && c.allows_as_last_resort(piece),
            "{piece}"
        );
    }
    assert!(!c.allows_as_last_resort("Capacity ="));
    // Gluing a refused name to a call does not get it through.
    assert_eq!(
        verdicts(&["SELECT Name FROM singer ORDER BY Age", "LIMIT("]),
        [true, false]
    );
    // Before FROM, any column; a subquery sees its own and outer tables,
    // and as a last resort those two keys from them (stadium is two from
    // singer_in_concert, three from singer).
    assert_eq!(verdicts(&["SELECT Capacity,"]), [true]);
    let sub = "SELECT Name FROM singer WHERE Singer_ID IN (SELECT Singer_ID FROM singer_in_concert WHERE ";
    assert_eq!(verdicts(&[sub, "concert_ID ="]), [true, true]);
    assert_eq!(verdicts(&[sub, "Age ="]), [true, true]);
    assert_eq!(verdicts(&[sub, "Capacity ="]), [true, false]);
    let mut c = checker();
    c.push(sub);
    assert!(c.allows_as_last_resort("Capacity ="));
    // Back outside the subquery, its tables are out of scope.
    assert_eq!(
        verdicts(&[sub, "concert_ID = 1) AND concert_ID ="]),
        [true, false]
    );
    assert!(!c.allows_as_last_resort("Capacity = 1) AND Capacity ="));
    // A subquery as a source: nothing can be ruled out.
    assert_eq!(
        verdicts(&[
            "SELECT x FROM (SELECT Age AS x FROM singer) WHERE ",
            "Capacity ="
        ]),
        [true, true]
    );
}

#[test]
fn only_the_new_words_are_judged() {
    // An earlier refused word that was written anyway does not block
    // the rest of the query.
    let mut c = checker();
    c.push("<sql>SELECT lift, ");
    assert!(c.allows("Age "));
    assert!(!c.allows("drag "));
}

#[test]
fn parts_of_names_are_worth_trying_when_nothing_likely_is_allowed() {
    let c = checker();
    for piece in ["er", " Sing", "ncert_", "_ID", "E"] {
        assert!(c.worth_trying(piece), "{piece}");
    }
    for piece in [" ", "xyz", " SELECT", "singers_and_more"] {
        assert!(!c.worth_trying(piece), "{piece}");
    }
}
