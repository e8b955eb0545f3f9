//! Group commit of cosignatures. A witness answers only once the checkpoint
//! it cosigned is durable (R-WIT-6), so every `add-checkpoint` ends in an
//! fsync; with several logs submitting at once, each waiting for its own
//! fsync behind the others, the disk sets the rate. Here the submission that
//! finds no commit under way leads: it takes every submission waiting (its
//! own among them) into one write transaction, in arrival order, commits it
//! once, and hands each its answer. A lone submission commits on its own
//! thread with no hand-off. Each submission is checked against the state the
//! ones before it in the same transaction left, so a batch answers exactly
//! as the same submissions one transaction each, in that order, would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::Answer;

/// Submissions waiting for a commit, and how many commits there were.
pub(crate) struct GroupCommit<T> {
    queue: Mutex<Queue<T>>,
    answered: Condvar,
    commits: AtomicU64,
}

struct Queue<T> {
    waiting: Vec<(u64, T)>,
    answers: HashMap<u64, Answer>,
    committing: bool,
    next_ticket: u64,
}

impl<T> GroupCommit<T> {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(Queue {
                waiting: Vec::new(),
                answers: HashMap::new(),
                committing: false,
                next_ticket: 0,
            }),
            answered: Condvar::new(),
            commits: AtomicU64::new(0),
        }
    }

    /// Write transactions committed (or attempted) so far.
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    // No code panics holding the lock (the batch is written after it is
    // released), so a poisoned lock still guards a sound queue.
    fn lock(&self) -> MutexGuard<'_, Queue<T>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `item` and returns its answer once the transaction that
    /// carried it has committed or failed. `commit` writes a batch in one
    /// transaction and answers each item, in order.
    pub(crate) fn submit(&self, item: T, commit: impl FnOnce(&[T]) -> Vec<Answer>) -> Answer {
        let mut commit = Some(commit);
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push((ticket, item));
        loop {
            if let Some(answer) = queue.answers.remove(&ticket) {
                return answer;
            }
            // Our item is still waiting, so it has not been answered: when no
            // commit is under way, we lead the next one (with our `commit`,
            // never used before, as only the leader of our own item uses it).
            match (queue.committing, commit.take()) {
                (false, Some(write)) => {
                    queue.committing = true;
                    let (tickets, items): (Vec<u64>, Vec<T>) = std::mem::take(&mut queue.waiting).into_iter().unzip();
                    drop(queue);
                    let mut leading = Leading { group: self, tickets, answers: Vec::new() };
                    leading.answers = write(&items);
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    drop(leading);
                    queue = self.lock();
                }
                (_, unused) => {
                    commit = unused;
                    queue = self.answered.wait(queue).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// A commit in progress: its answers are handed out when it is dropped, and
/// if the writer panicked, every submission of its batch is answered with a
/// 500 and the next submission may lead, rather than waiting forever.
struct Leading<'a, T> {
    group: &'a GroupCommit<T>,
    tickets: Vec<u64>,
    answers: Vec<Answer>,
}

impl<T> Drop for Leading<'_, T> {
    fn drop(&mut self) {
        let mut answers = std::mem::take(&mut self.answers).into_iter();
        let mut queue = self.group.lock();
        for ticket in self.tickets.drain(..) {
            let answer =
                answers.next().unwrap_or_else(|| Answer::text(500, "the witness failed while storing its state\n"));
            queue.answers.insert(ticket, answer);
        }
        queue.committing = false;
        drop(queue);
        self.group.answered.notify_all();
    }
}
