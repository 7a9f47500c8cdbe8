//! Model files: whatever the bytes after the magic, loading fails cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend_from_slice(data);
    std::fs::write(&path, bytes).expect("write");
    assert!(iesr::llm::gguf::load(&path).is_err());
});
