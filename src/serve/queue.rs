//! Questions wait in a bounded queue for the one thread that runs the model:
//! the model is one CPU or GPU resource, so answering two questions at once
//! would only make both slower. A full queue refuses at once.

use crate::search::mcts::RolloutProgress;
use crate::service::{AnswerRequest, AnswerView, Service};
use crate::Error;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// What a waiting request hears about its question.
#[derive(Debug)]
pub enum JobEvent {
    /// The model thread took the question.
    Started,
    /// A rollout of the tree search finished.
    Rollout(RolloutProgress),
    /// Boxed: an answer is large beside the progress events.
    Finished(Box<Result<AnswerView, Error>>),
}

struct Job {
    request: AnswerRequest,
    /// A question still waiting past this instant is not started: its
    /// client has been told it timed out.
    deadline: Instant,
    events: mpsc::UnboundedSender<JobEvent>,
}

/// The queue in front of the model thread.
pub struct Queue {
    sender: mpsc::Sender<Job>,
    capacity: usize,
}

/// The queue held `capacity` questions already.
#[derive(Debug)]
pub struct QueueFull {
    pub capacity: usize,
}

impl Queue {
    /// Starts the model thread; up to `capacity` questions wait while one
    /// runs.
    pub fn start(service: Arc<Service>, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let (sender, mut receiver) = mpsc::channel::<Job>(capacity);
        std::thread::Builder::new()
            .name("iesr-model".into())
            .spawn(move || {
                while let Some(job) = receiver.blocking_recv() {
                    run(&service, job);
                }
            })
            .expect("the model thread starts");
        Queue { sender, capacity }
    }

    /// Puts a question in the queue; its events arrive on the receiver.
    pub fn submit(
        &self,
        request: AnswerRequest,
        deadline: Instant,
    ) -> Result<mpsc::UnboundedReceiver<JobEvent>, QueueFull> {
        let (events, receiver) = mpsc::unbounded_channel();
        let job = Job {
            request,
            deadline,
            events,
        };
        self.sender.try_send(job).map_err(|_| QueueFull {
            capacity: self.capacity,
        })?;
        Ok(receiver)
    }

    /// Questions waiting (not counting the one running).
    pub fn waiting(&self) -> usize {
        self.capacity - self.sender.capacity()
    }
}

fn run(service: &Service, job: Job) {
    if Instant::now() > job.deadline {
        // The client was answered with a timeout already.
        return;
    }
    let events = job.events;
    // A client that went away no longer listens; the answer is still
    // computed, since the model thread cannot be interrupted mid-call.
    let _ = events.send(JobEvent::Started);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        service.answer(&job.request, &mut |progress| {
            let _ = events.send(JobEvent::Rollout(progress));
        })
    }))
    .unwrap_or_else(|_| {
        Err(Error::Inference(
            "the engine failed on this question (internal error); please report it".into(),
        ))
    });
    let _ = events.send(JobEvent::Finished(Box::new(outcome)));
}
