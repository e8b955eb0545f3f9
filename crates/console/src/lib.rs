#![doc = include_str!("../README.md")]

pub mod last_audit;
mod pages;
mod timeline;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use journal_core::{Origin, Store, TenantId, Upcasters, Verifier};
use sha2::{Digest, Sha256};

/// How long a client has to send a request's line and headers (each
/// request of a kept-alive connection too), else its connection is closed:
/// a peer that connects and stalls holds no descriptor for longer.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long an answer may wait for the client to take any of it, else its
/// connection is closed: a peer that asks and never reads holds no
/// connection for longer (hyper waits on the socket with no timer).
pub const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most connections the console serves at once, by default: with the
/// header timeout, a peer opening connections and stalling holds at most
/// this many descriptors, and only for that long.
pub const MAX_CONNECTIONS: usize = 256;

/// The most pages read and drawn at once; requests past it wait their
/// turn. A page reads its run (a diff page its two runs) to
/// [`ConsoleOptions::max_run_bytes`], so at most twice this many runs are
/// held at once, whatever the connections (a blocking thread each had made
/// it one a request in flight, up to [`MAX_CONNECTIONS`]).
pub const PAGES_AT_ONCE: usize = 4;

/// The most a page holds of one run's records, by default
/// ([`ConsoleOptions::max_run_bytes`], counted with
/// `journal_core::StoredRecord::held_bytes`): the store stops reading a run
/// past it (`Store::read_run_within`), and the page says the run is too
/// large to show here (413) and what to use instead. A run page then holds
/// at most about twice this (its rows and their decoded records), a diff
/// page twice that, so [`PAGES_AT_ONCE`] pages hold at most about 1 GiB
/// however large the store's runs were made behind the plane.
pub const MAX_RUN_BYTES: usize = 64 << 20;

/// The address the console listens on unless told otherwise: localhost only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7390";

/// The Content-Security-Policy every page is sent with: nothing but this
/// console's own stylesheet and inline SVG; no script at all.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The name of the cookie that carries the token after a `?token=` visit.
const TOKEN_COOKIE: &str = "agentplane_console_token";

/// A tenant's log, as the plane's configuration names it.
#[derive(Debug, Clone)]
pub struct TenantLog {
    /// The tenant.
    pub tenant: TenantId,
    /// Its log's origin.
    pub origin: Origin,
}

/// What the console shows and what it trusts.
pub struct PlaneView {
    /// The plane's store (opened read-only by the caller where it can be).
    pub store: Arc<dyn Store>,
    /// The tenants, in the configuration's order.
    pub tenants: Vec<TenantLog>,
    /// The record keys; without them, signatures are shown as not checked.
    pub record_verifier: Option<Arc<dyn Verifier>>,
    /// The log keys checkpoints are verified with.
    pub log_keys: Vec<witness::VerifierKey>,
    /// The witnesses whose cosignatures count.
    pub witnesses: Vec<witness::TrustedWitness>,
    /// The upcasters records are read with.
    pub upcasters: Upcasters,
    /// The plane's folder, where `agentplane audit` leaves its last verdict
    /// ([`last_audit`]); `None`: a plane with no folder (a bare store).
    pub folder: Option<std::path::PathBuf>,
}

/// How the console listens.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// The address to bind.
    pub listen: SocketAddr,
    /// The token every request must carry (`Authorization: Bearer`, or the
    /// cookie a `?token=` visit sets); required off localhost.
    pub token: Option<String>,
    /// How long a client has to send a request's line and headers
    /// ([`HEADER_TIMEOUT`] by default).
    pub header_timeout: std::time::Duration,
    /// How long an answer may wait for the client to take any of it
    /// ([`WRITE_TIMEOUT`] by default).
    pub write_timeout: std::time::Duration,
    /// The most connections served at once ([`MAX_CONNECTIONS`] by
    /// default, 0 taken as 1); one past it is closed at once.
    pub max_connections: usize,
    /// The most a page holds of one run's records ([`MAX_RUN_BYTES`] by
    /// default): a run past it is too large to show here (413). The runs
    /// page reads each of its 50 rows' runs to a fiftieth of it, so a page
    /// of them reads no more than one run page; an export reads its run to
    /// twice it (an open run's export is cut at its covered head).
    pub max_run_bytes: usize,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 7390)),
            token: None,
            header_timeout: HEADER_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_run_bytes: MAX_RUN_BYTES,
        }
    }
}

