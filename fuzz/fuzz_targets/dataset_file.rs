//! Benchmark dataset files: the first byte picks the dataset, the rest is
//! its question file.
#![no_main]

use iesr::eval::dataset::{self, DatasetKind, Filters};
use libfuzzer_sys::fuzz_target;

const FILES: [(DatasetKind, &str); 5] = [
    (DatasetKind::Spider, "dev.json"),
    (DatasetKind::Logiccat, "dev.json"),
    (
        DatasetKind::Wikitablequestions,
        "data/random-split-1-dev.tsv",
    ),
    (DatasetKind::Tablebench, "TableBench.jsonl"),
    (DatasetKind::Metaqa, "qa_dev_1hop.txt"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (kind, file) = FILES[pick as usize % FILES.len()];
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(file);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&path, body).expect("write");
    let _ = dataset::load(kind, dir.path(), &Filters::default());
});
