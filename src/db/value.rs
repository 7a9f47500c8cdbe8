//! SQLite values as the engine sees them, and the canonical hashing that
//! result comparison is built on.

use rusqlite::types::ValueRef;
use serde::{Serialize, Serializer};
use std::fmt;
use xxhash_rust::xxh3::Xxh3;

/// One SQLite value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    /// Copies a value out of a row. Text that is not valid UTF-8 (some public
    /// databases hold such bytes) is decoded lossily instead of failing.
    pub fn from_ref(value: ValueRef<'_>) -> Self {
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
            ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A 64-bit hash under which two values collide exactly when Python would
    /// call them equal: an INTEGER equals a REAL of the same mathematical value
    /// (1 == 1.0, and 0.0 == -0.0), text never equals a blob, NULL equals NULL.
    pub fn canonical_hash(value: ValueRef<'_>) -> u64 {
        let mut hasher = Xxh3::new();
        match value {
            ValueRef::Null => hasher.update(&[0]),
            ValueRef::Integer(i) => hash_integer(&mut hasher, i),
            ValueRef::Real(f) => match exact_integer(f) {
                Some(i) => hash_integer(&mut hasher, i),
                None => {
                    hasher.update(&[2]);
                    hasher.update(&f.to_bits().to_le_bytes());
                }
            },
            ValueRef::Text(bytes) => {
                hasher.update(&[3]);
                hasher.update(bytes);
            }
            ValueRef::Blob(bytes) => {
                hasher.update(&[4]);
                hasher.update(bytes);
            }
        }
        hasher.digest()
    }

    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }
    }
}

fn hash_integer(hasher: &mut Xxh3, i: i64) {
    hasher.update(&[1]);
    hasher.update(&i.to_le_bytes());
}

/// The integer a float is exactly equal to, if any (within i64's range).
fn exact_integer(f: f64) -> Option<i64> {
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_finite() && f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f) {
        Some(f as i64)
    } else {
        None
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Integer(i) => write!(f, "{i}"),
            Value::Real(x) => write!(f, "{x}"),
            Value::Text(s) => f.write_str(s),
            Value::Blob(b) => write!(f, "<blob {} bytes>", b.len()),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_none(),
            Value::Integer(i) => serializer.serialize_i64(*i),
            Value::Real(x) => serializer.serialize_f64(*x),
            Value::Text(s) => serializer.serialize_str(s),
            Value::Blob(b) => serializer.serialize_str(&format!("<blob {} bytes>", b.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: Value) -> u64 {
        Value::canonical_hash(v.as_value_ref())
    }

    #[test]
    fn integer_and_equal_real_hash_alike() {
        assert_eq!(h(Value::Integer(1)), h(Value::Real(1.0)));
        assert_eq!(h(Value::Integer(0)), h(Value::Real(-0.0)));
        assert_ne!(h(Value::Integer(1)), h(Value::Real(1.5)));
    }

    #[test]
    fn large_integers_compare_exactly_like_python() {
        // Python: 2**53 + 1 != float(2**53)
        let big = 1i64 << 53;
        assert_eq!(h(Value::Integer(big)), h(Value::Real(big as f64)));
        assert_ne!(h(Value::Integer(big + 1)), h(Value::Real(big as f64)));
    }

    #[test]
    fn types_do_not_collide() {
        assert_ne!(h(Value::Text("1".into())), h(Value::Integer(1)));
        assert_ne!(h(Value::Text("ab".into())), h(Value::Blob(b"ab".to_vec())));
        assert_ne!(h(Value::Null), h(Value::Text(String::new())));
        assert_eq!(h(Value::Null), h(Value::Null));
    }
}