/// Why the console did not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// Binding off localhost without a token would show the plane to anyone
    /// who can reach the address.
    #[error(
        "refusing to listen on {listen} without a token: give one to bind off localhost (`agentplane console \
         --token-file FILE`, a file holding at least 16 characters; `ConsoleOptions::token` from Rust)"
    )]
    TokenRequired {
        /// The address asked for.
        listen: SocketAddr,
    },
    /// A token too short to resist guessing.
    #[error("the token is {length} characters; use at least 16 (for example 32 random hex digits)")]
    WeakToken {
        /// Its length.
        length: usize,
    },
    /// The address could not be bound.
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        /// The address.
        listen: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The plane names no tenant.
    #[error("the plane names no tenant to show")]
    NoTenant,
}

/// The shared state of the handlers.
pub(crate) struct App {
    pub(crate) plane: PlaneView,
    token_digest: Option<[u8; 32]>,
    /// A permit for each page read and drawn at once ([`PAGES_AT_ONCE`]),
    /// held by its blocking thread: a client that goes away frees none
    /// before its page is done.
    pub(crate) pages: Arc<tokio::sync::Semaphore>,
    /// The most a page holds of one run's records ([`ConsoleOptions::max_run_bytes`]).
    pub(crate) max_run_bytes: usize,
}

/// A running console.
pub struct Console {
    url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Console {
    /// Binds and serves in a thread of its own.
    pub fn start(plane: PlaneView, options: ConsoleOptions) -> Result<Self, ConsoleError> {
        if plane.tenants.is_empty() {
            return Err(ConsoleError::NoTenant);
        }
        match &options.token {
            None if !options.listen.ip().is_loopback() => {
                return Err(ConsoleError::TokenRequired { listen: options.listen });
            }
            Some(token) if token.chars().count() < 16 => {
                return Err(ConsoleError::WeakToken { length: token.chars().count() });
            }
            _ => {}
        }
        let listener = std::net::TcpListener::bind(options.listen)
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .map_err(|source| ConsoleError::Bind { listen: options.listen, source })?;
        let local = listener.local_addr().map_err(|source| ConsoleError::Bind { listen: options.listen, source })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|source| ConsoleError::Bind { listen: options.listen, source })?;
        let app = Arc::new(App {
            plane,
            token_digest: options.token.as_deref().map(digest),
            pages: Arc::new(tokio::sync::Semaphore::new(PAGES_AT_ONCE)),
            max_run_bytes: options.max_run_bytes,
        });
        let router = router(app);
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = runtime
            .block_on(async { tokio::net::TcpListener::from_std(listener) })
            .map_err(|source| ConsoleError::Bind { listen: options.listen, source })?;
        let thread = std::thread::spawn(move || runtime.block_on(serve(listener, router, &options, stopped)));
        Ok(Self { url: format!("http://{local}"), shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// Where it listens (`http://host:port`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Blocks until the server stops (for a command that serves until killed).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves each connection on a task of its own until told to stop, at most
/// `max_connections` at once, with `header_timeout` on every request header (`axum::serve` sets no timer,
/// so a connection that never finished its header was held forever) and
/// `write_timeout` on every answer ([`WriteBound`]).
async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    options: &ConsoleOptions,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let (header_timeout, write_timeout) = (options.header_timeout, options.write_timeout);
    let mut connections = tokio::task::JoinSet::new();
    let mut turned_away: u64 = 0;
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of descriptors, say: pause rather than spin.
                    tracing::warn!(target: "agentplane.console", "accepting a connection: {err}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        if connections.len() >= options.max_connections.max(1) {
            // Closed at once: the cap bounds the descriptors held.
            drop(stream);
            turned_away += 1;
            if turned_away.is_power_of_two() {
                tracing::warn!(
                    target: "agentplane.console",
                    "{turned_away} connections closed at once so far: {} are served at the most",
                    options.max_connections
                );
            }
            continue;
        }
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        connections.spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(WriteBound::new(stream, write_timeout)), service);
            if let Err(err) = served.await {
                tracing::debug!(target: "agentplane.console", "connection: {err}");
            }
        });
    }
}

