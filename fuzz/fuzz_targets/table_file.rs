//! Table files read by extension; the first byte picks the extension.
#![no_main]

use libfuzzer_sys::fuzz_target;

const EXTENSIONS: [&str; 5] = ["csv", "tsv", "json", "jsonl", "txt"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!(
        "t.{}",
        EXTENSIONS[pick as usize % EXTENSIONS.len()]
    ));
    std::fs::write(&path, body).expect("write");
    let _ = iesr::sources::read_table(&path);
});
