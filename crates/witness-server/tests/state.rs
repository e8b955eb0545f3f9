//! The witness's state file under bad luck and hostile hands: emptied,
//! damaged while stopped or after a kill, held by another process. A witness
//! must never start afresh (trust on first use again) on a state it once
//! wrote, nor cosign over a state it cannot verify, nor fall back silently
//! to an older commit than the one it answered for (R-WIT-6). Real files,
//! real processes (killed with SIGKILL), real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use support::*;
use witness::{ALG_COSIGNATURE_V1, HttpWitness, SignerKey, Witness};
use witness_server::{ServerError, WitnessConfig, WitnessServer};

const WITNESS: &str = "witness.test/w1";

fn try_start(plane: &Plane, state: &Path) -> Result<WitnessServer, ServerError> {
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: cosigner(7, WITNESS),
        logs: vec![plane.log_config()],
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    WitnessServer::start(config, state, "127.0.0.1:0")
}

fn client(url: &str) -> HttpWitness {
    HttpWitness::new(url, vec![trusted(&cosigner(7, WITNESS))]).unwrap()
}

/// Whether the witness at `url` cosigns `plane`'s current checkpoint.
fn cosigns(url: &str, plane: &Plane) -> bool {
    client(url).add_checkpoint(&plane.signed(), &plane.log).is_ok()
}

/// Whether the witness at `url` refuses `plane`'s current checkpoint as
/// not extending what it cosigned (a fork, 422): a refusal for any other
/// reason (a 500) says nothing of what it remembers.
fn refuses_as_a_fork(url: &str, plane: &Plane) -> bool {
    client(url).add_checkpoint(&plane.signed(), &plane.log).is_err_and(|err| err.is_integrity())
}

/// The honest log grown to `size` and a fork of it at `size` sharing the
/// first `shared` leaves.
fn honest_and_fork(size: u64, shared: u64) -> (Plane, Plane) {
    let mut honest = Plane::new(1);
    honest.grow_to(size, u64::MAX);
    let mut fork = Plane::forked(1, "fork");
    fork.grow_to(size, shared);
    (honest, fork)
}

/// [`honest_and_fork`] of size 5 sharing 2 leaves, the honest log's
/// checkpoint cosigned by a witness on `state` that is then stopped.
fn cosigned_then_stopped(state: &Path) -> (Plane, Plane) {
    let (honest, fork) = honest_and_fork(5, 2);
    let server = try_start(&honest, state).unwrap();
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    (honest, fork)
}

/// Flips one bit of the stored root of `plane`'s current tree in the file.
fn damage_stored_root(state: &Path, plane: &Plane) {
    let mut bytes = std::fs::read(state).unwrap();
    let root = *plane.log.tree().root.as_bytes();
    let at = bytes.windows(32).position(|window| window == root).expect("the stored root is in the file");
    bytes[at] ^= 1;
    std::fs::write(state, &bytes).unwrap();
}

/// A witness process, killed (SIGKILL) when dropped, so a failing
/// assertion leaves no server behind.
struct Running(Child);

impl Running {
    /// Sets the largest file it may write (`prlimit`'s soft limit; `None`:
    /// no limit): a write past it fails as on a full disk.
    fn limit_file_size(&self, bytes: Option<u64>) {
        let limit = bytes.map_or_else(|| "unlimited".to_owned(), |bytes| bytes.to_string());
        let status = Command::new("prlimit")
            .arg("--pid")
            .arg(self.0.id().to_string())
            .arg(format!("--fsize={limit}:"))
            .status()
            .unwrap();
        assert!(status.success(), "prlimit");
    }

