// Keeping the witness up under connection pressure (issue 22): the process's
// open-file limit, the connection registry (a global and a per-peer cap, idle
// connections closed first), and one rate-limited log line for it all.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::sync::Notify;

/// Descriptors kept back from connections for everything else the process
/// opens: the listener, the state file, logs, the runtime's own.
pub const FILE_RESERVE: u64 = 64;

/// The default per-peer cap: connections one IP address may hold at once.
pub const DEFAULT_MAX_PER_PEER: usize = 64;

/// `max_connections` where the open-file limit cannot be read.
pub const FALLBACK_MAX_CONNECTIONS: usize = 1024 - FILE_RESERVE as usize;

/// The first pause after an accept error; it doubles on each error in a row.
pub const ACCEPT_BACKOFF_START: Duration = Duration::from_millis(10);

/// The longest pause after accept errors.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// At most one line about connection pressure (accept errors, idle
/// connections closed, connections refused) per this interval; it counts
/// what happened since the last one.
pub const PRESSURE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How long the accept loop waits for a connection it closed to give its
/// descriptor back before accepting again.
const VICTIM_CLOSE_WAIT: Duration = Duration::from_millis(100);

/// The process's open-file limit (`RLIMIT_NOFILE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The limit in force: opening more files or sockets fails (EMFILE).
    pub soft: u64,
    /// The most the soft limit may be raised to without privileges.
    pub hard: u64,
}

impl OpenFiles {
    /// The limits now in force.
    pub fn current() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
            Ok(Self { soft, hard })
        }
        #[cfg(not(unix))]
        {
            Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "no RLIMIT_NOFILE on this platform"))
        }
    }

    /// Raises the soft limit to the hard one (where the system allows) and
    /// returns the limits then in force.
    pub fn raise() -> std::io::Result<Self> {
        rlimit::increase_nofile_limit(u64::MAX)?;
        Self::current()
    }

    /// Sets the soft limit to `soft`, at most the hard limit (lowering it
    /// is always allowed), and returns the limits then in force.
    pub fn set_soft(soft: u64) -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
            rlimit::setrlimit(rlimit::Resource::NOFILE, soft.min(hard), hard)?;
            Self::current()
        }
        #[cfg(not(unix))]
        {
            let _ = soft;
            Self::current()
        }
    }

    /// The most connections that fit: the soft limit less [`FILE_RESERVE`],
    /// at least 1.
    pub fn connection_ceiling(&self) -> usize {
        usize::try_from(self.soft.saturating_sub(FILE_RESERVE)).unwrap_or(usize::MAX).max(1)
    }
}

/// `max_connections` by default: what fits under the open-file soft limit
/// now in force (see [`OpenFiles::connection_ceiling`]).
pub fn default_max_connections() -> usize {
    OpenFiles::current().map_or(FALLBACK_MAX_CONNECTIONS, |files| files.connection_ceiling())
}

/// Why a new connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its peer holds `max_per_peer` connections, none of them idle.
    PerPeer,
    /// The server holds `max_connections`, none of them idle.
    Full,
}

/// What the accept loop and a connection's task tell each other.
#[derive(Default)]
pub(crate) struct Signals {
    /// The registry closed the connection (to make room): stop serving it.
    pub(crate) close: Notify,
    /// The connection's task has dropped the socket.
    pub(crate) closed: Notify,
}

/// A connection admitted.
pub(crate) struct Admitted {
    pub(crate) id: u64,
    pub(crate) signals: Arc<Signals>,
    /// Idle connections closed to make room for it: await
    /// [`until_closed`] on each before accepting more, so the descriptors
    /// in use never exceed the connections counted.
    pub(crate) evicted: Vec<Arc<Signals>>,
}

struct Entry {
    peer: IpAddr,
    idle: bool,
    signals: Arc<Signals>,
}

#[derive(Default)]
struct Peer {
    open: usize,
    /// Its idle connections, oldest first.
    idle: BTreeSet<u64>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    connections: HashMap<u64, Entry>,
    /// Every idle connection, oldest first (ids grow with accept order).
    idle: BTreeSet<u64>,
    peers: HashMap<IpAddr, Peer>,
}

