//! JavaScript functions as SQLite scalar functions: the library's on every
//! connection, a query's own for that query only.

use super::sandbox::{Limits, Sandbox};
use super::{declared_names, FunctionError};
use crate::db::Value;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use std::sync::{Arc, Mutex};

/// The library's functions that SQL can call, with their argument counts.
pub const LIBRARY_FUNCTIONS: &[(&str, i32)] = &[("convert_unit", 3)];

/// A sandbox made on the first call, so that a query that never reaches
/// its functions (or a connection that never converts a unit) pays
/// nothing.
struct LazySandbox {
    program: String,
    limits: Limits,
    made: Mutex<Option<Result<Sandbox, FunctionError>>>,
}

impl LazySandbox {
    fn new(program: &str, limits: &Limits) -> Arc<Self> {
        Arc::new(LazySandbox {
            program: program.to_string(),
            limits: limits.clone(),
            made: Mutex::new(None),
        })
    }

    fn call(&self, name: &str, arguments: &[Value]) -> Result<Value, FunctionError> {
        let mut made = self.made.lock().expect("sandbox lock");
        let sandbox = made.get_or_insert_with(|| Sandbox::new(&self.program, self.limits.clone()));
        match sandbox {
            Ok(sandbox) => sandbox.call(name, arguments),
            Err(e) => Err(e.clone()),
        }
    }
}

/// Registers the library's functions and the statistics aggregates on
/// `conn`.
pub fn register_library(conn: &Connection, limits: &Limits) -> rusqlite::Result<()> {
    super::aggregates::register_aggregates(conn)?;
    let sandbox = LazySandbox::new("", limits);
    for &(name, arguments) in LIBRARY_FUNCTIONS {
        register(conn, name, arguments, Arc::clone(&sandbox))?;
    }
    Ok(())
}

/// A query's functions registered on a connection; dropping it removes
/// them, so they never outlive the query.
pub struct Registered<'c> {
    conn: &'c Connection,
    names: Vec<String>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            // Removal only fails on a name SQLite never had.
            let _ = self.conn.remove_function(name.as_str(), -1);
        }
    }
}

/// Registers every function `program` declares on `conn`, taking any
/// number of arguments, until the returned guard is dropped.
pub fn register_program<'c>(
    conn: &'c Connection,
    program: &str,
    limits: &Limits,
) -> rusqlite::Result<Registered<'c>> {
    let sandbox = LazySandbox::new(program, limits);
    let mut registered = Registered {
        conn,
        names: Vec::new(),
    };
    for name in declared_names(program) {
        register(conn, &name, -1, Arc::clone(&sandbox))?;
        registered.names.push(name);
    }
    Ok(registered)
}

fn register(
    conn: &Connection,
    name: &str,
    arguments: i32,
    sandbox: Arc<LazySandbox>,
) -> rusqlite::Result<()> {
    let owned = name.to_string();
    conn.create_scalar_function(
        name,
        arguments,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |context: &Context<'_>| {
            let values: Vec<Value> = (0..context.len())
                .map(|i| Value::from_ref(context.get_raw(i)))
                .collect();
            match sandbox.call(&owned, &values) {
                Ok(value) => Ok(to_sql(value)),
                Err(e) => Err(rusqlite::Error::UserFunctionError(Box::new(e))),
            }
        },
    )
}

fn to_sql(value: Value) -> SqlValue {
    match value {
        Value::Null => SqlValue::Null,
        Value::Integer(i) => SqlValue::Integer(i),
        Value::Real(f) => SqlValue::Real(f),
        Value::Text(s) => SqlValue::Text(s),
        Value::Blob(b) => SqlValue::Blob(b),
    }
}
