//! Group commit for a backend with one writer, without a committer thread:
//! an appender that finds no commit under way becomes the leader, takes every
//! append waiting (up to a bound, its own among them) into one transaction,
//! commits it on its own thread, and hands each waiting appender its answer.
//! Appenders that arrive while a commit is under way wait for the next one,
//! which the first of them leads: concurrent appenders share one fdatasync,
//! and a lone appender commits on its own thread with no hand-off at all.
//! The backends differ only in how a batch is written; the queue, the
//! batching and the answers are here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{JournalError, StorageError};
use crate::store::AppendRequest;

/// One reply per append of a batch, in the batch's order.
pub type BatchReplies = Vec<Result<Option<u64>, JournalError>>;

type Answer = Result<Option<u64>, JournalError>;

/// Every append of a batch answered with `err`: the batch did not commit.
pub fn fail_all(batch: &[&AppendRequest], err: JournalError) -> BatchReplies {
    batch.iter().map(|_| Err(err.clone())).collect()
}
type Writer = Box<dyn FnMut(&[&AppendRequest]) -> BatchReplies + Send>;

/// How long a gathering leader waits for the next appender of the last
/// commit to come back: while they keep arriving it keeps waiting.
const GATHER_QUIET: std::time::Duration = std::time::Duration::from_micros(150);
/// The longest a leader gathers: a fraction of one commit (a PostgreSQL
/// round trip and its commit, an fdatasync).
const GATHER_AT_MOST: std::time::Duration = std::time::Duration::from_micros(800);

#[derive(Default)]
struct Queue {
    waiting: VecDeque<(u64, AppendRequest)>,
    answers: HashMap<u64, Answer>,
    committing: bool,
    next_ticket: u64,
    /// How many appends the last commit carried.
    last_batch: usize,
}

/// The appends waiting for a commit, and the writer that commits them.
pub struct GroupCommit {
    queue: Mutex<Queue>,
    answered: Condvar,
    /// `None`: every append is refused (a store opened read-only).
    writer: Option<Mutex<Writer>>,
    max_batch: usize,
    commits: AtomicU64,
    /// Why appends are refused when there is no writer.
    refusal: &'static str,
}

fn machinery(what: &str) -> JournalError {
    JournalError::Io(StorageError::message(what))
}

/// A commit in progress: if the writer panics, every append of its batch
/// is answered with an error and the next appender may lead, rather than
/// waiting forever.
struct Leading<'a> {
    group: &'a GroupCommit,
    tickets: Vec<u64>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut queue = self.group.lock_queue();
        for ticket in self.tickets.drain(..) {
            queue.answers.entry(ticket).or_insert_with(|| Err(machinery("the writer failed while committing")));
        }
        queue.committing = false;
        drop(queue);
        self.group.answered.notify_all();
    }
}

impl GroupCommit {
    /// Group commit over `commit`, which writes one batch of at most
    /// `max_batch` appends in one transaction and returns one reply per
    /// append. It keeps its state (a connection, a database) between batches
    /// and runs on the thread of whichever appender leads.
    pub fn start<C>(max_batch: usize, commit: C) -> Self
    where
        C: FnMut(&[&AppendRequest]) -> BatchReplies + Send + 'static,
    {
        Self {
            queue: Mutex::default(),
            answered: Condvar::new(),
            writer: Some(Mutex::new(Box::new(commit))),
            max_batch: max_batch.max(1),
            commits: AtomicU64::new(0),
            refusal: "the store is closing",
        }
    }

    /// No writer: every append is refused with `reason` (a store opened read-only).
    pub fn refusing(reason: &'static str) -> Self {
        Self {
            queue: Mutex::default(),
            answered: Condvar::new(),
            writer: None,
            max_batch: 1,
            commits: AtomicU64::new(0),
            refusal: reason,
        }
    }

    // A panic elsewhere while the queue was held cannot leave it torn:
    // every change to it is a single push, drain or insert.
    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits `request` (in a batch with whatever else is waiting) and
    /// returns once that transaction committed.
    pub fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let Some(writer) = &self.writer else {
            return Err(machinery(self.refusal));
        };
        let mut queue = self.lock_queue();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push_back((ticket, request));
        loop {
            if let Some(answer) = queue.answers.remove(&ticket) {
                return answer;
            }
            if queue.committing {
                queue = self.answered.wait(queue).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Lead: take what is waiting, commit it outside the lock.
            queue.committing = true;
            queue = self.gather(queue);
            let take = queue.waiting.len().min(self.max_batch);
            let batch: Vec<(u64, AppendRequest)> = queue.waiting.drain(..take).collect();
            queue.last_batch = batch.len();
            drop(queue);
            let mut leading = Leading { group: self, tickets: batch.iter().map(|(ticket, _)| *ticket).collect() };
            let requests: Vec<&AppendRequest> = batch.iter().map(|(_, request)| request).collect();
            let replies = {
                let mut write = writer.lock().unwrap_or_else(PoisonError::into_inner);
                write(&requests)
            };
            self.commits.fetch_add(1, Ordering::Relaxed);
            let mut replies = replies.into_iter();
            queue = self.lock_queue();
            for (ticket, _) in &batch {
                let reply =
                    replies.next().unwrap_or_else(|| Err(machinery("the writer gave no answer for this append")));
                queue.answers.insert(*ticket, reply);
            }
            drop(queue);
            // Marks the commit finished and wakes the waiters.
            leading.tickets.clear();
            drop(leading);
            queue = self.lock_queue();
        }
    }

