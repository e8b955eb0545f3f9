//! `agentplane.toml`, the plane's configuration, and the settings a command
//! runs with: the configuration file, with the command-line flags over it.
//!
//! ```toml
//! store = "agentplane.redb"
//! keys = "agentplane.key"
//! quorum = 1
//! sweep_every = "5m"
//!
//! [[tenant]]
//! name = "shop"
//! origin = "agentplane.local/plane/shop"
//!
//! [[witness]]
//! url = "http://127.0.0.1:7380"
//! key = "witness.example/w1+abcd1234+B..."
//! ```

use std::path::{Path, PathBuf};

use journal_core::{Origin, TenantId};

use crate::args::Cli;
use crate::failure::Failure;
use crate::keys::PlaneKeys;

/// The file `agentplane` reads when `--config` is not given and it exists.
pub const DEFAULT_CONFIG: &str = "agentplane.toml";

pub use agentplane_cli::plane_config::{PlaneConfig, TenantEntry, WitnessEntry};

/// What a command runs with.
pub struct Settings {
    /// The store file.
    pub store: PathBuf,
    /// The key file.
    pub keys: PathBuf,
    /// The tenant the command is about.
    pub tenant: String,
    /// `--origin`, or the configured tenant's origin.
    pub origin: Option<String>,
    /// The configuration, when there is one.
    pub plane: Option<PlaneConfig>,
    /// Where the configuration was read from.
    pub config_path: Option<PathBuf>,
    /// Whether the store came from `--store` or a configuration (not the default).
    pub store_chosen: bool,
    /// The plane flags given on the command line that name this plane
    /// (`--config`, `--store`, `--keys`, `--origin`), as a command line
    /// spells them (a store URL's password as `***`): what a command this
    /// one prints must repeat to work on the same plane.
    named_by: Vec<String>,
    /// Whether the tenant is the one a command picks when `--tenant` is not
    /// given (the configuration's first, else `default`).
    default_tenant: bool,
}

/// Where `agentplane demo` makes a plane of its own.
pub const DEMO_DIR: &str = "agentplane-demo";

fn relative_to(config: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() || crate::backend::postgres_url(path).is_some() {
        return path.to_path_buf();
    }
    config.parent().map_or_else(|| path.to_path_buf(), |dir| dir.join(path))
}

impl Settings {
    /// The configuration file (`--config`, or `./agentplane.toml` when it
    /// exists) with the flags over it.
    pub fn resolve(cli: &Cli) -> Result<Self, Failure> {
        let config_path = match &cli.config {
            Some(path) => Some(path.clone()),
            None => Some(PathBuf::from(DEFAULT_CONFIG))
                .filter(|path| path.is_file())
                .or_else(|| cli.store.as_deref().and_then(config_beside_store)),
        };
        Self::from_parts(config_path, cli)
    }

