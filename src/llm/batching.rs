//! Calls from several threads decoded together (continuous batching). One
//! scheduler thread runs every forward pass of a local model: a call's
//! prompt is prefilled on its own (reusing the prefix cache), its rows then
//! join the rows already decoding, one token per row per pass, and each
//! row leaves the batch when it finishes. This pays where a pass of many
//! rows costs about what one row does (a GPU); on a 2-core CPU, whose
//! decode throughput levels off at the 4 to 8 rows the search and
//! self-consistency already decode per call, it gains nothing
//! (docs/results.md, "Questions decoded together by a local model").
//!
//! The threads that answer questions side by side hold a [`Seat`] each and
//! take turns in lockstep: a pass runs only when every seated thread waits
//! on the model. Which rows share a pass then follows from the questions
//! and the number of seats, never from timing, so a run is repeatable for
//! a given seed and concurrency.

use super::decoding::RowState;
use super::kv::{KvCache, KvSnapshot};
use super::local::{inference, LocalModel, Prefilled};
use super::transformer::{all_row_logits, row_logits};
use super::{ContinuationScore, Generation, LanguageModel, Prompt, Sampling, Usage};
use crate::error::{Error, Result};
use candle_core::Tensor;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::Instant;

/// A local model shared by threads whose calls are decoded together.
pub struct BatchingModel {
    model: Arc<LocalModel>,
    shared: Arc<Shared>,
    scheduler: Option<JoinHandle<()>>,
}

/// A place among the threads that answer questions in lockstep: while a
/// seat is taken, no pass runs unless its thread waits on the model. Take
/// one per worker before the workers start, bind it in the worker's thread
/// and drop it when the worker is done.
pub struct Seat {
    shared: Arc<Shared>,
    thread: Option<ThreadId>,
}

struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    /// Calls not yet taken up by the scheduler.
    calls: Vec<Call>,
    /// Seats taken, bound or not.
    seats: usize,
    /// Threads holding a bound seat.
    seated: Vec<ThreadId>,
    /// Seated threads waiting on a call.
    seated_waiting: usize,
    closing: bool,
}

struct Call {
    work: Work,
    question: u64,
    seated: bool,
    reply: SyncSender<Reply>,
}

enum Work {
    Generate(Prompt, Sampling),
    Score(Prompt, String),
}

enum Reply {
    Generated(Result<Generation>),
    Scored(Result<Option<ContinuationScore>>),
}

impl BatchingModel {
    /// Starts the scheduler thread that will run `model`'s passes.
    pub fn start(model: LocalModel) -> Result<Self> {
        let model = Arc::new(model);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        });
        let scheduler = std::thread::Builder::new()
            .name("iesr-batch".into())
            .spawn({
                let (model, shared) = (model.clone(), shared.clone());
                move || Scheduler::new(model, shared).run()
            })
            .map_err(|e| Error::Inference(format!("cannot start the batching thread: {e}")))?;
        Ok(BatchingModel {
            model,
            shared,
            scheduler: Some(scheduler),
        })
    }

    fn call(&self, work: Work) -> Receiver<Reply> {
        let (reply, answer) = sync_channel(1);
        let question = self.model.question();
        let mut queue = self.shared.lock();
        let seated = queue.seated.contains(&std::thread::current().id());
        if seated {
            queue.seated_waiting += 1;
        }
        queue.calls.push(Call {
            work,
            question,
            seated,
            reply,
        });
        self.shared.changed.notify_all();
        answer
    }
}

fn stopped() -> Error {
    Error::Inference("the batching thread stopped".into())
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().expect("batch queue lock")
    }

    /// Answers a call; its thread, if seated, stops waiting at once, so the
    /// next pass waits for its next call.
    fn answer(&self, call: Call, reply: Reply) {
        let mut queue = self.lock();
        if call.seated {
            queue.seated_waiting -= 1;
        }
        // The caller may have given up (its thread ended): nothing to do.
        let _ = call.reply.send(reply);
    }
}

