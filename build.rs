//! Records the source revision (`git describe`) the binary is built from,
//! so that benchmark summaries say which code produced them.

use std::process::Command;

fn main() {
    let revision = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=7"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|rev| !rev.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=IESR_REVISION={revision}");
    // A new commit, a staged change or an edited source file changes it.
    for path in [
        ".git/HEAD",
        ".git/index",
        "src",
        "prompts",
        "actions",
        "rules",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
}
