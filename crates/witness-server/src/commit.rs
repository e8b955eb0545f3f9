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

    /// Batches whose writer returned (each a write transaction, committed or
    /// failed); a writer that panicked is not counted.
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
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push((ticket, item));
        while queue.committing && !queue.answers.contains_key(&ticket) {
            queue = self.answered.wait(queue).unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(answer) = queue.answers.remove(&ticket) {
            return answer;
        }
        // No commit under way and ours unanswered: it is still waiting, and
        // this submission leads the commit that carries it.
        queue.committing = true;
        let (tickets, items): (Vec<u64>, Vec<T>) = std::mem::take(&mut queue.waiting).into_iter().unzip();
        drop(queue);
        let mut leading = Leading { group: self, tickets, answers: Vec::new() };
        leading.answers = commit(&items);
        self.commits.fetch_add(1, Ordering::Relaxed);
        drop(leading);
        self.lock().answers.remove(&ticket).unwrap_or_else(unanswered)
    }
}

fn unanswered() -> Answer {
    Answer::text(500, "the witness failed while storing its state\n")
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
            queue.answers.insert(ticket, answers.next().unwrap_or_else(unanswered));
        }
        queue.committing = false;
        drop(queue);
        self.group.answered.notify_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::sync::Arc;
    use std::thread::JoinHandle;

    use super::*;

    type Write = fn(&[u32]) -> Vec<Answer>;

    fn answers_each(batch: &[u32]) -> Vec<Answer> {
        batch.iter().map(|item| Answer::text(200, format!("{item}\n"))).collect()
    }

    fn panics(_: &[u32]) -> Vec<Answer> {
        panic!("the writer failed")
    }

    /// Starts `items` submitting, each from a thread of its own with
    /// `write` as its writer, while the caller's commit is under way, and
    /// returns once they all wait in the queue.
    fn queue_behind(group: &Arc<GroupCommit<u32>>, items: &[u32], write: Write) -> Vec<JoinHandle<Answer>> {
        let handles = items
            .iter()
            .map(|&item| {
                let group = Arc::clone(group);
                std::thread::spawn(move || group.submit(item, write))
            })
            .collect();
        // The leader holds no lock while it writes, so they queue; nothing
        // else can take them out of the queue before the leader is done.
        while group.lock().waiting.len() < items.len() {
            std::thread::yield_now();
        }
        handles
    }

    /// Submissions that arrive while a commit is under way share the next
    /// one, and each gets its own answer.
    #[test]
    fn r_wit_6_submissions_waiting_behind_a_commit_share_the_next_and_each_gets_its_answer() {
        let group = Arc::new(GroupCommit::new());
        let mut behind = Vec::new();
        let first = group.submit(1, |batch| {
            assert_eq!(batch, [1]);
            behind = queue_behind(&group, &[2, 3, 4], answers_each);
            answers_each(batch)
        });
        assert_eq!((first.status, first.body.as_str()), (200, "1\n"));
        let answers: Vec<String> = behind.into_iter().map(|handle| handle.join().unwrap().body).collect();
        assert_eq!(answers, ["2\n", "3\n", "4\n"]);
        assert_eq!(group.commits(), 2, "the three waiting shared one commit");
    }

    /// A writer that panics answers every submission of its batch with a 500
    /// (the leader's own thread sees the panic) and frees the queue: the next
    /// submission leads and is answered.
    #[test]
    fn a_writer_that_panics_answers_its_whole_batch_500_and_the_next_submission_leads() {
        let group = Arc::new(GroupCommit::new());
        let mut behind = Vec::new();
        group.submit(1, |batch| {
            behind = queue_behind(&group, &[2, 3], panics);
            answers_each(batch)
        });
        let (answered, panicked): (Vec<_>, Vec<_>) = behind.into_iter().map(JoinHandle::join).partition(Result::is_ok);
        assert_eq!(panicked.len(), 1, "the one that led the failed commit");
        let statuses: Vec<u16> = answered.into_iter().map(|answer| answer.unwrap().status).collect();
        assert_eq!(statuses, [500], "the other of the failed batch");
        assert_eq!(group.submit(4, answers_each).status, 200);
        assert_eq!(group.commits(), 2, "the first and the one led after; a writer that panicked finished none");
    }
}
