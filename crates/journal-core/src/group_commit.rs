//! Group commit for a backend with one writer: appenders hand their
//! [`AppendRequest`] to a committer thread, which takes every append waiting
//! when it starts a transaction (up to a bound) into that one transaction and
//! answers each caller only after it committed. The backends differ only in
//! how a batch is written; the queue, the batching and the shutdown are here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use crate::error::{JournalError, StorageError};
use crate::store::AppendRequest;

/// One reply per append of a batch, in the batch's order.
pub type BatchReplies = Vec<Result<Option<u64>, JournalError>>;

struct Job {
    request: AppendRequest,
    reply: mpsc::Sender<Result<Option<u64>, JournalError>>,
}

/// The queue to a committer thread. Dropping it lets the committer finish
/// the appends already handed over and waits for it.
pub struct GroupCommit {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    committer: Mutex<Option<JoinHandle<()>>>,
    commits: Arc<AtomicU64>,
    /// Why appends are refused when there is no committer.
    closed_reason: &'static str,
}

fn machinery(what: &str) -> JournalError {
    JournalError::Io(StorageError::message(what))
}

impl GroupCommit {
    /// Starts the committer thread `name`: `commit` writes one batch of at
    /// most `max_batch` appends in one transaction and returns one reply per
    /// append. It keeps its state (a connection, a database) between batches.
    pub fn start<C>(name: &str, max_batch: usize, mut commit: C) -> Result<Self, JournalError>
    where
        C: FnMut(&[&AppendRequest]) -> BatchReplies + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel::<Job>();
        let commits = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&commits);
        let committer = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while let Ok(first) = receiver.recv() {
                    let mut batch = vec![first];
                    while batch.len() < max_batch.max(1) {
                        match receiver.try_recv() {
                            Ok(job) => batch.push(job),
                            Err(_) => break,
                        }
                    }
                    let requests: Vec<&AppendRequest> = batch.iter().map(|job| &job.request).collect();
                    let mut replies = commit(&requests).into_iter();
                    counted.fetch_add(1, Ordering::Relaxed);
                    for job in batch {
                        let reply = replies
                            .next()
                            .unwrap_or_else(|| Err(machinery("the committer gave no answer for this append")));
                        let _ = job.reply.send(reply);
                    }
                }
            })
            .map_err(|err| JournalError::Io(StorageError::new("starting the committer thread", err)))?;
        Ok(Self {
            jobs: Mutex::new(Some(sender)),
            committer: Mutex::new(Some(committer)),
            commits,
            closed_reason: "the store is closing",
        })
    }

    /// No committer: every append is refused with `reason` (a store opened read-only).
    pub fn refusing(reason: &'static str) -> Self {
        Self { jobs: Mutex::new(None), committer: Mutex::new(None), commits: Arc::default(), closed_reason: reason }
    }

    /// Hands `request` to the committer and waits until its batch committed.
    pub fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let (reply, answer) = mpsc::channel();
        {
            let jobs = self.jobs.lock().map_err(|_| machinery("the committer lock is poisoned"))?;
            let sender = jobs.as_ref().ok_or_else(|| machinery(self.closed_reason))?;
            sender.send(Job { request, reply }).map_err(|_| machinery("the committer thread has stopped"))?;
        }
        answer.recv().map_err(|_| machinery("the committer thread stopped before answering"))?
    }

    /// How many transactions appends have committed: fewer than the appends
    /// when concurrent appenders share group commits.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        if let Some(handle) = self.committer.lock().ok().and_then(|mut c| c.take()) {
            let _ = handle.join();
        }
    }
}
