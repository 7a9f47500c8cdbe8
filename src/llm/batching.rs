//! Calls from several threads decoded together (continuous batching). One
//! scheduler thread runs every forward pass of a local model: a call's
//! prompt is prefilled on its own (reusing the prefix cache) into a cache
//! of the call's own, which its rows read as one shared prompt, as one
//! call alone decodes; each pass feeds every row of every call one token,
//! the matrices running once over all the rows and attention call by call,
//! and a row leaves when it finishes. A call joining or leaving copies
//! nothing of the others' states, and attention computes what it computes
//! for the call alone. On a 2-core CPU, whose decode throughput levels off
//! at the 4 to 8 rows the search and self-consistency already decode per
//! call, it gains little (docs/results.md, "Questions in flight: one cache a
//! call"); it is meant for a GPU, where a pass of many rows costs about
//! what one row does.
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

/// The rows of one call, decoding from their own cache: the call's prompt,
/// read once by all its rows, then each row's own positions.
struct Group {
    /// Index into the calls in flight.
    call: usize,
    /// Each row with its index among the call's rows, in the order of the
    /// cache's rows.
    rows: Vec<(usize, RowState)>,
    cache: KvCache,
}

struct Scheduler {
    model: Arc<LocalModel>,
    shared: Arc<Shared>,
    calls: Vec<Option<InFlight>>,
    /// The calls decoding, in the order their rows take in a pass.
    groups: Vec<Group>,
}

impl Scheduler {
    fn new(model: Arc<LocalModel>, shared: Arc<Shared>) -> Self {
        Scheduler {
            model,
            shared,
            calls: Vec::new(),
            groups: Vec::new(),
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
            let work = !queue.calls.is_empty() || !self.groups.is_empty();
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
        // Kept in the prefix cache now, not when the call finishes: the
        // questions beside this one are prefilled before it finishes and
        // often open with the same schema (a one-row call's prompt and
        // answer replace this entry).
        let states = self
            .model
            .prompt_states(&ids, &cache, exact)
            .map_err(inference)?;
        let first = row_logits(&logits, 0).map_err(inference)?;
        let mut rows = RowState::for_request(sampling, codec.max_new_tokens(ids.len(), sampling));
        for row in &mut rows {
            codec.sample_next(row, &first)?;
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

    /// Puts a prefilled call's rows in flight, with a cache that holds its
    /// prompt and room for its longest answer.
    fn add(&mut self, call: Call, joining: Joining) {
        let room = joining
            .rows
            .iter()
            .map(RowState::tokens_left)
            .max()
            .unwrap_or(0)
            + 1;
        let cache = KvCache::from_snapshot(
            &joining.states,
            joining.rows.len(),
            joining.states.len() + room,
            self.model.transformer().device(),
        );
        let cache = match cache {
            Ok(cache) => cache,
            Err(error) => {
                let error = inference(error);
                return self.shared.answer(call, Reply::Generated(Err(error)));
            }
        };
        let index = self.calls.len();
        self.calls.push(Some(InFlight {
            call,
            exact: joining.exact,
            done: (0..joining.rows.len()).map(|_| None).collect(),
            usage: joining.usage,
            prompt: joining.prompt,
            started: Instant::now(),
        }));
        self.groups.push(Group {
            call: index,
            rows: joining.rows.into_iter().enumerate().collect(),
            cache,
        });
    }

    /// Retires finished rows, runs one pass and answers the calls it
    /// finished.
    fn step(&mut self) -> Result<()> {
        self.retire()?;
        self.pass()?;
        self.retire()
    }

    /// Feeds every row its last token and draws its next: the matrices run
    /// once over the rows of every call, attention call by call.
    fn pass(&mut self) -> Result<()> {
        if self.groups.is_empty() {
            return Ok(());
        }
        let device = self.model.transformer().device();
        let inputs = self
            .groups
            .iter()
            .map(|g| {
                let tokens: Vec<u32> = g.rows.iter().map(|(_, r)| r.last_token()).collect();
                Tensor::new(tokens.as_slice(), device).and_then(|t| t.unsqueeze(1))
            })
            .collect::<candle_core::Result<Vec<_>>>()
            .map_err(inference)?;
        let mut groups: Vec<(&Tensor, &mut KvCache)> = inputs
            .iter()
            .zip(self.groups.iter_mut().map(|g| &mut g.cache))
            .collect();
        let logits = self
            .model
            .transformer()
            .forward_groups(&mut groups)
            .map_err(inference)?;
        let logits = all_row_logits(&logits).map_err(inference)?;
        let rows = self
            .groups
            .iter_mut()
            .flat_map(|g| g.rows.iter_mut().map(|(_, state)| state));
        self.model.codec().sample_rows(rows, &logits)
    }

    /// Takes finished rows out of their calls' caches and answers the calls
    /// whose rows have all finished.
    fn retire(&mut self) -> Result<()> {
        for mut group in std::mem::take(&mut self.groups) {
            if group.rows.iter().all(|(_, r)| r.is_running()) {
                self.groups.push(group);
                continue;
            }
            let mut kept = Vec::new();
            let mut kept_rows = Vec::new();
            for (position, (index, state)) in
                std::mem::take(&mut group.rows).into_iter().enumerate()
            {
                if state.is_running() {
                    kept.push(position);
                    kept_rows.push((index, state));
                } else {
                    self.finish_row(group.call, index, state, &group.cache, position)?;
                }
            }
            if !kept.is_empty() {
                group.cache = group.cache.select_rows(&kept).map_err(inference)?;
                group.rows = kept_rows;
                self.groups.push(group);
            }
        }
        if self.calls.iter().all(Option::is_none) {
            self.calls.clear();
        }
        Ok(())
    }

    /// Files a finished row with its call, answering the call when it was
    /// the last. `position` is the row's place in its call's `cache`.
    fn finish_row(
        &mut self,
        call: usize,
        index: usize,
        state: RowState,
        cache: &KvCache,
        position: usize,
    ) -> Result<()> {
        let slot = &mut self.calls[call];
        let flight = slot.as_mut().expect("a row's call is in flight");
        // A one-completion call's prompt and answer are kept, so that a
        // next prompt going on from the answer computes only its new turn.
        if flight.done.len() == 1 {
            let states = cache.row_states(position).map_err(inference)?;
            // The last token drawn was never fed.
            let fed = states.len().saturating_sub(flight.prompt.len());
            let answer = state.tokens();
            let kept = [flight.prompt.as_slice(), &answer[..fed.min(answer.len())]].concat();
            self.model.enter_question(flight.call.question);
            self.model
                .remember_with(&kept, flight.exact, || states.truncated(kept.len()))
                .map_err(inference)?;
        }
        flight.done[index] = Some(state);
        if flight.done.iter().all(Option::is_some) {
            let flight = slot.take().expect("checked above");
            self.complete(flight);
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

    /// Answers every call in flight with `error` and empties the batch.
    fn fail_all(&mut self, error: &Error) {
        self.groups.clear();
        for flight in std::mem::take(&mut self.calls).into_iter().flatten() {
            self.shared.answer(
                flight.call,
                Reply::Generated(Err(Error::Inference(error.to_string()))),
            );
        }
    }
}