    /// Kills it now, as a crash does.
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }

    /// Kills it now, and what it wrote to standard error.
    fn kill_for_stderr(mut self) -> String {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
        let mut stderr = String::new();
        self.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        stderr
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The witness binary serving `plane` on `state`: the process and its URL,
/// or its exit code and standard error when it does not start.
fn spawn_binary(dir: &Path, plane: &Plane, state: &Path) -> Result<(Running, String), (Option<i32>, String)> {
    spawn_binary_from(Command::new(env!("CARGO_BIN_EXE_agentplane-witness")), dir, plane, state)
}

/// [`spawn_binary`], the process started with SIGXFSZ ignored, so that a
/// write past its file size limit fails (`EFBIG`) instead of killing it: a
/// full disk, made and ended with [`Running::limit_file_size`].
fn spawn_binary_on_a_disk_that_can_fill(dir: &Path, plane: &Plane, state: &Path) -> (Running, String) {
    let mut bash = Command::new("bash");
    bash.arg("-c").arg(r#"trap "" XFSZ; exec "$0" "$@""#).arg(env!("CARGO_BIN_EXE_agentplane-witness"));
    spawn_binary_from(bash, dir, plane, state).unwrap()
}

fn spawn_binary_from(
    mut command: Command,
    dir: &Path,
    plane: &Plane,
    state: &Path,
) -> Result<(Running, String), (Option<i32>, String)> {
    let key_file = dir.join("w.key");
    if !key_file.exists() {
        let skey = SignerKey::from_seed(WITNESS, ALG_COSIGNATURE_V1, [7; 32]).unwrap().to_skey();
        std::fs::write(&key_file, format!("{skey}\n")).unwrap();
    }
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--state"])
        .arg(state)
        .arg("--key-file")
        .arg(&key_file)
        .arg("--log")
        .arg(format!("{}={}", plane.origin, plane.key.verifier_key()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    if line.is_empty() {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        return Err((status.code(), stderr));
    }
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    Ok((Running(child), url))
}

/// R-WIT-6, attack: the state file is emptied behind a stopped witness
/// (truncated to zero bytes by a copy gone wrong, a `> witness.redb`, a
/// filesystem after a crash). The database opened an empty file as a new
/// one, so the witness started with no memory and cosigned, by trust on
/// first use, a fork of the checkpoint it had cosigned. With its high-water
/// mark beside it the state is made anew and brought forward to the mark
/// (the fork refused, the honest log cosigned); with the mark gone too it
/// refuses to start, saying what happened and what to do.
#[test]
fn r_wit_6_a_state_file_emptied_behind_the_witness_is_never_started_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, fork) = cosigned_then_stopped(&state);
    std::fs::OpenOptions::new().write(true).open(&state).unwrap().set_len(0).unwrap();
    let server = try_start(&honest, &state).unwrap();
    assert!(!cosigns(&server.url(), &fork), "the fork of the checkpoint cosigned before was cosigned");
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&server.url(), &honest), "the honest log's growth");
    server.shutdown();
    std::fs::OpenOptions::new().write(true).open(&state).unwrap().set_len(0).unwrap();
    std::fs::remove_file(dir.path().join("witness.redb.highwater")).unwrap();
    match try_start(&honest, &state) {
        Ok(server) => {
            let forked = cosigns(&server.url(), &fork);
            panic!("a witness started on an emptied state with no mark (and the fork was cosigned: {forked})");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(matches!(err, ServerError::State { .. }), "{message}");
            assert!(message.contains("empty"), "it says what happened: {message}");
        }
    }
}

/// R-WIT-6, bad luck: a byte of the state file changes while the witness is
/// stopped (a bad sector, a bit flip, an editor). The database trusted a
/// file shut down cleanly and read the damaged root as the one cosigned: the
/// honest log's next checkpoint was refused 422 and logged as an integrity
/// refusal (a false fork alarm about a log that did nothing wrong), and a
/// damaged page elsewhere may panic the process. The witness verifies the
/// file's checksums at start and refuses a damaged one.
#[test]
fn r_wit_6_a_state_file_damaged_while_stopped_is_refused_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, _) = cosigned_then_stopped(&state);
    damage_stored_root(&state, &honest);
    match try_start(&honest, &state) {
        Ok(server) => {
            honest.grow_to(8, u64::MAX);
            let answer = client(&server.url()).add_checkpoint(&honest.signed(), &honest.log);
            panic!("a witness started on a damaged state; the honest log's growth got: {answer:?}");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(matches!(err, ServerError::State { .. }), "{message}");
            assert!(message.contains("damaged"), "it says what happened: {message}");
        }
    }
}

/// R-WIT-6, bad luck: the witness process is killed (SIGKILL) after
/// cosigning sizes 5 and then 8. The state's commits are flushed only now and
/// then (the high-water mark, flushed before every answer, is what makes a
/// cosignature durable), so the restarted witness finds its state behind and
/// brings it forward from the mark: the fork of size 8 is refused, the honest
/// log's size 8 is cosigned again and its growth too.
#[test]
fn r_wit_6_a_witness_killed_after_answering_remembers_what_it_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, _) = honest_and_fork(5, 5);
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    assert!(cosigns(&url, &honest));
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&url, &honest));
    child.kill();
    let (_, fork) = honest_and_fork(8, 5);
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    assert!(!cosigns(&url, &fork), "the fork of the size-8 checkpoint answered before the kill was cosigned");
    assert!(cosigns(&url, &honest));
    honest.grow_to(9, u64::MAX);
    assert!(cosigns(&url, &honest));
    child.kill();
}