impl Seat {
    /// Ties the seat to the calling thread: its calls count as the seat's.
    pub fn bind(&mut self) {
        let me = std::thread::current().id();
        self.shared.lock().seated.push(me);
        self.thread = Some(me);
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.seats -= 1;
        if let Some(thread) = self.thread {
            queue.seated.retain(|t| *t != thread);
        }
        self.shared.changed.notify_all();
    }
}

impl Drop for BatchingModel {
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(scheduler) = self.scheduler.take() {
            let _ = scheduler.join();
        }
    }
}

impl LanguageModel for BatchingModel {
    fn name(&self) -> &str {
        self.model.name()
    }

    fn generate(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Generation> {
        match self
            .call(Work::Generate(prompt.clone(), sampling.clone()))
            .recv()
        {
            Ok(Reply::Generated(generation)) => generation,
            _ => Err(stopped()),
        }
    }

    fn score(&self, prompt: &Prompt, continuation: &str) -> Result<Option<ContinuationScore>> {
        match self
            .call(Work::Score(prompt.clone(), continuation.to_string()))
            .recv()
        {
            Ok(Reply::Scored(score)) => score,
            _ => Err(stopped()),
        }
    }

    fn can_score(&self) -> bool {
        self.model.can_score()
    }

    /// The calling thread's next calls belong to a new question: the
    /// prefix cache reuses other questions' states only where they equal a
    /// fresh computation.
    fn begin_question(&self) {
        self.model.new_question();
    }

    fn first_token_text(&self, text: &str) -> Option<String> {
        self.model.first_token_text(text)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }

    fn seat(&self) -> Option<Seat> {
        self.shared.lock().seats += 1;
        Some(Seat {
            shared: self.shared.clone(),
            thread: None,
        })
    }
}

/// A call whose rows are decoding.
struct InFlight {
    call: Call,
    prompt: Vec<u32>,
    /// Leading prompt positions computed in whole aligned blocks.
    exact: usize,
    /// The rows, by their index in the call, once finished.
    done: Vec<Option<RowState>>,
    usage: Usage,
    started: Instant,
}

/// A prefilled call about to join the batch.
struct Joining {
    prompt: Vec<u32>,
    exact: usize,
    states: KvSnapshot,
    rows: Vec<RowState>,
    usage: Usage,
}

/// One row of the batch.
struct Row {
    /// Index into the calls in flight.
    call: usize,
    /// Index among its call's rows.
    index: usize,
    state: RowState,
    /// States to join the batch with (a new row's prompt), or None for a
    /// row already in the batch cache.
    joining: Option<KvSnapshot>,
}

struct Scheduler {
    model: Arc<LocalModel>,
    shared: Arc<Shared>,
    calls: Vec<Option<InFlight>>,
    /// The rows in the batch, in the order of the cache's rows, then the
    /// rows joining at the next pass.
    rows: Vec<Row>,
    cache: Option<KvCache>,
}

impl Scheduler {
    fn new(model: Arc<LocalModel>, shared: Arc<Shared>) -> Self {
        Scheduler {
            model,
            shared,
            calls: Vec::new(),
            rows: Vec::new(),
            cache: None,
        }
    }

    fn run(mut self) {
        while let Some(calls) = self.next_calls() {
            for call in calls {
                self.take_up(call);
            }
            if let Err(error) = self.step() {
                self.fail_all(&error);
            }
        }
    }

    /// Waits for the next turn: every seated thread waiting on the model
    /// and something to do. Returns the calls that arrived, or None once
    /// the model is dropped and nothing is left.
    fn next_calls(&self) -> Option<Vec<Call>> {
        let mut queue = self.shared.lock();
        loop {
            let work = !queue.calls.is_empty() || !self.rows.is_empty();
            if work && queue.seated_waiting >= queue.seats {
                return Some(std::mem::take(&mut queue.calls));
            }
            if queue.closing && !work {
                return None;
            }
            queue = self.shared.changed.wait(queue).expect("batch queue lock");
        }
    }