    /// A leader that finds fewer appends waiting than the last commit
    /// carried gives the others a moment to join: they were answered by that
    /// commit an instant ago and are preparing their next append. Without
    /// it, concurrent appenders split into a commit of one (the first back)
    /// and a commit of the rest, paying two commits where one would do.
    /// It stops when the last batch's size is reached, when none arrived for
    /// [`GATHER_QUIET`], or after [`GATHER_AT_MOST`]. An appender alone after
    /// a larger batch waits once, for [`GATHER_QUIET`]; after a batch of one,
    /// not at all.
    fn gather<'q>(&'q self, mut queue: MutexGuard<'q, Queue>) -> MutexGuard<'q, Queue> {
        let wanted = queue.last_batch.min(self.max_batch);
        let start = std::time::Instant::now();
        let (mut seen, mut last_arrival) = (queue.waiting.len(), start);
        while seen < wanted && last_arrival.elapsed() < GATHER_QUIET && start.elapsed() < GATHER_AT_MOST {
            drop(queue);
            std::thread::yield_now();
            queue = self.lock_queue();
            if queue.waiting.len() > seen {
                (seen, last_arrival) = (queue.waiting.len(), std::time::Instant::now());
            }
        }
        queue
    }

    /// How many transactions appends have committed: fewer than the appends
    /// when concurrent appenders share group commits.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::chain::{ChainHash, StoredRecord};
    use crate::ids::{RunId, TenantId};

    fn request(n: u64) -> AppendRequest {
        AppendRequest {
            tenant: TenantId::new("t").unwrap(),
            run: RunId::new(&format!("run-{n}")).unwrap(),
            expected_head: None,
            row: StoredRecord {
                seq: 1,
                kind: "StepStarted".into(),
                effect_key: None,
                prev_hash: ChainHash::GENESIS,
                hash: ChainHash::GENESIS,
                bytes: n.to_be_bytes().to_vec(),
                signature: None,
            },
            idempotency_key: None,
            conclusion: None,
            encoded_bytes: None,
        }
    }

    fn number(request: &AppendRequest) -> u64 {
        request.row.bytes.iter().fold(0, |acc, byte| acc << 8 | u64::from(*byte))
    }

    #[test]
    fn every_appender_gets_its_own_answer_and_concurrent_ones_share_commits() {
        let group = Arc::new(GroupCommit::start(8, |batch| {
            std::thread::yield_now();
            batch.iter().map(|request| Ok(Some(number(request)))).collect()
        }));
        std::thread::scope(|scope| {
            for thread in 0..16u64 {
                let group = Arc::clone(&group);
                scope.spawn(move || {
                    for i in 0..50 {
                        let n = thread * 1000 + i;
                        assert_eq!(group.append(request(n)).ok(), Some(Some(n)), "append {n} got another's answer");
                    }
                });
            }
        });
        assert!(group.commits() <= 800, "never more commits than appends");
        assert!(group.commits() >= 100, "at most eight appends per commit");
    }

    #[test]
    fn a_writer_that_panics_answers_its_batch_with_an_error_and_the_next_append_commits() {
        let calls = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&calls);
        let group = GroupCommit::start(4, move |batch| {
            if counted.fetch_add(1, Ordering::Relaxed) == 0 {
                panic!("the first commit breaks");
            }
            batch.iter().map(|_| Ok(None)).collect()
        });
        let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| group.append(request(1))));
        assert!(first.is_err(), "the leader's own thread sees the writer's panic");
        assert!(matches!(group.append(request(2)), Ok(None)), "the group commits again after a panic");
    }

    #[test]
    fn a_refusing_group_refuses_with_its_reason() {
        let group = GroupCommit::refusing("the store is open read-only");
        let err = group.append(request(1)).err().map(|err| err.to_string()).unwrap_or_default();
        assert!(err.contains("read-only"), "{err}");
    }
}