impl Inner {
    /// Forgets a connection; returns its signals if it was registered.
    fn remove(&mut self, id: u64) -> Option<Arc<Signals>> {
        let entry = self.connections.remove(&id)?;
        self.idle.remove(&id);
        if let Some(peer) = self.peers.get_mut(&entry.peer) {
            peer.idle.remove(&id);
            peer.open = peer.open.saturating_sub(1);
            if peer.open == 0 {
                self.peers.remove(&entry.peer);
            }
        }
        Some(entry.signals)
    }

    /// Forgets a connection and tells its task to close it.
    fn evict(&mut self, id: u64) -> Option<Arc<Signals>> {
        let signals = self.remove(id)?;
        signals.close.notify_one();
        Some(signals)
    }
}

/// The peer a connection from `address` counts against: an IPv4 address
/// (an IPv4-mapped IPv6 one read as IPv4), or an IPv6 address's /64, since
/// one IPv6 host is given a whole /64 and can connect from as many of its
/// addresses as it likes: a cap per address would bound none of them.
pub(crate) fn peer_of(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// Every connection served, which are idle (no complete request header
/// received since the last response), and how many each peer holds.
pub(crate) struct Registry {
    inner: Mutex<Inner>,
    /// Lowered when the open-file limit is found lower under the running
    /// server.
    max_connections: AtomicUsize,
    max_per_peer: usize,
}

impl Registry {
    pub(crate) fn new(max_connections: usize, max_per_peer: usize) -> Self {
        Self { inner: Mutex::default(), max_connections: AtomicUsize::new(max_connections), max_per_peer }
    }

    /// Out of descriptors: if the open-file soft limit was lowered under the
    /// running server, `max_connections` follows it down. The new maximum
    /// when lowered.
    pub(crate) fn follow_open_file_limit(&self) -> Option<usize> {
        let ceiling = OpenFiles::current().ok()?.connection_ceiling();
        let before = self.max_connections.fetch_min(ceiling, Ordering::Relaxed);
        (ceiling < before).then_some(ceiling)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes room for a connection from `peer` and registers it (idle): at
    /// its peer's cap the peer's oldest idle connection is closed, at the
    /// server's cap the oldest idle connection of all; refused when no idle
    /// connection is there to close.
    pub(crate) fn admit(&self, peer: IpAddr) -> Result<Admitted, Refusal> {
        let peer = peer_of(peer);
        let mut inner = self.lock();
        let mut evicted = Vec::new();
        if let Some(held) = inner.peers.get(&peer)
            && held.open >= self.max_per_peer
        {
            let oldest = held.idle.first().copied().ok_or(Refusal::PerPeer)?;
            evicted.extend(inner.evict(oldest));
        }
        // More than one over only when the maximum was lowered under us.
        while inner.connections.len() >= self.max_connections.load(Ordering::Relaxed) {
            let Some(oldest) = inner.idle.first().copied() else {
                // Those closed above stay closed: their peer was over its cap anyway.
                return Err(Refusal::Full);
            };
            evicted.extend(inner.evict(oldest));
        }
        let id = inner.next;
        inner.next += 1;
        let signals = Arc::new(Signals::default());
        inner.connections.insert(id, Entry { peer, idle: true, signals: Arc::clone(&signals) });
        inner.idle.insert(id);
        let held = inner.peers.entry(peer).or_default();
        held.open += 1;
        held.idle.insert(id);
        Ok(Admitted { id, signals, evicted })
    }

    /// Closes the oldest idle connection (to free its descriptor); its
    /// signals, to await its closing.
    pub(crate) fn evict_oldest_idle(&self) -> Option<Arc<Signals>> {
        let mut inner = self.lock();
        let oldest = inner.idle.first().copied()?;
        inner.evict(oldest)
    }

    /// A complete request header arrived: the connection is busy until the
    /// guard is dropped (with the response body, once written).
    pub(crate) fn busy(self: &Arc<Self>, id: u64) -> BusyGuard {
        let mut inner = self.lock();
        if let Some(entry) = inner.connections.get_mut(&id) {
            entry.idle = false;
            let peer = entry.peer;
            inner.idle.remove(&id);
            if let Some(held) = inner.peers.get_mut(&peer) {
                held.idle.remove(&id);
            }
        }
        BusyGuard { registry: Arc::clone(self), id }
    }

    fn idle(&self, id: u64) {
        let mut inner = self.lock();
        if let Some(entry) = inner.connections.get_mut(&id) {
            entry.idle = true;
            let peer = entry.peer;
            inner.idle.insert(id);
            if let Some(held) = inner.peers.get_mut(&peer) {
                held.idle.insert(id);
            }
        }
    }

    /// The connection ended (a no-op if it was closed to make room).
    pub(crate) fn remove(&self, id: u64) {
        self.lock().remove(id);
    }
}

/// Marks its connection idle again when dropped.
pub(crate) struct BusyGuard {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.registry.idle(self.id);
    }
}

/// A connection's place in the registry, given up when its task ends
/// (declared before the connection, so dropped after the socket is closed).
pub(crate) struct Registered {
    pub(crate) registry: Arc<Registry>,
    pub(crate) id: u64,
    pub(crate) signals: Arc<Signals>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.remove(self.id);
        self.signals.closed.notify_one();
    }
}