/// Cosigns `honest` on the witness `child` serving `state`, fills its disk
/// (room for the high-water mark, none for the state's pages) and submits
/// the log's growth until a submission is refused: the size refused and
/// what the client said. The state is written through to its file every
/// 1,024 commits (the mark holds each answer in between), so the disk is
/// found full within as many.
fn fill_the_disk(child: &Running, url: &str, state: &Path, honest: &mut Plane) -> (u64, String) {
    assert!(cosigns(url, honest));
    let mark = std::fs::metadata(state.with_extension("redb.highwater")).unwrap();
    child.limit_file_size(Some(mark.len()));
    let submitting = client(url);
    for size in honest.log.size() + 1..1_200 {
        honest.grow_to(size, u64::MAX);
        if let Err(err) = submitting.add_checkpoint(&honest.signed(), &honest.log) {
            return (size, err.to_string());
        }
    }
    panic!("the state's write past the limit never failed");
}

/// R-WIT-6, a witness operator's full disk: a write of the state fails
/// (`ENOSPC`, here `EFBIG` past a file size limit) and the database latches
/// the error, refusing every later write until it is opened again. The
/// witness answered 500 to every submission from then on, until restarted,
/// however much room the operator made. Now it opens its state again before
/// its next commit, held to its high-water mark as at a start: once there is
/// room it cosigns again, and still never a fork of what it cosigned.
#[test]
fn r_wit_6_a_witness_whose_disk_filled_serves_again_once_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, _) = honest_and_fork(5, 5);
    let (child, url) = spawn_binary_on_a_disk_that_can_fill(dir.path(), &honest, &state);
    let (full_at, said) = fill_the_disk(&child, &url, &state, &mut honest);
    assert!(said.contains("state"), "the witness says its state cannot be written: {said}");
    // Says why, to anyone who submits (a log's public checkpoint replayed
    // will do), but not where its files are on the witness's machine.
    assert!(said.contains("witness.redb"), "{said}");
    let dir_shown = dir.path().display().to_string();
    assert!(!said.contains(&dir_shown), "the witness's directory {dir_shown} in its answer: {said}");
    assert!(!cosigns(&url, &honest), "still full, still refused");
    child.limit_file_size(None);
    // The first submission with room again opens the state again: a fork of
    // the last checkpoint answered 200 (the state never flushed it: every
    // commit since the start was left to the mark) is refused. (A fork of a
    // checkpoint cosigned after the reopen proves nothing about it: that
    // one is refused by a witness that forgot all it cosigned before too.)
    let (_, fork) = honest_and_fork(full_at - 1, full_at - 2);
    assert!(refuses_as_a_fork(&url, &fork), "a fork of the checkpoint answered 200 before the disk filled");
    assert!(cosigns(&url, &honest), "with room again, the witness serves again without a restart");
    let (_, fork) = honest_and_fork(full_at, full_at - 1);
    assert!(refuses_as_a_fork(&url, &fork), "a fork of the checkpoint it cosigned");
    honest.grow_to(full_at + 1, u64::MAX);
    assert!(cosigns(&url, &honest));
    // Each submission while the disk was full tried to open the state
    // again, and anyone can submit (a log's checkpoint replayed): the log
    // says the state was brought forward once, when it was, not once a
    // try for every log.
    let stderr = child.kill_for_stderr();
    let brought = stderr.lines().filter(|line| line.contains("brought forward")).count();
    assert_eq!(brought, 1, "{stderr}");
}