    /// The plane's folder: the one its configuration is in, when it has
    /// one (where `agentplane audit` leaves its verdict for the console).
    pub fn folder(&self) -> Option<PathBuf> {
        let config = self.config_path.as_ref()?;
        Some(match config.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        })
    }

    /// Refuses a command run where there is no plane (no configuration, no
    /// store here, none chosen) when `agentplane demo` made its plane in
    /// `./agentplane-demo`: it says to go there, rather than that the
    /// origin or the store is missing.
    pub fn require_plane_here(&self) -> Result<(), Failure> {
        let demo_config = Path::new(DEMO_DIR).join(DEFAULT_CONFIG);
        if self.config_path.is_none()
            && !self.store_chosen
            && !self.store.exists()
            && !self.keys.exists()
            && demo_config.is_file()
        {
            return Err(Failure::Usage(format!(
                "no plane in this folder (no {DEFAULT_CONFIG}, no {DEFAULT_STORE}); `agentplane demo` made its plane \
                 in ./{DEMO_DIR}: run `cd {DEMO_DIR}` and run the command there (or pass --config {})",
                demo_config.display()
            )));
        }
        Ok(())
    }

    /// The settings of the plane configured at `config`, with the tenant and
    /// origin flags of `cli` (the store and key flags are the configuration's).
    pub fn of_config(config: PathBuf, cli: &Cli) -> Result<Self, Failure> {
        let flags = Cli { config: None, store: None, keys: None, ..cli.clone_flags() };
        Self::from_parts(Some(config), &flags)
    }

    fn from_parts(config_path: Option<PathBuf>, cli: &Cli) -> Result<Self, Failure> {
        let plane = config_path.as_deref().map(read_config).transpose()?;
        let (config_store, config_keys) = match (&plane, &config_path) {
            (Some(plane), Some(path)) => (Some(relative_to(path, &plane.store)), Some(relative_to(path, &plane.keys))),
            _ => (None, None),
        };
        let store_chosen = cli.store.is_some() || config_store.is_some();
        let store = cli.store.clone().or(config_store).unwrap_or_else(|| PathBuf::from(DEFAULT_STORE));
        crate::backend::refuse_key_value_string(&store)?;
        let keys = cli.keys.clone().or(config_keys).unwrap_or_else(|| PathBuf::from(DEFAULT_KEYS));
        let tenant = cli
            .tenant
            .clone()
            .or_else(|| plane.as_ref().and_then(|p| p.tenants.first()).map(|t| t.name.clone()))
            .unwrap_or_else(|| "default".to_owned());
        let configured_origin =
            plane.as_ref().and_then(|p| p.tenants.iter().find(|t| t.name == tenant)).map(|t| t.origin.clone());
        let origin = cli.origin.clone().or(configured_origin);
        let default_tenant = cli.tenant.is_none()
            || Some(&tenant) == plane.as_ref().and_then(|p| p.tenants.first()).map(|t| &t.name)
            || (plane.as_ref().is_none_or(|p| p.tenants.is_empty()) && tenant == "default");
        let mut named_by = Vec::new();
        for (flag, value) in [
            ("--config", cli.config.as_deref().map(|p| p.display().to_string())),
            ("--store", cli.store.as_deref().map(crate::backend::display)),
            ("--keys", cli.keys.as_deref().map(|p| p.display().to_string())),
            ("--origin", cli.origin.clone()),
        ] {
            if let Some(value) = value {
                named_by.push(format!("{flag} {}", shell_word(&value)));
            }
        }
        Ok(Self { store, keys, tenant, origin, plane, config_path, store_chosen, named_by, default_tenant })
    }

    /// The command line of `agentplane COMMAND` on this plane and tenant, as
    /// a command prints it for the operator to run next: the plane flags this
    /// one was given (`--config`, `--store`, `--keys`, `--origin`) and the
    /// tenant when it is not the one picked without `--tenant`, so that run
    /// as printed it works on what this one did (it named the configuration's
    /// first tenant, or said "no plane in this folder", when run elsewhere).
    pub fn command(&self, command: &str) -> String {
        let mut line = String::from("agentplane");
        for flag in &self.named_by {
            line.push(' ');
            line.push_str(flag);
        }
        if !self.default_tenant {
            line.push_str(&format!(" --tenant {}", shell_word(&self.tenant)));
        }
        line.push(' ');
        line.push_str(command);
        line
    }

    /// [`Settings::command`] with `--tenant` always named, after the
    /// command's name (`runs`' next page has always said it).
    pub fn command_for_tenant(&self, command: &str) -> String {
        let mut line = String::from("agentplane");
        for flag in &self.named_by {
            line.push(' ');
            line.push_str(flag);
        }
        line.push_str(&format!(" {command} --tenant {}", shell_word(&self.tenant)));
        line
    }

    /// The tenant the command is about.
    pub fn tenant_id(&self) -> Result<TenantId, Failure> {
        TenantId::new(&self.tenant).map_err(|err| Failure::Usage(format!("--tenant: {err}")))
    }

    /// The tenants this plane names: its configuration's, or `default` alone
    /// for a plane with no configuration (one log key, one tenant).
    pub fn configured_tenants(&self) -> Vec<String> {
        match self.plane.as_ref().filter(|plane| !plane.tenants.is_empty()) {
            Some(plane) => plane.tenants.iter().map(|t| t.name.clone()).collect(),
            None => vec!["default".to_owned()],
        }
    }

    /// Refuses a tenant the plane does not name, for every command that
    /// writes or signs (issue 22): a typo must never sign a second history.
    pub fn require_named_tenant(&self) -> Result<(), Failure> {
        agentplane_cli::plane_config::check_tenant_name(&self.tenant)
            .map_err(|err| Failure::Usage(format!("--tenant: {err}")))?;
        let named = self.configured_tenants();
        if named.contains(&self.tenant) {
            return self.require_configured_origin();
        }
        let whence = match &self.config_path {
            Some(path) => format!("the configuration {}", path.display()),
            None => "this plane (no agentplane.toml: its one tenant is `default`)".to_owned(),
        };
        Err(Failure::Usage(format!(
            "tenant {:?} is not named by {whence}; the configured tenants are: {}. \
             A command that writes or signs never guesses a tenant (add one to agentplane.toml with its own origin and log key)",
            self.tenant,
            named.join(", ")
        )))
    }

    /// Refuses an `--origin` that is not the configured origin of the
    /// tenant, for every command that writes or signs (R-PLANE-1): the key
    /// file holds every tenant's log key, so `--tenant shop --origin` of
    /// another tenant signed shop's log as that tenant's, with its key, and
    /// raised its high-water mark to a tree of another log.
    fn require_configured_origin(&self) -> Result<(), Failure> {
        let configured = self.plane.as_ref().and_then(|p| p.tenants.iter().find(|t| t.name == self.tenant));
        match (configured, &self.origin) {
            (Some(entry), Some(origin)) if entry.origin != *origin => Err(Failure::Usage(format!(
                "--origin {origin} is not the origin of tenant {} ({} in {}): a command that writes or signs \
                 signs a tenant's log only under its own origin (drop --origin, or pick the tenant whose origin \
                 it is with --tenant)",
                self.tenant,
                entry.origin,
                self.config_path.as_deref().map_or_else(|| DEFAULT_CONFIG.into(), |p| p.display().to_string())
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses, for every command that writes or signs, a key file of
    /// several logs when no configuration names the tenants (R-PLANE-1):
    /// the plane's one tenant is then `default`, and nothing says which of
    /// the keys is its own, so an `--origin` of another tenant signed
    /// `default`'s log with that tenant's key and raised its mark.
    pub fn require_the_tenant_s_log_key(&self, keys: &PlaneKeys) -> Result<(), Failure> {
        if self.plane.as_ref().is_some_and(|plane| !plane.tenants.is_empty()) || keys.single_origin().is_some() {
            return Ok(());
        }
        let origins = keys.origins();
        Err(Failure::Usage(format!(
            "the key file {} holds the log keys of {} origins ({}), and no {DEFAULT_CONFIG} says which tenant each \
             signs for: a command that writes or signs reads the tenants and their origins from the plane's \
             configuration (run it in the plane's folder, or pass --config FILE); it never picks a log key by \
             --origin alone",
            self.keys.display(),
            origins.len(),
            origins.iter().map(Origin::as_str).collect::<Vec<_>>().join(", ")
        )))
    }

    /// The tenant's origin: `--origin`, the configuration's, or, where no
    /// configuration names the tenants, the key file's single log key. A
    /// tenant the configuration does not name is refused, never read under
    /// the one origin of the key file, another tenant's (a typo's `verify`
    /// held that tenant's signed trees to an empty log: a false deletion).
    pub fn origin(&self, keys: Option<&PlaneKeys>) -> Result<Origin, Failure> {
        if let Some(origin) = &self.origin {
            return Origin::new(origin).map_err(|err| Failure::Usage(format!("origin {origin:?}: {err}")));
        }
        if let (Some(path), Some(plane)) =
            (&self.config_path, self.plane.as_ref().filter(|plane| !plane.tenants.is_empty()))
        {
            let named: Vec<&str> = plane.tenants.iter().map(|t| t.name.as_str()).collect();
            return Err(Failure::Usage(format!(
                "tenant {:?} is not named by the configuration {}; its tenants are: {}. Give one of them to \
                 --tenant, or the tenant's log origin with --origin to read it anyway",
                self.tenant,
                path.display(),
                named.join(", ")
            )));
        }
        match keys.and_then(PlaneKeys::single_origin) {
            Some(origin) => Ok(origin.clone()),
            None => Err(Failure::Usage(format!(
                "no origin for tenant {}: pass --origin ORIGIN, or list the tenant in agentplane.toml \
                 (an auditor: `agentplane audit`, which needs only public keys; `agentplane keys` prints them on the plane)",
                self.tenant
            ))),
        }
    }

    /// Every tenant with its origin: the configured ones, or the one this
    /// command is about.
    pub fn tenants(&self, keys: Option<&PlaneKeys>) -> Result<Vec<(TenantId, Origin)>, Failure> {
        match self.plane.as_ref().filter(|plane| !plane.tenants.is_empty()) {
            Some(plane) => plane
                .tenants
                .iter()
                .map(|t| {
                    let id =
                        TenantId::new(&t.name).map_err(|err| Failure::Usage(format!("tenant {}: {err}", t.name)))?;
                    let origin =
                        Origin::new(&t.origin).map_err(|err| Failure::Usage(format!("tenant {}: {err}", t.name)))?;
                    Ok((id, origin))
                })
                .collect(),
            None => Ok(vec![(self.tenant_id()?, self.origin(keys)?)]),
        }
    }
}

/// `text` as one word of a shell command line: as it is when it holds only
/// characters no shell treats specially, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+=,".contains(&b));
    if plain { text.to_owned() } else { format!("'{}'", text.replace('\'', "'\\''")) }
}

/// The configuration of the plane whose store file `store` is:
/// `agentplane.toml` beside it, when that configuration names this file.
fn config_beside_store(store: &Path) -> Option<PathBuf> {
    if crate::backend::postgres_url(store).is_some() || !store.is_file() {
        return None;
    }
    let dir = store.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let config = dir.join(DEFAULT_CONFIG);
    if !config.is_file() {
        return None;
    }
    let plane = read_config(&config).ok()?;
    let configured = std::fs::canonicalize(relative_to(&config, &plane.store)).ok()?;
    (std::fs::canonicalize(store).ok()? == configured).then_some(config)
}

/// The largest configuration read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn read_config(path: &Path) -> Result<PlaneConfig, Failure> {
    let text = crate::context::read_at_most(path, MAX_CONFIG_BYTES)
        .and_then(|bytes| {
            String::from_utf8(bytes).map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))
        })
        .map_err(|err| Failure::Usage(format!("reading the configuration {}: {err}", path.display())))?;
    let config = agentplane_cli::plane_config::parse(&text).map_err(|err| {
        Failure::Usage(format!("{}: {}", path.display(), agentplane_cli::plane_config::describe_error(&text, &err)))
    })?;
    agentplane_cli::plane_config::check(&config).map_err(|err| Failure::Usage(format!("{}: {err}", path.display())))?;
    Ok(config)
}