/// A response body that keeps its connection busy until it is written
/// (hyper drops the body after its last frame).
pub(crate) struct TrackedBody {
    body: Full<Bytes>,
    _busy: BusyGuard,
}

impl TrackedBody {
    pub(crate) fn new(body: Full<Bytes>, busy: BusyGuard) -> Self {
        Self { body, _busy: busy }
    }
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Accept errors that concern one connection only (it went away before it
/// was accepted): no pause needed.
pub(crate) fn concerns_one_connection(err: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(err.kind(), ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted)
}

/// Out of descriptors (EMFILE, ENFILE) or socket memory (ENOBUFS, ENOMEM):
/// closing an idle connection gives back what the next accept needs.
pub(crate) fn out_of_descriptors(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// Waits (briefly) until a connection closed to make room has given its
/// descriptor back.
pub(crate) async fn until_closed(signals: &Signals) {
    let _ = tokio::time::timeout(VICTIM_CLOSE_WAIT, signals.closed.notified()).await;
}

/// Counts what pressure does and logs it at most once per
/// [`PRESSURE_LOG_INTERVAL`].
pub(crate) struct PressureLog {
    last_line: Option<Instant>,
    accept_errors: u64,
    last_error: String,
    idle_closed: u64,
    refused_per_peer: u64,
    refused_full: u64,
}

impl PressureLog {
    pub(crate) fn new() -> Self {
        Self {
            last_line: None,
            accept_errors: 0,
            last_error: String::new(),
            idle_closed: 0,
            refused_per_peer: 0,
            refused_full: 0,
        }
    }

    pub(crate) fn accept_error(&mut self, err: &std::io::Error) {
        self.accept_errors += 1;
        if self.last_error.is_empty() {
            self.last_error = err.to_string();
        }
        self.maybe_log();
    }

    pub(crate) fn idle_closed(&mut self, count: usize) {
        if count > 0 {
            self.idle_closed += count as u64;
            self.maybe_log();
        }
    }

    pub(crate) fn refused(&mut self, why: Refusal) {
        match why {
            Refusal::PerPeer => self.refused_per_peer += 1,
            Refusal::Full => self.refused_full += 1,
        }
        self.maybe_log();
    }

    fn pending(&self) -> bool {
        self.accept_errors + self.idle_closed + self.refused_per_peer + self.refused_full > 0
    }

    fn maybe_log(&mut self) {
        if self.last_line.is_none_or(|last| last.elapsed() >= PRESSURE_LOG_INTERVAL) {
            self.flush();
        }
    }

    /// Logs what is pending, if anything (called on a timer too, so a burst
    /// is reported even when nothing follows it).
    pub(crate) fn flush(&mut self) {
        if !self.pending() {
            return;
        }
        let since =
            self.last_line.map_or_else(String::new, |last| format!(" in the last {} s", last.elapsed().as_secs()));
        let error = if self.accept_errors > 0 { format!(" (the first: {})", self.last_error) } else { String::new() };
        tracing::warn!(
            target: crate::LOG_TARGET,
            "connection pressure{since}: {} accept errors{error}, {} idle connections closed to make room, \
             {} connections refused at the per-peer cap, {} refused with the server full of busy connections; \
             at most one such line per {} s",
            self.accept_errors,
            self.idle_closed,
            self.refused_per_peer,
            self.refused_full,
            PRESSURE_LOG_INTERVAL.as_secs(),
        );
        self.last_line = Some(Instant::now());
        self.accept_errors = 0;
        self.last_error.clear();
        self.idle_closed = 0;
        self.refused_per_peer = 0;
        self.refused_full = 0;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn issue_22_at_the_per_peer_cap_the_peers_oldest_idle_connection_makes_room_else_refused() {
        let registry = Arc::new(Registry::new(100, 2));
        let first = registry.admit(ip(1)).unwrap();
        let second = registry.admit(ip(1)).unwrap();
        let third = registry.admit(ip(1)).unwrap();
        assert_eq!(third.evicted.len(), 1);
        // The oldest was closed: its task is told.
        assert!(tokio_test_notified(&first.signals.close));
        let _busy_second = registry.busy(second.id);
        let _busy_third = registry.busy(third.id);
        assert_eq!(registry.admit(ip(1)).err(), Some(Refusal::PerPeer));
        // Another peer is not affected.
        assert!(registry.admit(ip(2)).is_ok());
    }

    /// Issue 22, attack: one IPv6 host holds a whole /64 (2^64 addresses),
    /// so a cap per address bounded nothing: each connection from an
    /// address of its own, it held every place the server had, busy
    /// (headers sent, the body stalled) until the body timeout, and again.
    /// The cap is per /64 for IPv6, per address for IPv4.
    #[test]
    fn issue_22_the_addresses_of_one_ipv6_64_share_one_per_peer_cap() {
        let registry = Arc::new(Registry::new(100, 2));
        let v6 = |prefix: u16, last: u16| IpAddr::from([0x2001, 0xdb8, 0, prefix, 0, 0, 0, last]);
        let first = registry.admit(v6(1, 1)).unwrap();
        let second = registry.admit(v6(1, 2)).unwrap();
        let (_first, _second) = (registry.busy(first.id), registry.busy(second.id));
        assert_eq!(registry.admit(v6(1, 3)).err(), Some(Refusal::PerPeer), "a third address of one /64");
        // Another /64, and IPv4 addresses, are peers of their own.
        assert!(registry.admit(v6(2, 1)).is_ok());
        assert!(registry.admit(ip(1)).is_ok() && registry.admit(ip(2)).is_ok() && registry.admit(ip(3)).is_ok());
    }

    #[test]
    fn issue_22_when_full_the_oldest_idle_connection_of_all_makes_room_else_refused() {
        let registry = Arc::new(Registry::new(2, 10));
        let first = registry.admit(ip(1)).unwrap();
        let busy = registry.admit(ip(2)).unwrap();
        let _busy = registry.busy(busy.id);
        let third = registry.admit(ip(3)).unwrap();
        assert_eq!(third.evicted.len(), 1);
        assert!(tokio_test_notified(&first.signals.close));
        let _third_busy = registry.busy(third.id);
        assert_eq!(registry.admit(ip(4)).err(), Some(Refusal::Full));
        drop(_third_busy);
        // Idle again after its response: it makes room.
        assert_eq!(registry.admit(ip(4)).unwrap().evicted.len(), 1);
    }

    #[test]
    fn issue_22_the_connection_ceiling_keeps_a_reserve_and_never_reaches_zero() {
        assert_eq!(OpenFiles { soft: 1024, hard: 4096 }.connection_ceiling(), 960);
        assert_eq!(OpenFiles { soft: 10, hard: 10 }.connection_ceiling(), 1);
    }

    /// Whether a permit is stored (notify_one was called with no waiter).
    fn tokio_test_notified(notify: &Notify) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        runtime.block_on(async { tokio::time::timeout(Duration::from_millis(1), notify.notified()).await.is_ok() })
    }
}