/// R-WIT-6, a full disk and its operator: the state's write failed and it
/// was closed, and while it was (the witness answering 500), the
/// high-water mark beside it was removed to make room (or put back from an
/// older copy). The state was opened again held to what was on disk, and a
/// state closed on a full disk holds none of the commits since its last
/// flush: the running witness, which knew what it had answered 200, forgot
/// it, and cosigned a fork of it. The state opened again is held to what
/// the witness held too.
#[test]
fn r_wit_6_a_witness_whose_mark_was_removed_while_its_disk_was_full_remembers_what_it_cosigned() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, _) = honest_and_fork(5, 5);
    let (child, url) = spawn_binary_on_a_disk_that_can_fill(dir.path(), &honest, &state);
    let (full_at, _) = fill_the_disk(&child, &url, &state, &mut honest);
    std::fs::remove_file(dir.path().join("witness.redb.highwater")).unwrap();
    child.limit_file_size(None);
    let (_, fork) = honest_and_fork(full_at - 1, full_at - 2);
    assert!(refuses_as_a_fork(&url, &fork), "a fork of the checkpoint answered 200 before the disk filled");
    assert!(cosigns(&url, &honest), "with room again, the witness serves again without a restart");
    let marked = witness_server::high_water_mark(&state).unwrap().unwrap();
    assert_eq!(marked[ORIGIN].size, full_at, "the mark is made again, holding what was cosigned");
    child.kill();
}

/// R-WIT-6, two witness processes pointed at one state (a second service
/// unit, a restart that did not wait for the old process): the second is
/// refused at start (the database locks the file), with exit 2 and an
/// error that says what to do; it only said "Database already open. Cannot
/// acquire lock.". The first keeps serving.
#[test]
fn r_wit_6_a_second_witness_process_on_one_state_is_refused_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (honest, _) = honest_and_fork(5, 5);
    let (first, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    match spawn_binary(dir.path(), &honest, &state) {
        Ok((_second, _)) => panic!("two witness processes serve one state"),
        Err((code, stderr)) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("another process"), "it says what happened: {stderr}");
            assert!(stderr.contains("stop the other"), "it says what to do: {stderr}");
        }
    }
    assert!(cosigns(&url, &honest), "the first still serves");
    first.kill();
}

/// R-WIT-6, the state rolled back: the witness cosigns size 5, its state
/// file is copied (a backup), it cosigns size 8, and the copy is put back (a
/// restore, a file copied over, a disk image) or the file is deleted. The
/// state was all a witness remembered, so it started on size 5 (or on
/// nothing) and cosigned a fork of the size-8 checkpoint it had answered 200
/// for. The high-water mark beside the state (`<state>.highwater`, flushed
/// after every commit, before the answer) holds what was cosigned, and the
/// state is brought forward to it at start: the fork is refused, the honest
/// log cosigned, and the monitor endpoint serves the size-8 note.
#[test]
fn r_wit_6_a_state_file_replaced_by_an_older_copy_or_deleted_is_brought_forward_to_its_mark() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let backup = dir.path().join("backup.redb");
    let (mut honest, _) = honest_and_fork(5, 5);
    let server = try_start(&honest, &state).unwrap();
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    std::fs::copy(&state, &backup).unwrap();
    let server = try_start(&honest, &state).unwrap();
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    let (_, fork) = honest_and_fork(8, 5);
    for restore in ["older copy", "deleted"] {
        if restore == "deleted" {
            std::fs::remove_file(&state).unwrap();
        } else {
            std::fs::copy(&backup, &state).unwrap();
        }
        let server = try_start(&honest, &state).unwrap();
        assert!(!cosigns(&server.url(), &fork), "{restore}: the fork of the size-8 checkpoint was cosigned");
        let reader = witness::WitnessReader::new(&server.url(), vec![trusted(&cosigner(7, WITNESS))]).unwrap();
        let served = reader.latest_signed(&honest.origin, &[honest.key.verifier_key()]);
        assert!(matches!(&served, Ok(cosigned) if cosigned.checkpoint.tree().size == 8), "{restore}: {served:?}");
        assert!(cosigns(&server.url(), &honest), "{restore}");
        server.shutdown();
    }
}

/// R-WIT-6, the high-water mark cannot be written (its path taken by a
/// directory; a full or failing disk does the same): no cosignature leaves
/// whose tree the mark does not hold, so the submission is answered 500,
/// and once the mark can be written again the log is cosigned.
#[test]
fn r_wit_6_no_cosignature_leaves_before_the_high_water_mark_holds_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (mut honest, _) = honest_and_fork(5, 5);
    let server = try_start(&honest, &state).unwrap();
    assert!(cosigns(&server.url(), &honest));
    let mark = dir.path().join("witness.redb.highwater");
    assert_eq!(witness_server::high_water_mark(&state).unwrap().unwrap()[ORIGIN].size, 5);
    std::fs::remove_file(&mark).unwrap();
    std::fs::create_dir(&mark).unwrap();
    honest.grow_to(8, u64::MAX);
    assert!(!cosigns(&server.url(), &honest), "cosigned while the mark could not be written");
    std::fs::remove_dir(&mark).unwrap();
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    assert_eq!(witness_server::high_water_mark(&state).unwrap().unwrap()[ORIGIN].size, 8);
}

