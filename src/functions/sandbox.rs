//! An embedded JavaScript interpreter (QuickJS) that runs model-written
//! functions and nothing else: no file, network, module or clock access
//! (the context is built without Date, Promise or Performance, and
//! `Math.random` is removed, so a function's result depends on its
//! arguments alone), with limits on memory, stack depth, loop steps and
//! time per call.

use super::{is_identifier_char, FunctionError};
use crate::db::Value;
use rquickjs::context::intrinsic;
use rquickjs::function::Rest;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one sandbox may use.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Heap of the whole interpreter, the library included.
    pub memory_bytes: usize,
    /// Native stack the interpreter may use (deep recursion fails).
    pub stack_bytes: usize,
    /// Interrupt checks one call may pass (QuickJS checks at every loop
    /// back edge and call, in batches): a budget of work that does not
    /// depend on the machine's speed.
    pub checks_per_call: u64,
    /// Wall time of one call, a backstop behind the work budget.
    pub time_per_call: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 32 << 20,
            stack_bytes: 512 << 10,
            checks_per_call: 2_000,
            time_per_call: Duration::from_secs(1),
        }
    }
}

/// The built-in functions every sandbox starts with.
const LIBRARY: &str = include_str!("library.js");

/// Why the interrupt handler stopped a call.
#[derive(Default)]
struct Watch {
    checks: AtomicU64,
    deadline: Mutex<Option<Instant>>,
    over_budget: AtomicBool,
    over_time: AtomicBool,
}

/// One interpreter holding the library and a program's functions.
pub struct Sandbox {
    // Dropped after the context that lives in it.
    context: Context,
    _runtime: Runtime,
    watch: Arc<Watch>,
    limits: Limits,
}

impl Sandbox {
    /// An interpreter with the library and `program` (JavaScript function
    /// declarations) loaded.
    pub fn new(program: &str, limits: Limits) -> Result<Self, FunctionError> {
        let runtime = Runtime::new().map_err(|e| FunctionError::Start(e.to_string()))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(limits.stack_bytes);
        let watch = Arc::new(Watch::default());
        let handler_watch = Arc::clone(&watch);
        let budget = limits.checks_per_call;
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let checks = handler_watch.checks.fetch_add(1, Ordering::Relaxed) + 1;
            if checks > budget {
                handler_watch.over_budget.store(true, Ordering::Relaxed);
                return true;
            }
            let deadline = *handler_watch.deadline.lock().expect("deadline lock");
            if deadline.is_some_and(|d| Instant::now() > d) {
                handler_watch.over_time.store(true, Ordering::Relaxed);
                return true;
            }
            false
        })));
        // No Date, Promise, Performance (clocks and jobs) and no module
        // loader: what is left computes and cannot reach out.
        let context = Context::custom::<(
            intrinsic::Eval,
            intrinsic::RegExpCompiler,
            intrinsic::RegExp,
            intrinsic::Json,
            intrinsic::MapSet,
        )>(&runtime)
        .map_err(|e| FunctionError::Start(e.to_string()))?;
        let sandbox = Sandbox {
            context,
            _runtime: runtime,
            watch,
            limits,
        };
        if mentions_word(program, "import") {
            return Err(FunctionError::Compile(
                "functions may not import modules".into(),
            ));
        }
        sandbox.load("the built-in library", LIBRARY)?;
        sandbox.load("delete Math.random", "delete Math.random;")?;
        sandbox.load("the functions", program)?;
        Ok(sandbox)
    }

    /// Runs top-level code (declarations) under the call limits.
    fn load(&self, what: &str, source: &str) -> Result<(), FunctionError> {
        self.arm();
        let outcome = self
            .context
            .with(|ctx| ctx.eval::<(), _>(source).catch(&ctx).map_err(Raised::from));
        outcome.map_err(|raised| self.stopped(what, raised, FunctionError::Compile))
    }

    /// Calls the function `name` with SQL values, returning an SQL value.
    pub fn call(&self, name: &str, arguments: &[Value]) -> Result<Value, FunctionError> {
        self.arm();
        let outcome = self.context.with(|ctx| {
            let function: Function = match ctx.globals().get(name) {
                Ok(f) => f,
                Err(_) => return Ok(Err(FunctionError::Missing(name.to_string()))),
            };
            let mut js_arguments = Vec::with_capacity(arguments.len());
            for value in arguments {
                match to_js(&ctx, name, value) {
                    Ok(v) => js_arguments.push(v),
                    Err(e) => return Ok(Err(e)),
                }
            }
            let returned = function
                .call::<_, rquickjs::Value>((Rest(js_arguments),))
                .catch(&ctx);
            match returned {
                Ok(value) => Ok(from_js(name, &value)),
                Err(e) => Err(Raised::from(e)),
            }
        });
        // The runtime is unlocked again here, so its memory can be read.
        outcome.unwrap_or_else(|raised| {
            Err(self.stopped(name, raised, |message| FunctionError::Thrown {
                name: name.to_string(),
                message,
            }))
        })
    }

    fn arm(&self) {
        self.watch.checks.store(0, Ordering::Relaxed);
        self.watch.over_budget.store(false, Ordering::Relaxed);
        self.watch.over_time.store(false, Ordering::Relaxed);
        *self.watch.deadline.lock().expect("deadline lock") =
            Some(Instant::now() + self.limits.time_per_call);
    }

    /// The error for a call or load that raised: a limit when the
    /// interrupt handler or the allocator stopped it, else what it threw.
    /// Called outside the context, whose lock the runtime's shares.
    fn stopped(
        &self,
        name: &str,
        raised: Raised,
        thrown: impl FnOnce(String) -> FunctionError,
    ) -> FunctionError {
        let name = name.to_string();
        if self.watch.over_budget.load(Ordering::Relaxed) {
            return FunctionError::WorkLimit {
                name,
                checks: self.limits.checks_per_call,
            };
        }
        if self.watch.over_time.load(Ordering::Relaxed) {
            return FunctionError::TimeLimit {
                name,
                limit_ms: self.limits.time_per_call.as_millis() as u64,
            };
        }
        // Past its limit the allocator cannot even make the error object,
        // and QuickJS throws null instead (the memory is already freed by
        // then, so a function that throws null itself reads the same).
        if raised.message.contains("out of memory") || raised.null {
            return FunctionError::MemoryLimit {
                name,
                limit_bytes: self.limits.memory_bytes,
            };
        }
        if raised.message.contains("stack overflow") || raised.message.contains("call stack size") {
            return FunctionError::StackLimit { name };
        }
        thrown(first_line(&raised.message))
    }
}

