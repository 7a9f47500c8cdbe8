//! The check that a query is one read statement, and the rewrites the
//! scorer applies to queries.
#![no_main]

use iesr::db::guard;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|sql: &str| {
    let _ = guard::check_single_read(sql);
    let _ = guard::normalize(sql);
    let _ = guard::has_order_by(sql);
    let _ = guard::strip_distinct(sql);
});