/// R-WIT-6, attack: the high-water mark cannot be written (a full or failing
/// disk; here its path taken by a directory), so the submission of size 8 is
/// answered 500, but the state's unflushed commit already held its cosigned
/// note and the monitor endpoint served it: a cosignature of size 8 left the
/// witness while nothing durable held it. After a crash the witness starts
/// on its mark (size 5, as the failed write left the disk) and cosigns a fork
/// of size 8: two roots for one size, both cosigned by this witness. The
/// monitor serves only what the mark holds.
#[test]
fn r_wit_6_the_monitor_serves_no_cosigned_note_the_high_water_mark_does_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let mark = dir.path().join("witness.redb.highwater");
    let (mut honest, _) = honest_and_fork(5, 5);
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    assert!(cosigns(&url, &honest));
    let written = std::fs::read(&mark).unwrap();
    std::fs::remove_file(&mark).unwrap();
    std::fs::create_dir(&mark).unwrap();
    honest.grow_to(8, u64::MAX);
    assert!(!cosigns(&url, &honest), "cosigned while the mark could not be written");
    let reader = witness::WitnessReader::new(&url, vec![trusted(&cosigner(7, WITNESS))]).unwrap();
    let served = reader.latest_signed(&honest.origin, &[honest.key.verifier_key()]);
    let leaked = matches!(&served, Ok(cosigned) if cosigned.checkpoint.tree().size == 8);
    // The crash, and the mark as the failed write left it on disk.
    child.kill();
    std::fs::remove_dir(&mark).unwrap();
    std::fs::write(&mark, &written).unwrap();
    let (_, fork) = honest_and_fork(8, 5);
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    let fork_cosigned = cosigns(&url, &fork);
    child.kill();
    assert!(
        !leaked,
        "the monitor served a cosigned size-8 note the mark did not hold (a fork of it was then cosigned: \
         {fork_cosigned}): {served:?}"
    );
}

/// Rewrites `plane`'s entry in the state at `state` (as an operator's redb
/// tool would, every checksum valid) with `edit` applied to its size, root
/// and note.
fn edit_stored_entry(state: &Path, plane: &Plane, edit: impl FnOnce(&mut u64, &mut Vec<u8>, &mut String)) {
    use redb::ReadableTable as _;
    const LATEST: redb::TableDefinition<&str, (u64, &[u8], &str)> = redb::TableDefinition::new("latest_cosigned");
    let db = redb::Database::open(state).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(LATEST).unwrap();
        let (mut size, mut root, mut note) = {
            let entry = table.get(plane.origin.as_str()).unwrap().unwrap();
            let (size, root, note) = entry.value();
            (size, root.to_vec(), note.to_owned())
        };
        edit(&mut size, &mut root, &mut note);
        table.insert(plane.origin.as_str(), (size, root.as_slice(), note.as_str())).unwrap();
    }
    txn.commit().unwrap();
}