/// Writes a new configuration, refusing to overwrite one; whole or not at
/// all (a disk that fills up leaves no half-written file).
pub fn write_config(path: &Path, config: &PlaneConfig) -> Result<(), Failure> {
    let text = toml::to_string_pretty(config).map_err(|err| Failure::Io(err.to_string()))?;
    let mut text = format!("# agentplane plane configuration\n{}\n", text.trim_end());
    if config.witnesses.is_empty() {
        text.push_str(
            "\n# A witness the sweep submits to (repeat the table for more; set quorum above):\n\
             # [[witness]]\n# url = \"http://127.0.0.1:7380\"\n# key = \"witness.example/w1+abcd1234+...\"\n",
        );
    }
    // A store URL with a password in it makes the file a secret, readable
    // by its owner alone, like the key file.
    let store = config.store.to_string_lossy();
    let holds_a_password = store_pg::redact(&store) != store;
    crate::output::write_new(path, text.as_bytes(), holds_a_password).map_err(|err| {
        Failure::Io(format!("creating {}: {err} (an existing configuration is never overwritten)", path.display()))
    })
}

/// Parses an interval such as `90s`, `5m` or `1h`.
pub fn interval(text: &str) -> Result<std::time::Duration, Failure> {
    agentplane_cli::plane_config::interval(text).map_err(Failure::Usage)
}

