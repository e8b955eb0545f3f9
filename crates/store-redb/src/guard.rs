//! redb trusts the bytes of its file: a page changed by hand (a key that is
//! no longer UTF-8, a length past its page, a branch of an unknown type)
//! makes it panic where it reads them, not answer an error. Someone with the
//! file and no key changes one byte of a run id with a hex editor, and every
//! reader, the audit first, died with redb's backtrace (R-UX-3). So each
//! call of this crate into redb is made under [`guarded`]: a panic there is
//! damage ([`JournalError::StoreDamage`] of the tenant read, else
//! [`JournalError::Io`]), said as such, and redb's panic message is not
//! printed on the way (it is quoted in the error).

use std::any::Any;
use std::cell::Cell;
use std::panic::AssertUnwindSafe;

use journal_core::{JournalError, RunId, SnapshotSink, StorageError, StoredRecord, TenantId};

thread_local! {
    /// How many [`guarded`] calls this thread is inside: the panic hook is
    /// silent while it is not zero.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

/// Puts, once per process, a panic hook in front of the one there: silent
/// for a panic inside [`guarded`] (it becomes an error that quotes it), the
/// hook that was there for every other.
fn install_quiet_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// What a panic said.
fn said(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}

/// The error a panic of redb's reading is: damage of `tenant`'s store when
/// one was being read.
fn damage(tenant: Option<&TenantId>, payload: &(dyn Any + Send)) -> JournalError {
    let detail = format!(
        "the store file is damaged: redb failed on bytes it never wrote ({}); nothing was read past them. Restore \
         the file from a backup (this one is evidence: keep a copy)",
        said(payload)
    );
    match tenant {
        Some(tenant) => JournalError::StoreDamage { tenant: tenant.clone(), detail },
        None => JournalError::Io(StorageError::message(detail)),
    }
}

/// Runs `read` (calls into redb), a panic in it answered as damage
/// ([`damage`]). `tenant`: the tenant it reads, when it reads one.
pub(crate) fn guarded<T, E: From<JournalError>>(
    tenant: Option<&TenantId>,
    read: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    install_quiet_hook();
    GUARDED.with(|depth| depth.set(depth.get() + 1));
    let result = std::panic::catch_unwind(AssertUnwindSafe(read));
    GUARDED.with(|depth| depth.set(depth.get().saturating_sub(1)));
    result.unwrap_or_else(|payload| Err(damage(tenant, payload.as_ref()).into()))
}

/// A caller's snapshot sink, called from inside [`guarded`] but not under
/// it: a panic of the caller's own code is the caller's, printed by its
/// hook and carried back out ([`Unguarded::finish`]), never called damage.
pub(crate) struct Unguarded<'a> {
    sink: &'a mut dyn SnapshotSink,
    panic: Option<Box<dyn Any + Send>>,
}

impl<'a> Unguarded<'a> {
    pub(crate) fn new(sink: &'a mut dyn SnapshotSink) -> Self {
        Self { sink, panic: None }
    }

    fn call(&mut self, f: impl FnOnce(&mut dyn SnapshotSink) -> Result<(), JournalError>) -> Result<(), JournalError> {
        let depth = GUARDED.with(|depth| depth.replace(0));
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut *self.sink)));
        GUARDED.with(|guarded| guarded.set(depth));
        result.unwrap_or_else(|payload| {
            self.panic = Some(payload);
            Err(JournalError::Io(StorageError::message("the snapshot's reader stopped: its sink panicked")))
        })
    }

    /// The read's answer, or the sink's panic carried on.
    pub(crate) fn finish<T>(self, result: Result<T, JournalError>) -> Result<T, JournalError> {
        if let Some(payload) = self.panic {
            std::panic::resume_unwind(payload);
        }
        result
    }
}

impl SnapshotSink for Unguarded<'_> {
    fn tables(&mut self, tables: journal_core::TenantSnapshot) -> Result<(), JournalError> {
        self.call(|sink| sink.tables(tables))
    }

    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        self.call(|sink| sink.run_records(run, rows))
    }

    fn unreadable_row(&mut self, run: &RunId, seq: u64, why: &JournalError) -> Result<(), JournalError> {
        self.call(|sink| sink.unreadable_row(run, seq, why))
    }

    fn run_bytes_bound(&self) -> Option<usize> {
        self.sink.run_bytes_bound()
    }

    fn run_too_large(&mut self, run: RunId, kept: journal_core::RunTooLarge) -> Result<(), JournalError> {
        self.call(|sink| sink.run_too_large(run, kept))
    }
}