/// R-WIT-6, attack (review 53): the state's entry for a log hand-edited
/// with a redb tool, every checksum valid: its root cut short, its size set
/// to 0 under the old root, or its note swapped for another checkpoint.
/// The witness started as if all were well: a short root was left out
/// silently (every submission of that log then answered 500 "damaged", with
/// neither file nor remedy named), a size 0 read as the empty tree's (a
/// fresh start by trust on first use), a swapped note served to monitors as
/// the one it cosigned. Now each entry is checked at start: with the
/// high-water mark holding the log it is brought forward from the mark;
/// without, the start is refused naming the file, the log and what is wrong.
#[test]
fn r_wit_6_a_hand_edited_state_entry_is_refused_at_start_naming_it() {
    type Edit = fn(&mut u64, &mut Vec<u8>, &mut String);
    let edits: [(&str, Edit); 3] = [
        ("root", |_, root, _| {
            root.pop();
        }),
        ("size", |size, _, _| *size = 0),
        ("note", |_, _, note| *note = note.replacen("\n5\n", "\n6\n", 1)),
    ];
    for (what, edit) in edits {
        for mark_kept in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let state = dir.path().join("witness.redb");
            let (mut honest, fork) = cosigned_then_stopped(&state);
            edit_stored_entry(&state, &honest, edit);
            if !mark_kept {
                std::fs::remove_file(dir.path().join("witness.redb.highwater")).unwrap();
            }
            match try_start(&honest, &state) {
                Ok(server) if mark_kept => {
                    let served = reqwest::blocking::get(format!(
                        "{}{}",
                        server.url(),
                        witness::protocol::monitor_path(&honest.origin)
                    ))
                    .unwrap()
                    .text()
                    .unwrap();
                    assert!(served.contains("\n5\n"), "{what}: the monitor serves what was cosigned: {served}");
                    assert!(refuses_as_a_fork(&server.url(), &fork), "{what}: the fork of size 5 is refused");
                    honest.grow_to(8, u64::MAX);
                    assert!(cosigns(&server.url(), &honest), "{what}: the honest log's growth is cosigned");
                }
                Ok(server) => {
                    let fork_cosigned = cosigns(&server.url(), &fork);
                    panic!("{what}: started on a hand-edited entry with no mark (the fork cosigned: {fork_cosigned})");
                }
                Err(err) => {
                    let message = err.to_string();
                    assert!(!mark_kept, "{what}: the mark holds the log, yet: {message}");
                    assert!(matches!(err, ServerError::State { .. }), "{what}: {message}");
                    assert!(message.contains("witness.redb"), "{what}: names the file: {message}");
                    assert!(message.contains(&honest.origin), "{what}: names the log: {message}");
                    assert!(message.contains(what), "{what}: says what is wrong: {message}");
                    assert!(message.contains("restore"), "{what}: says what to do: {message}");
                }
            }
        }
    }
}

/// R-OPS-1 (review 62's note): a state path in a folder that does not
/// exist was refused as "I/O error: No such file or directory", saying
/// neither which folder nor what to do. Named with the remedy, and nothing
/// is made.
#[test]
fn a_state_path_in_a_missing_folder_is_refused_naming_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (honest, _) = honest_and_fork(1, 1);
    let state = dir.path().join("missing").join("witness.redb");
    let refused = try_start(&honest, &state).err().unwrap().to_string();
    assert!(
        refused.contains("missing") && refused.contains("does not exist") && refused.contains("create"),
        "{refused}"
    );
    assert!(!dir.path().join("missing").exists(), "nothing made");
}

/// R-WIT-6, attack: the witness is killed (SIGKILL; a crash, power lost)
/// after cosigning sizes 5 and 8, which its state holds only in commits it
/// had not flushed yet (the high-water mark held them), and then the mark is
/// deleted (taken for a cache file, skipped by a backup). The witness
/// trusted the lagging state, made a new mark from it and cosigned a fork
/// of the size-8 checkpoint it had cosigned. A state not closed cleanly is
/// refused at start without its mark, saying what happened and what to do,
/// and serves again, the fork refused, once the mark is put back.
#[test]
fn r_wit_6_a_state_left_by_a_crash_whose_mark_was_deleted_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let mark = dir.path().join("witness.redb.highwater");
    let (mut honest, _) = honest_and_fork(5, 5);
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    assert!(cosigns(&url, &honest));
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&url, &honest));
    child.kill();
    let kept = std::fs::read(&mark).unwrap();
    std::fs::remove_file(&mark).unwrap();
    let (_, fork) = honest_and_fork(8, 5);
    match spawn_binary(dir.path(), &honest, &state) {
        Ok((child, url)) => {
            let forked = cosigns(&url, &fork);
            child.kill();
            panic!("started on a state left by a crash, its mark deleted (the size-8 fork cosigned: {forked})");
        }
        Err((code, stderr)) => {
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("witness.redb.highwater"), "names the mark: {stderr}");
            assert!(stderr.contains("not closed cleanly"), "says what happened: {stderr}");
            assert!(stderr.contains("put the mark back"), "says what to do: {stderr}");
            assert!(stderr.contains("retire this witness key"), "and if it is lost: {stderr}");
        }
    }
    let refused = try_start(&honest, &state).err().map(|err| matches!(err, ServerError::State { .. }));
    assert_eq!(refused, Some(true), "a typed refusal from the library too");
    assert!(!mark.exists(), "a refused start makes no mark");
    std::fs::write(&mark, &kept).unwrap();
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    assert!(refuses_as_a_fork(&url, &fork), "the mark put back, the fork of size 8 is refused");
    honest.grow_to(9, u64::MAX);
    assert!(cosigns(&url, &honest));
    child.kill();
}