/// A connection's stream whose write fails (`TimedOut`) once it has waited
/// `limit` for the peer to take any byte: a peer that asks and never reads
/// (pipelined requests whose answers fill the sockets' buffers) loses its
/// connection, where hyper would wait on it forever. A slow reader that
/// keeps taking bytes is served.
struct WriteBound {
    stream: tokio::net::TcpStream,
    limit: std::time::Duration,
    /// Set while a write waits; cleared by any progress.
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl WriteBound {
    fn new(stream: tokio::net::TcpStream, limit: std::time::Duration) -> Self {
        Self { stream, limit, stalled: None }
    }

    /// `polled`, or `TimedOut` once writes have waited past the limit.
    fn bounded<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        polled: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let timer = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => std::task::Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the peer took none of the answer for {limit:?}"),
            ))),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl tokio::io::AsyncRead for WriteBound {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for WriteBound {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_write(cx, buf);
        self.bounded(cx, polled)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.bounded(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_flush(cx);
        self.bounded(cx, polled)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let polled = std::pin::Pin::new(&mut self.stream).poll_shutdown(cx);
        self.bounded(cx, polled)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(pages::plane))
        .route("/runs", get(pages::runs))
        .route("/run", get(pages::run_by_query))
        .route("/run/export", get(pages::export_by_query))
        .route("/run/{tenant}/{run}", get(pages::run))
        .route("/run/{tenant}/{run}/export", get(pages::export))
        .route("/diff", get(pages::diff))
        .route("/log", get(pages::log))
        .route("/static/console.css", get(stylesheet))
        .route("/static/favicon.svg", get(favicon))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), guard))
        .with_state(app)
}

async fn stylesheet() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../static/console.css")).into_response()
}

async fn favicon() -> Response {
    ([(header::CONTENT_TYPE, "image/svg+xml")], include_str!("../static/favicon.svg")).into_response()
}

async fn not_found() -> Response {
    pages::error_page(StatusCode::NOT_FOUND, "no such page")
}

/// The token, when one is set, on every request; the security headers on
/// every response.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if app.token_digest.is_none() && !addressed_to_loopback(&request) {
        // With no token the console listens on localhost only; a request
        // naming another host is a page of another site whose name was
        // rebound to this address (DNS rebinding): it reads nothing.
        let mut response = pages::error_page(
            StatusCode::MISDIRECTED_REQUEST,
            "this console answers requests for localhost only (open it as http://127.0.0.1:PORT or http://localhost:PORT)",
        );
        secure(response.headers_mut());
        return response;
    }
    if let Some(expected) = app.token_digest {
        match presented_token(request.headers(), request.uri().query()) {
            Some((token, from_query)) if digest(&token) == expected => {
                if from_query {
                    // The cookie carries the token from here on, and the
                    // browser is sent to the same page without it, so the
                    // token stays out of the address bar and its history.
                    let mut response = StatusCode::SEE_OTHER.into_response();
                    let cookie = format!("{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
                    if let (Ok(cookie), Ok(location)) =
                        (HeaderValue::from_str(&cookie), HeaderValue::from_str(&without_token(request.uri())))
                    {
                        response.headers_mut().insert(header::SET_COOKIE, cookie);
                        response.headers_mut().insert(header::LOCATION, location);
                    }
                    secure(response.headers_mut());
                    return response;
                }
            }
            _ => {
                let mut response = pages::error_page(
                    StatusCode::UNAUTHORIZED,
                    "this console needs its token: open it with ?token=... once, or send Authorization: Bearer",
                );
                secure(response.headers_mut());
                return response;
            }
        }
    }
    let mut response = next.run(request).await;
    secure(response.headers_mut());
    response
}

/// The request's path and query without its `token=` parameter: where a
/// visit with `?token=` is sent on. Always a path of this console: a path
/// starting `//` would name another host, and so would `/\`, which a
/// browser reads as `//`.
fn without_token(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    let another_host = path.starts_with("//") || path.starts_with("/\\");
    let path = if path.starts_with('/') && !another_host { path } else { "/" };
    let kept: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with("token="))
        .collect();
    if kept.is_empty() { path.to_owned() } else { format!("{path}?{}", kept.join("&")) }
}

/// Whether the request names a loopback host (`localhost`, `127.0.0.1`,
/// `[::1]`, with or without a port) in its `Host` header.
fn addressed_to_loopback(request: &Request) -> bool {
    let Some(host) = request.headers().get(header::HOST).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or("", |(inside, _)| inside),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The token a request carries: the bearer header, the cookie, or `?token=`
/// (then `true`).
fn presented_token(headers: &HeaderMap, query: Option<&str>) -> Option<(String, bool)> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let cookie = headers.get_all(header::COOKIE).iter().filter_map(|value| value.to_str().ok()).find_map(|cookies| {
        cookies
            .split(';')
            .map(str::trim)
            .find_map(|pair| pair.strip_prefix(&format!("{TOKEN_COOKIE}=")).map(str::to_owned))
    });
    let query = query.and_then(|query| {
        query.split('&').find_map(|pair| pair.strip_prefix("token=")).map(|token| (token.to_owned(), true))
    });
    bearer.or(cookie).map(|token| (token, false)).or(query)
}

fn secure(headers: &mut HeaderMap) {
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}
