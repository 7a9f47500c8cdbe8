//! `iesr serve`: the [`Service`] as an HTTP JSON API.
//!
//! - `GET /healthz`: the model, the databases, questions waiting.
//! - `GET /v1/databases`: the registered databases and their tables.
//! - `GET /v1/schema/{db}`: the schema as the model sees it, and as data.
//! - `POST /v1/sql` `{db, sql, max_rows?}`: one guarded read query.
//! - `POST /v1/answer` `{db, question, hint?, method?, budget?, trace?}`: the
//!   answer; with `Accept: text/event-stream`, server-sent events `started`,
//!   `rollout` (each finished rollout of the search), then `answer` or
//!   `error`.
//!
//! Errors are JSON `{"error": "..."}`, one line, with a 4xx status for the
//! request's faults, 503 when the queue is full and 504 past the time limit.

mod queue;

use crate::service::{AnswerRequest, Service};
use crate::{Error, QueryError};
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use queue::{JobEvent, Queue};
use serde::Deserialize;
use serde_json::json;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the server is bounded.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    /// Questions that may wait while one is answered.
    pub queue: usize,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest a question may wait and run before its client is told it
    /// timed out.
    pub request_timeout: Duration,
    /// Most rows `/v1/sql` returns.
    pub max_rows: usize,
}

struct App {
    service: Arc<Service>,
    queue: Queue,
    config: ServeConfig,
}

/// Serves until SIGINT or SIGTERM; `on_listening` hears the bound address
/// (port 0 picks a free one).
pub fn run(
    service: Service,
    config: ServeConfig,
    on_listening: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    crate::service::server_runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|e| {
                Error::Server(format!(
                    "cannot listen on {}: {e}; pick another --addr",
                    config.addr
                ))
            })?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::Server(format!("cannot listen: {e}")))?;
        let service = Arc::new(service);
        let app = Arc::new(App {
            queue: Queue::start(Arc::clone(&service), config.queue),
            service,
            config,
        });
        on_listening(bound);
        axum::serve(listener, router(app))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(|e| Error::Server(format!("the server stopped: {e}")))
    })
}

fn router(app: Arc<App>) -> Router {
    let body_limit = app.config.max_body_bytes;
    Router::new()
        .route("/healthz", get(health))
        .route("/v1/databases", get(databases))
        .route("/v1/schema/{db}", get(schema))
        .route("/v1/sql", post(sql))
        .route("/v1/answer", post(answer))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "no such endpoint; see /healthz, /v1/databases, /v1/schema/{db}, /v1/sql, /v1/answer",
            )
        })
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(app)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = interrupt => {}
        _ = async {
            match terminate.as_mut() {
                Some(signal) => { signal.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

/// A failed request: its status and one line saying what to do.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::UnknownDatabase(_) => StatusCode::NOT_FOUND,
            Error::InvalidArgument(_) | Error::PromptTooLong { .. } => StatusCode::BAD_REQUEST,
            Error::Query(
                QueryError::Refused(_) | QueryError::Sql(_) | QueryError::SqlAt { .. },
            ) => StatusCode::BAD_REQUEST,
            Error::Query(_) => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, error.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let text = rejection.body_text();
        ApiError::new(
            rejection.status(),
            format!("bad request body: {}", crate::error::first_line(text)),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}

async fn health(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "version": crate::BUILD,
        "model": app.service.model_name(),
        "databases": app.service.databases().len(),
        "waiting": app.queue.waiting(),
    }))
}

async fn databases(State(app): State<Arc<App>>) -> Response {
    Json(app.service.databases()).into_response()
}

async fn schema(State(app): State<Arc<App>>, Path(db): Path<String>) -> Response {
    match app.service.schema(&db) {
        Ok(view) => Json(view).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlRequest {
    db: String,
    sql: String,
    #[serde(default)]
    max_rows: Option<usize>,
}

async fn sql(
    State(app): State<Arc<App>>,
    body: Result<Json<SqlRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = body?;
    let max_rows = request
        .max_rows
        .unwrap_or(app.config.max_rows)
        .min(app.config.max_rows);
    // Queries are bounded by the executor's own time limit; they run beside
    // the model thread, not behind it.
    let service = Arc::clone(&app.service);
    let result =
        tokio::task::spawn_blocking(move || service.sql(&request.db, &request.sql, max_rows))
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the query's thread failed",
                )
            })??;
    Ok(Json(result).into_response())
}

async fn answer(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Json<AnswerRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = body?;
    app.service.check(&request)?;
    let timeout = app.config.request_timeout;
    let deadline = Instant::now() + timeout;
    let events = app.queue.submit(request, deadline).map_err(|full| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} questions are waiting already; try again later",
                full.capacity
            ),
        )
    })?;
    if wants_events(&headers) {
        Ok(stream(events, deadline, timeout).into_response())
    } else {
        let answer = tokio::time::timeout_at(deadline.into(), finished(events))
            .await
            .map_err(|_| timed_out(timeout))??;
        Ok(Json(answer).into_response())
    }
}

fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

fn timed_out(timeout: Duration) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "no answer within {} s; ask with a smaller budget or start the server with a larger --request-timeout",
            timeout.as_secs_f64()
        ),
    )
}

async fn finished(
    mut events: tokio::sync::mpsc::UnboundedReceiver<JobEvent>,
) -> Result<crate::service::AnswerView, ApiError> {
    while let Some(event) = events.recv().await {
        if let JobEvent::Finished(outcome) = event {
            return (*outcome).map_err(ApiError::from);
        }
    }
    Err(ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the model thread stopped before answering",
    ))
}

/// The question's events as server-sent events, ending with `answer` or
/// `error`.
fn stream(
    events: tokio::sync::mpsc::UnboundedReceiver<JobEvent>,
    deadline: Instant,
    timeout: Duration,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let state = (Some(events), deadline);
    let stream = futures_util::stream::unfold(state, move |(events, deadline)| async move {
        let mut events = events?;
        let next = tokio::time::timeout_at(deadline.into(), events.recv()).await;
        let (event, more) = match next {
            Ok(Some(JobEvent::Started)) => (Event::default().event("started").data("{}"), true),
            Ok(Some(JobEvent::Rollout(progress))) => (json_event("rollout", &progress), true),
            Ok(Some(JobEvent::Finished(outcome))) => match *outcome {
                Ok(answer) => (json_event("answer", &answer), false),
                Err(error) => (error_event(&error.to_string()), false),
            },
            Ok(None) => (
                error_event("the model thread stopped before answering"),
                false,
            ),
            Err(_) => (error_event(&timed_out(timeout).message), false),
        };
        Some((Ok(event), (more.then_some(events), deadline)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn json_event<T: serde::Serialize>(name: &str, value: &T) -> Event {
    Event::default()
        .event(name)
        .data(serde_json::to_string(value).expect("events serialize"))
}

fn error_event(message: &str) -> Event {
    json_event("error", &json!({ "error": message }))
}