    /// Scores at once; prefills a generation and adds its rows.
    fn take_up(&mut self, call: Call) {
        self.model.enter_question(call.question);
        let prefilled = match &call.work {
            Work::Score(prompt, continuation) => {
                let score = self.model.score(prompt, continuation);
                return self.shared.answer(call, Reply::Scored(score));
            }
            Work::Generate(prompt, sampling) => self.prefill(prompt, sampling),
        };
        match prefilled {
            Ok(joining) => self.add(call, joining),
            Err(error) => self.shared.answer(call, Reply::Generated(Err(error))),
        }
    }

    /// A call's prompt states and its rows with their first tokens drawn.
    fn prefill(&self, prompt: &Prompt, sampling: &Sampling) -> Result<Joining> {
        let codec = self.model.codec();
        let started = Instant::now();
        let ids = codec.prompt_ids(prompt)?;
        let Prefilled {
            cache,
            logits,
            cached,
            exact,
        } = self.model.prefill(&ids, ids.len()).map_err(inference)?;
        let states = cache.snapshot(0, ids.len()).map_err(inference)?;
        let first = row_logits(&logits, 0).map_err(inference)?;
        let mut rows = RowState::for_request(sampling, codec.max_new_tokens(ids.len(), sampling));
        for row in &mut rows {
            codec.sample_next(row, &first)?;
        }
        if rows.len() > 1 {
            // Later calls may draw more rows of this prompt.
            self.model
                .remember_with(&ids, exact, || Ok(states.clone()))
                .map_err(inference)?;
        }
        Ok(Joining {
            usage: Usage {
                prompt_tokens: ids.len(),
                cached_prompt_tokens: cached,
                prefill_seconds: started.elapsed().as_secs_f64(),
                ..Usage::default()
            },
            prompt: ids,
            exact,
            states,
            rows,
        })
    }

    fn add(&mut self, call: Call, joining: Joining) {
        let index = self.calls.len();
        self.calls.push(Some(InFlight {
            call,
            exact: joining.exact,
            done: (0..joining.rows.len()).map(|_| None).collect(),
            usage: joining.usage,
            prompt: joining.prompt,
            started: Instant::now(),
        }));
        for (i, state) in joining.rows.into_iter().enumerate() {
            self.rows.push(Row {
                call: index,
                index: i,
                state,
                joining: Some(joining.states.clone()),
            });
        }
    }

    /// Retires finished rows, lets new rows join, runs one pass and
    /// answers the calls it finished.
    fn step(&mut self) -> Result<()> {
        self.retire()?;
        self.join()?;
        self.pass()?;
        self.retire()
    }

    /// Feeds every row its last token and draws its next.
    fn pass(&mut self) -> Result<()> {
        let Some(cache) = self.cache.as_mut() else {
            return Ok(());
        };
        let tokens: Vec<u32> = self.rows.iter().map(|r| r.state.last_token()).collect();
        let device = self.model.transformer().device();
        let input = Tensor::new(tokens.as_slice(), device)
            .and_then(|t| t.unsqueeze(1))
            .map_err(inference)?;
        let logits = self
            .model
            .transformer()
            .forward(&input, cache)
            .map_err(inference)?;
        let codec = self.model.codec();
        let logits = all_row_logits(&logits).map_err(inference)?;
        codec.sample_rows(self.rows.iter_mut().map(|r| &mut r.state), &logits)
    }

