//! `iesr mcp`: the [`Service`] as a Model Context Protocol server over
//! stdin and stdout, for AI assistants. Four tools: `list_databases`,
//! `describe_schema`, `run_sql` and `ask`. A tool's failure (an unknown
//! database, a refused query) is a tool result marked as an error, with one
//! line saying what to do, so the assistant can read it and try again.

use crate::service::{AnswerRequest, MethodName, Service};
use crate::Error;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Rows a `run_sql` result returns when the call does not say.
const DEFAULT_ROWS: usize = 100;
/// Rows a `run_sql` result returns at most.
const MAX_ROWS: usize = 1_000;

/// Serves until the client closes stdin.
pub fn run(service: Service) -> crate::Result<()> {
    let runtime = crate::service::server_runtime()?;
    let server = Server {
        service: Arc::new(service),
    };
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Server(format!("the MCP client did not connect: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::Server(format!("the MCP server stopped: {e}")))?;
        Ok(())
    })
}

#[derive(Clone)]
struct Server {
    service: Arc<Service>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DbArgs {
    db: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlArgs {
    db: String,
    sql: String,
    #[serde(default)]
    max_rows: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskArgs {
    db: String,
    question: String,
    #[serde(default)]
    hint: Option<String>,
    #[serde(default)]
    method: Option<MethodName>,
    #[serde(default)]
    budget: Option<usize>,
}

/// The tools as clients list them.
fn tools() -> Vec<Tool> {
    let db = json!({"type": "string", "description": "A registered database's name (see list_databases)."});
    vec![
        tool(
            "list_databases",
            "List the databases this server answers questions over, with their tables.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "describe_schema",
            "The schema of one database as CREATE TABLE statements with keys and example values.",
            json!({"type": "object", "properties": {"db": db}, "required": ["db"]}),
        ),
        tool(
            "run_sql",
            "Run one read-only SQL query (SQLite dialect) on a database; writes and several statements are refused.",
            json!({"type": "object", "properties": {
                "db": db,
                "sql": {"type": "string", "description": "One SELECT (or WITH ... SELECT) statement."},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": MAX_ROWS, "description": "Rows to return (default 100)."}
            }, "required": ["db", "sql"]}),
        ),
        tool(
            "ask",
            "Answer a question in words over a database: the engine writes SQL with its local model, runs every candidate and returns the chosen SQL, its result and a confidence.",
            json!({"type": "object", "properties": {
                "db": db,
                "question": {"type": "string"},
                "hint": {"type": "string", "description": "Domain knowledge the question needs (a formula, what a code means)."},
                "method": {"type": "string", "enum": ["greedy", "sc", "iesr", "read"], "description": "How to answer (the server's default when absent)."},
                "budget": {"type": "integer", "minimum": 1, "maximum": crate::service::MAX_BUDGET, "description": "Samples (sc) or rollouts (iesr)."}
            }, "required": ["db", "question"]}),
        ),
    ]
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("tool schemas are objects")
    };
    Tool::new(name, description, Arc::new(schema))
}

impl Server {
    /// Runs one tool to its JSON result; None when no tool has that name.
    fn call(&self, name: &str, arguments: Map<String, Value>) -> Option<crate::Result<Value>> {
        let arguments = Value::Object(arguments);
        Some(match name {
            "list_databases" => Ok(json!({ "databases": self.service.databases() })),
            "describe_schema" => self.describe_schema(arguments),
            "run_sql" => self.run_sql(arguments),
            "ask" => self.ask(arguments),
            _ => return None,
        })
    }

    fn describe_schema(&self, arguments: Value) -> crate::Result<Value> {
        let args: DbArgs = parse("describe_schema", arguments)?;
        Ok(Value::String(self.service.schema(&args.db)?.ddl))
    }

    fn run_sql(&self, arguments: Value) -> crate::Result<Value> {
        let args: SqlArgs = parse("run_sql", arguments)?;
        let rows = args.max_rows.unwrap_or(DEFAULT_ROWS).clamp(1, MAX_ROWS);
        to_json(&self.service.sql(&args.db, &args.sql, rows)?)
    }

    fn ask(&self, arguments: Value) -> crate::Result<Value> {
        let args: AskArgs = parse("ask", arguments)?;
        let request = AnswerRequest {
            db: args.db,
            question: args.question,
            hint: args.hint,
            method: args.method,
            budget: args.budget,
            trace: false,
        };
        to_json(&self.service.answer(&request, &mut |_| {})?)
    }
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, arguments: Value) -> crate::Result<T> {
    serde_json::from_value(arguments)
        .map_err(|e| Error::InvalidArgument(format!("{tool}: bad arguments: {e}")))
}

fn to_json<T: serde::Serialize>(value: &T) -> crate::Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::InvalidArgument(format!("cannot encode: {e}")))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("iesr", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Answers questions over registered SQLite databases. Call list_databases, then \
                 describe_schema or ask; run_sql runs one read-only query.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.to_string();
        let arguments = request.arguments.unwrap_or_default();
        let called = tokio::task::spawn_blocking(move || server.call(&name, arguments))
            .await
            .map_err(|_| ErrorData::internal_error("the tool's thread failed", None))?;
        let Some(outcome) = called else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool named `{}`; the tools are list_databases, describe_schema, run_sql and ask",
                    request.name
                ),
                None,
            ));
        };
        let result = match outcome {
            Ok(Value::String(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(value) => CallToolResult::structured(value),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        };
        Ok(result.into())
    }
}
