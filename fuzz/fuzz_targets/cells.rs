//! Cell values of table files: numbers with separators, units and
//! currency, and dates.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|cell: &str| {
    let _ = iesr::sources::cells::parse_number(cell);
    let _ = iesr::sources::cells::parse_date(cell);
});