    /// Takes finished rows out of the batch and answers the calls whose
    /// rows have all finished.
    fn retire(&mut self) -> Result<()> {
        if self.rows.iter().all(|r| r.state.is_running()) {
            return Ok(());
        }
        let mut kept = Vec::new();
        let mut kept_rows = Vec::new();
        for (i, row) in std::mem::take(&mut self.rows).into_iter().enumerate() {
            if row.state.is_running() {
                if row.joining.is_none() {
                    kept.push(i);
                }
                kept_rows.push(row);
                continue;
            }
            self.finish_row(i, row)?;
        }
        self.rows = kept_rows;
        if let Some(cache) = &self.cache {
            self.cache = if kept.is_empty() {
                None
            } else {
                Some(cache.select_rows(&kept).map_err(inference)?)
            };
        }
        Ok(())
    }

    /// Files a finished row with its call, answering the call when it was
    /// the last. `position` is the row's place in the batch cache.
    fn finish_row(&mut self, position: usize, row: Row) -> Result<()> {
        let slot = &mut self.calls[row.call];
        let flight = slot.as_mut().expect("a row's call is in flight");
        // A one-completion call's prompt and answer are kept, so that a
        // next prompt going on from the answer computes only its new turn.
        if flight.done.len() == 1 {
            let states = match (row.joining, &self.cache) {
                (Some(prompt), _) => prompt,
                (None, Some(cache)) => cache.row_states(position).map_err(inference)?,
                (None, None) => {
                    return Err(Error::Inference("a decoding row lost its states".into()))
                }
            };
            // The last token drawn was never fed.
            let fed = states.len().saturating_sub(flight.prompt.len());
            let answer = row.state.tokens();
            let kept = [flight.prompt.as_slice(), &answer[..fed.min(answer.len())]].concat();
            self.model.enter_question(flight.call.question);
            self.model
                .remember_with(&kept, flight.exact, || states.truncated(kept.len()))
                .map_err(inference)?;
        }
        flight.done[row.index] = Some(row.state);
        if flight.done.iter().all(Option::is_some) {
            let flight = slot.take().expect("checked above");
            self.complete(flight);
        }
        if self.calls.iter().all(Option::is_none) {
            self.calls.clear();
        }
        Ok(())
    }

    fn complete(&self, flight: InFlight) {
        let rows = flight.done.into_iter().flatten().collect();
        let generation = self
            .model
            .codec()
            .completions(rows)
            .map(|(completions, generated)| Generation {
                completions,
                usage: Usage {
                    generated_tokens: generated,
                    decode_seconds: flight.started.elapsed().as_secs_f64(),
                    ..flight.usage
                },
            });
        self.shared
            .answer(flight.call, Reply::Generated(generation));
    }

    /// Rebuilds the batch cache with the joining rows, every row
    /// left-padded to the longest.
    fn join(&mut self) -> Result<()> {
        if self.rows.iter().all(|r| r.joining.is_none()) {
            return Ok(());
        }
        let mut states = Vec::with_capacity(self.rows.len());
        let mut in_cache = 0;
        for row in &mut self.rows {
            match row.joining.take() {
                Some(joining) => states.push(joining),
                None => {
                    let cache = self.cache.as_ref().expect("rows in the cache");
                    states.push(cache.row_states(in_cache).map_err(inference)?);
                    in_cache += 1;
                }
            }
        }
        // Each pass adds one position to every row; the row with the most
        // tokens left sets the room.
        let room = self
            .rows
            .iter()
            .map(|r| r.state.tokens_left())
            .max()
            .unwrap_or(0)
            + 1;
        self.cache = Some(
            KvCache::left_padded(&states, room, self.model.transformer().device())
                .map_err(inference)?,
        );
        Ok(())
    }

    /// Answers every call in flight with `error` and empties the batch.
    fn fail_all(&mut self, error: &Error) {
        self.rows.clear();
        self.cache = None;
        for flight in std::mem::take(&mut self.calls).into_iter().flatten() {
            self.shared.answer(
                flight.call,
                Reply::Generated(Err(Error::Inference(error.to_string()))),
            );
        }
    }
}
