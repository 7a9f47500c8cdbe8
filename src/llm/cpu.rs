//! The SIMD level this binary was compiled for, checked against the CPU it
//! runs on, so an older CPU gets a clear message instead of a crash.

use crate::error::{Error, Result};

/// The x86 features enabled at compile time (see `.cargo/config.toml`).
#[cfg(target_arch = "x86_64")]
fn compiled_features() -> Vec<(&'static str, bool)> {
    vec![
        ("avx", cfg!(target_feature = "avx")),
        ("avx2", cfg!(target_feature = "avx2")),
        ("fma", cfg!(target_feature = "fma")),
        ("f16c", cfg!(target_feature = "f16c")),
        ("avx512f", cfg!(target_feature = "avx512f")),
    ]
}

/// Fails when the binary uses an instruction set extension the CPU lacks.
pub fn check() -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        let present = |name: &str| match name {
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "f16c" => std::arch::is_x86_feature_detected!("f16c"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            _ => true,
        };
        let missing: Vec<&str> = compiled_features()
            .into_iter()
            .filter(|&(name, compiled)| compiled && !present(name))
            .map(|(name, _)| name)
            .collect();
        if !missing.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "this iesr build needs CPU features this machine lacks ({}); rebuild it here with RUSTFLAGS=\"-C target-cpu=native\" cargo build --release",
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

/// The SIMD extensions in use, for reports.
pub fn describe() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let on: Vec<&str> = compiled_features()
            .into_iter()
            .filter(|&(_, compiled)| compiled)
            .map(|(name, _)| name)
            .collect();
        if on.is_empty() {
            "x86-64 baseline".to_string()
        } else {
            on.join("+")
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_test_machine_runs_this_build() {
        super::check().unwrap();
        assert!(!super::describe().is_empty());
    }
}