/// Where a new plane keeps its store and key file, as written in its
/// configuration (a relative path is relative to the plane's folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneFiles {
    /// The store: a redb file or a PostgreSQL URL.
    pub store: PathBuf,
    /// The key file.
    pub keys: PathBuf,
}

impl Default for PlaneFiles {
    fn default() -> Self {
        Self { store: PathBuf::from(DEFAULT_STORE), keys: PathBuf::from(DEFAULT_KEYS) }
    }
}

/// The store of a plane with no configuration saying otherwise.
pub const DEFAULT_STORE: &str = "agentplane.redb";
/// The key file of a plane with no configuration saying otherwise.
pub const DEFAULT_KEYS: &str = "agentplane.key";

/// The refusal of `init` on a store that holds runs (R-SIG-4).
fn holds_runs(store: &Path) -> Failure {
    Failure::Usage(format!(
        "{} already holds runs: a plane never mints keys for a history it did not sign. {}",
        crate::backend::display(store),
        crate::keys::KEY_LOST_FOR_GOOD
    ))
}

/// Makes a plane in `dir`: `agentplane.toml` and the key file (`files`)
/// with a fresh log key per tenant (origin `BASE/NAME`) and a record key.
/// Refuses to overwrite either file, and a store that holds runs (R-SIG-4:
/// a plane never mints keys for a history it did not sign).
pub fn init_plane(
    dir: &Path,
    files: &PlaneFiles,
    tenants: &[String],
    origin_base: &str,
    witnesses: Vec<WitnessEntry>,
    quorum: usize,
    sweep_every: &str,
) -> Result<(PlaneConfig, PlaneKeys), Failure> {
    interval(sweep_every)?;
    let config_path = dir.join(DEFAULT_CONFIG);
    let keys_path = relative_to(&config_path, &files.keys);
    crate::backend::refuse_key_value_string(&files.store)?;
    let store_path = relative_to(&config_path, &files.store);
    let high_water = crate::high_water::path_beside(&keys_path);
    if !config_path.exists()
        && keys_path.exists()
        && crate::high_water::FileHighWater::says_nothing_signed(&high_water).unwrap_or(false)
    {
        // What an `init` stopped (a crash, a kill) after the keys and before
        // the configuration leaves, or what `keygen` makes: keys that signed
        // no checkpoint, no plane. Their record key signed the runs of a
        // store that holds some (a runtime admitted them): never said to be
        // unused.
        if crate::backend::holds_runs(&store_path)? {
            return Err(holds_runs(&store_path));
        }
        return Err(Failure::Usage(format!(
            "{keys} exists without {config}, and its high-water mark {mark} says it never signed anything: an \
             `init` stopped before it wrote its configuration, or keys made by `keygen`. To make the plane, \
             delete {keys} and {mark}, then run `init` again (or write {config} by hand to keep these keys)",
            keys = keys_path.display(),
            config = config_path.display(),
            mark = high_water.display()
        )));
    }
    for existing in [&config_path, &keys_path] {
        if existing.exists() {
            return Err(Failure::Usage(format!("{} exists: a plane is already made here", existing.display())));
        }
    }
    if crate::backend::holds_runs(&store_path)? {
        return Err(holds_runs(&store_path));
    }
    let names: Vec<String> = if tenants.is_empty() { vec!["default".to_owned()] } else { tenants.to_vec() };
    let mut entries = Vec::new();
    let mut origins: Vec<Origin> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        agentplane_cli::plane_config::check_tenant_name(name).map_err(|err| Failure::Usage(err.to_string()))?;
        TenantId::new(name).map_err(|err| Failure::Usage(format!("tenant {name:?}: {err}")))?;
        if names.iter().take(i).any(|before| before == name) {
            return Err(Failure::Usage(format!("--tenant-name {name} is given twice")));
        }
        let origin = Origin::new(&format!("{}/{name}", origin_base.trim_end_matches('/')))
            .map_err(|err| Failure::Usage(format!("origin of tenant {name}: {err}")))?;
        if origins.contains(&origin) {
            return Err(Failure::Usage(format!(
                "two tenants would have the origin {origin}: every tenant needs its own"
            )));
        }
        entries.push(TenantEntry { name: name.clone(), origin: origin.to_string() });
        origins.push(origin);
    }
    let config = PlaneConfig {
        store: files.store.clone(),
        keys: files.keys.clone(),
        quorum,
        sweep_every: Some(sweep_every.to_owned()),
        tenants: entries,
        witnesses,
    };
    agentplane_cli::plane_config::check(&config).map_err(|err| Failure::Usage(err.to_string()))?;
    // A mark saying nothing was signed, alone: an `init` killed before its
    // key file was made. `PlaneKeys::write` replaces it.
    crate::keys::mark_in_the_way(&keys_path)
        .map_err(|_| Failure::Usage(format!("{} exists: a plane is already made here", high_water.display())))?;
    let keys = PlaneKeys::generate(&origins)?;
    keys.write(&keys_path)?;
    if let Err(err) = write_config(&config_path, &config) {
        // Nothing was signed with the keys just made: they go again, so that
        // the next `init` starts from nothing rather than refusing them.
        let _ = std::fs::remove_file(&high_water);
        let _ = std::fs::remove_file(&keys_path);
        return Err(err);
    }
    Ok((config, keys))
}