/// R-WIT-6: a state closed cleanly (its last commits flushed at shutdown)
/// holds everything its mark held, so it starts without the mark, and a new
/// one is made; the clean close is undone at the next start, so a crash after
/// it, the mark then deleted, is refused. A state with no record of how it
/// was closed (written by a build before the record) starts without its mark,
/// as it did.
#[test]
fn r_wit_6_a_state_closed_cleanly_starts_without_its_mark_until_the_next_crash() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let mark = dir.path().join("witness.redb.highwater");
    let (mut honest, fork) = cosigned_then_stopped(&state);
    std::fs::remove_file(&mark).unwrap();
    let server = try_start(&honest, &state).unwrap();
    assert!(refuses_as_a_fork(&server.url(), &fork), "the state closed cleanly held size 5");
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    assert_eq!(witness_server::high_water_mark(&state).unwrap().unwrap()[ORIGIN].size, 8, "a new mark");
    let (child, url) = spawn_binary(dir.path(), &honest, &state).unwrap();
    honest.grow_to(9, u64::MAX);
    assert!(cosigns(&url, &honest));
    child.kill();
    std::fs::remove_file(&mark).unwrap();
    let refused = spawn_binary(dir.path(), &honest, &state).err().map(|(code, _)| code);
    assert_eq!(refused, Some(Some(2)), "the clean close of an earlier run was trusted after a crash");
    // As an older build leaves it: no record of how it was closed.
    {
        let db = redb::Database::open(&state).unwrap();
        let txn = db.begin_write().unwrap();
        let lifecycle: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("witness_lifecycle");
        assert!(txn.delete_table(lifecycle).unwrap(), "the record is where the test looks");
        txn.commit().unwrap();
    }
    let server = try_start(&honest, &state).unwrap();
    server.shutdown();
}

/// R-WIT-6, attack: an older copy of the high-water mark put back beside a
/// state that is ahead of it (a backup of the mark restored alone). The
/// later of the two is kept for every log: the state is never taken back
/// to the mark, or the witness would cosign a fork of what it cosigned
/// since.
#[test]
fn r_wit_6_an_older_mark_put_back_never_takes_the_state_back() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let mark = dir.path().join("witness.redb.highwater");
    let backup = dir.path().join("backup.highwater");
    let (mut honest, _) = honest_and_fork(5, 5);
    let server = try_start(&honest, &state).unwrap();
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    std::fs::copy(&mark, &backup).unwrap();
    let server = try_start(&honest, &state).unwrap();
    honest.grow_to(8, u64::MAX);
    assert!(cosigns(&server.url(), &honest));
    server.shutdown();
    std::fs::copy(&backup, &mark).unwrap();
    let (_, fork) = honest_and_fork(8, 5);
    let server = try_start(&honest, &state).unwrap();
    assert!(refuses_as_a_fork(&server.url(), &fork), "the fork of the size-8 checkpoint was cosigned");
    let reader = witness::WitnessReader::new(&server.url(), vec![trusted(&cosigner(7, WITNESS))]).unwrap();
    let served = reader.latest(&honest.origin);
    assert!(matches!(&served, Ok(cosigned) if cosigned.checkpoint.tree().size == 8), "{served:?}");
    server.shutdown();
    assert_eq!(witness_server::high_water_mark(&state).unwrap().unwrap()[&honest.origin].size, 8);
}

/// R-WIT-6: the state and its high-water mark holding two roots for one
/// size of a log (one of them changed outside the witness, every checksum
/// valid) is damage: the start is refused naming it, never settled by
/// taking either root.
#[test]
fn r_wit_6_a_state_and_mark_with_two_roots_for_one_size_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let (honest, fork) = cosigned_then_stopped(&state);
    let fork_root = fork.log.tree().root.as_bytes().to_vec();
    let fork_note = fork.signed().note().to_owned();
    edit_stored_entry(&state, &honest, |_, root, note| {
        *root = fork_root;
        *note = fork_note;
    });
    match try_start(&honest, &state) {
        Ok(server) => {
            let fork_cosigned = cosigns(&server.url(), &fork);
            panic!("started on two roots for size 5 (the fork cosigned: {fork_cosigned})");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains("two roots for size 5"), "{message}");
            assert!(message.contains(&honest.origin), "{message}");
        }
    }
}
