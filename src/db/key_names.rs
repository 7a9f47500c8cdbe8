//! How column names name keys, read as words: `caused_by_ship_id` is
//! `caused by ship id`, `RainGauge` is `rain gauge`, `StuID` is `stu id`.
//! Words keep `thermodynamics_id` from naming `dynamics_id`, which the
//! letters alone would.

/// Words that end a key's name; alone, one names no table.
const KEY_WORDS: [&str; 4] = ["id", "code", "key", "number"];

/// Fewest letters of a table's name a column may spell for it when it
/// spells only its last words (`gauge` for `RainGauge`).
const MIN_PARTIAL_LETTERS: usize = 4;

/// Fewest letters of the start of a table's name that may stand for it in
/// its own key's name (`Stu` in `StuID` for `Student`).
const MIN_KEY_PREFIX: usize = 3;

/// How a column names another table's key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Naming {
    /// With the key's name or a key word (`Stadium_ID`, `GaugeId`,
    /// `permanent_address_id`).
    AsKey,
    /// By the table's name alone (`Country` for `countries.CountryId`):
    /// a measure may be named so too (`discount` beside a `Discounts`
    /// table), so only its values can tell.
    ByTableOnly,
}

/// Whether and how `column` names the key `key` of `table`: by the key's
/// own name (`Stadium_ID` in both; a key word alone names nothing), by a
/// key of two words or more after words of its own
/// (`permanent_address_id` for `address_id`), or by the table's name,
/// singular or plural, or its last words, with the key's name or a key
/// word after it or not (`GaugeId` for `RainGauge.Id`, `caused_by_ship_id`
/// for `ship.id`, `Country` for `countries.CountryId`).
pub(super) fn names_key(column: &str, table: &str, key: &str) -> Option<Naming> {
    let (column, key) = (words(column), words(key));
    if column == key {
        return (!is_key_word(&key)).then_some(Naming::AsKey);
    }
    if key.len() >= 2 && column.ends_with(&key) {
        return Some(Naming::AsKey);
    }
    let table = words(table);
    if let Some(stem) = column.strip_suffix(key.as_slice()) {
        if names_table(stem, &table) {
            return Some(Naming::AsKey);
        }
    }
    match column.split_last() {
        Some((last, stem)) if KEY_WORDS.contains(&last.as_str()) => {
            names_table(stem, &table).then_some(Naming::AsKey)
        }
        _ => names_table(&column, &table).then_some(Naming::ByTableOnly),
    }
}

/// Whether a column of a table that declares no key may be its key by its
/// name: a key word alone (`id`, `Code`) or after the table's name
/// (`customer_id` in `customers`) or the start of it (`StuID` in
/// `Student`).
pub(super) fn names_own_key(column: &str, table: &str) -> bool {
    let column = words(column);
    let Some((last, stem)) = column.split_last() else {
        return false;
    };
    let start = stem.concat();
    KEY_WORDS.contains(&last.as_str())
        && (stem.is_empty()
            || names_table(stem, &words(table))
            || (start.len() >= MIN_KEY_PREFIX && words(table).concat().starts_with(&start)))
}

fn is_key_word(words: &[String]) -> bool {
    matches!(words, [word] if KEY_WORDS.contains(&word.as_str()))
}

/// Whether the words `stem` name the table of words `table`, singular or
/// plural: all of them, or its last words (at least
/// [`MIN_PARTIAL_LETTERS`] letters), or `stem` ends with them
/// (`caused by ship` for `ship`).
fn names_table(stem: &[String], table: &[String]) -> bool {
    if stem.is_empty() {
        return false;
    }
    let letters = |words: &[String]| words.iter().map(String::len).sum::<usize>();
    forms(table).iter().any(|name| {
        stem == name.as_slice()
            || (name.ends_with(stem) && letters(stem) >= MIN_PARTIAL_LETTERS)
            || (stem.ends_with(name) && letters(name) >= MIN_PARTIAL_LETTERS)
    })
}

/// A table's name as written and with its last word made singular
/// (`countries` -> `country`, `addresses` -> `address`, `makers` ->
/// `maker`).
fn forms(table: &[String]) -> Vec<Vec<String>> {
    let mut forms = vec![table.to_vec()];
    if let Some((last, start)) = table.split_last() {
        let singular = [
            last.strip_suffix("ies").map(|s| format!("{s}y")),
            last.strip_suffix("es").map(str::to_string),
            last.strip_suffix('s').map(str::to_string),
        ];
        for word in singular.into_iter().flatten().filter(|w| !w.is_empty()) {
            forms.push(start.iter().cloned().chain([word]).collect());
        }
    }
    forms
}

/// The lowercased words of a name: split at anything not a letter or
/// digit and where a lowercase letter meets an uppercase one; a key word
/// written onto the end of the last word is split off (`stuid` -> `stu`,
/// `id`).
fn words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            words.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    words.extend((!current.is_empty()).then_some(current));
    if let Some(last) = words.pop() {
        let glued = KEY_WORDS
            .iter()
            .find_map(|word| Some((last.strip_suffix(word)?, *word)))
            .filter(|(start, _)| !start.is_empty());
        match glued {
            Some((start, word)) => words.extend([start.to_string(), word.to_string()]),
            None => words.push(last),
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_words() {
        assert_eq!(words("caused_by_ship_id"), ["caused", "by", "ship", "id"]);
        assert_eq!(words("RainGauge"), ["rain", "gauge"]);
        assert_eq!(words("StuID"), ["stu", "id"]);
        assert_eq!(words("customerid"), ["customer", "id"]);
        assert_eq!(words("Id"), ["id"]);
    }

    #[test]
    fn a_column_names_a_key_by_its_name_or_its_tables() {
        let as_key = Some(Naming::AsKey);
        assert_eq!(names_key("Stadium_ID", "stadium", "Stadium_ID"), as_key);
        assert_eq!(names_key("GaugeId", "RainGauge", "Id"), as_key);
        assert_eq!(names_key("caused_by_ship_id", "ship", "id"), as_key);
        assert_eq!(
            names_key("permanent_address_id", "Addresses", "address_id"),
            as_key
        );
        assert_eq!(
            names_key(
                "template_type_code",
                "Ref_Template_Types",
                "template_type_code"
            ),
            as_key
        );
        assert_eq!(names_key("CountryCode", "country", "Code"), as_key);
        let by_table = Some(Naming::ByTableOnly);
        assert_eq!(names_key("Country", "countries", "CountryId"), by_table);
        assert_eq!(names_key("Maker", "car_makers", "Id"), by_table);
        // Not at a word's edge, or a key word alone.
        assert_eq!(
            names_key("Thermodynamics_ID", "enginedynamics", "Dynamics_ID"),
            None
        );
        assert_eq!(
            names_key("DynamicsID", "BicycleThermodynamics", "ThermodynamicsID"),
            None
        );
        assert_eq!(names_key("id", "stadium", "id"), None);
        assert_eq!(names_key("city_code", "country", "code"), None);
    }

    #[test]
    fn a_tables_own_key_is_named_by_a_key_word_and_the_tables_name() {
        assert!(names_own_key("customer_id", "customers"));
        assert!(names_own_key("StuID", "Student"));
        assert!(names_own_key("Code", "country"));
        assert!(!names_own_key("PetID", "Has_Pet"));
        assert!(!names_own_key("name", "customers"));
    }
}