/// What a load or call raised, read while the context was held.
struct Raised {
    message: String,
    /// Whether the thrown value was null.
    null: bool,
}

impl From<CaughtError<'_>> for Raised {
    fn from(error: CaughtError<'_>) -> Self {
        let null = matches!(&error, CaughtError::Value(v) if v.is_null());
        let message = match &error {
            CaughtError::Exception(e) => e.message().unwrap_or_else(|| e.to_string()),
            other => other.to_string(),
        };
        Raised { message, null }
    }
}

impl Drop for Sandbox {
    /// Settles what code left queued (a dynamic import, say) so that
    /// nothing holds on to the runtime when it is freed.
    fn drop(&mut self) {
        self.arm();
        for _ in 0..PENDING_JOBS_SETTLED {
            if !matches!(self._runtime.execute_pending_job(), Ok(true)) {
                break;
            }
        }
    }
}

/// Queued jobs run at most when a sandbox is dropped.
const PENDING_JOBS_SETTLED: usize = 64;

/// Whether `word` stands in `code` as a word of its own.
fn mentions_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(is_identifier_char) && !after.is_some_and(is_identifier_char)
    })
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

fn to_js<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    value: &Value,
) -> Result<rquickjs::Value<'js>, FunctionError> {
    let converted = match value {
        Value::Null => rquickjs::Value::new_null(ctx.clone()),
        Value::Integer(i) => rquickjs::Value::new_number(ctx.clone(), *i as f64),
        Value::Real(f) => rquickjs::Value::new_number(ctx.clone(), *f),
        Value::Text(text) => rquickjs::String::from_str(ctx.clone(), text)
            .map_err(|_| FunctionError::MemoryLimit {
                name: name.to_string(),
                limit_bytes: 0,
            })?
            .into_value(),
        Value::Blob(_) => return Err(FunctionError::BlobArgument(name.to_string())),
    };
    Ok(converted)
}

/// Largest integer a JavaScript number holds exactly (2^53).
const EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

fn from_js(name: &str, value: &rquickjs::Value<'_>) -> Result<Value, FunctionError> {
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(b) = value.as_bool() {
        return Ok(Value::Integer(i64::from(b)));
    }
    if let Some(n) = value.as_number() {
        // A whole number comes back as an INTEGER, as SQLite's own
        // arithmetic on integers would; NaN and infinities as NULL.
        return Ok(if !n.is_finite() {
            Value::Null
        } else if n.fract() == 0.0 && n.abs() < EXACT_INTEGER {
            Value::Integer(n as i64)
        } else {
            Value::Real(n)
        });
    }
    if let Some(s) = value.as_string() {
        return s
            .to_string()
            .map(Value::Text)
            .map_err(|e| FunctionError::Thrown {
                name: name.to_string(),
                message: e.to_string(),
            });
    }
    Err(FunctionError::BadReturn {
        name: name.to_string(),
        kind: value.type_name().to_string(),
    })
}
