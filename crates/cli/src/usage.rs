//! Which of the plane's flags (`--config`, `--store`, `--keys`, `--tenant`,
//! `--origin`) each command takes, and an example for each command's help.
//!
//! A plane flag may be given before the command (`agentplane --tenant shop
//! demo`) or after it (`agentplane demo --tenant shop`); a command's help
//! lists only the ones it uses, and one given before a command that does
//! not use it is a usage error (exit 2), never silently ignored.

use std::path::PathBuf;

use clap::{Arg, ArgMatches, CommandFactory as _, FromArgMatches as _};

use crate::args::{Cli, Command};
use crate::failure::Failure;

/// A flag that says which plane, store, keys, tenant or log a command works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneFlag {
    Config,
    Store,
    Keys,
    Tenant,
    Origin,
}

impl PlaneFlag {
    /// The long name, without the dashes.
    pub fn long(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Store => "store",
            Self::Keys => "keys",
            Self::Tenant => "tenant",
            Self::Origin => "origin",
        }
    }

    /// The id of the copy a command's own help lists (distinct from the
    /// top-level flag's, so clap keeps both).
    fn id(self) -> &'static str {
        match self {
            Self::Config => "plane-config",
            Self::Store => "plane-store",
            Self::Keys => "plane-keys",
            Self::Tenant => "plane-tenant",
            Self::Origin => "plane-origin",
        }
    }

    fn value_name(self) -> &'static str {
        match self {
            Self::Config => "PATH",
            Self::Store => "PATH_OR_URL",
            Self::Keys => "PATH",
            Self::Tenant => "NAME",
            Self::Origin => "ORIGIN",
        }
    }

    /// The help of the flag in `command`'s help.
    fn help(self, command: &str) -> &'static str {
        match (self, command) {
            (Self::Origin, "keygen") => {
                "The origin of the log key to make, also its key name (default: the configuration's tenant, else \
                 agentplane.local/plane/default, the origin `init` gives the tenant `default`)"
            }
            (Self::Tenant, "sweep") => {
                "Sweep this tenant alone (default: every tenant of the configuration, else `default`)"
            }
            (Self::Origin, "audit") => {
                "The tenant log's origin (default: the configuration's, else the log key's name; one that is not the \
                 log key's name is refused)"
            }
            (Self::Config, _) => {
                "The plane's configuration (default: ./agentplane.toml when it exists); the flags below override it"
            }
            (Self::Store, _) => {
                "The store: a redb file, or a PostgreSQL URL (postgres://user@host/db) (default: the configuration's, \
                 else ./agentplane.redb)"
            }
            (Self::Keys, _) => "The plane's key file (default: the configuration's, else ./agentplane.key)",
            (Self::Tenant, _) => "The tenant (default: the configuration's first, else `default`)",
            (Self::Origin, _) => {
                "The tenant log's origin, for reading without the key file (default: the configuration's or the key \
                 file's)"
            }
        }
    }

    fn arg(self, command: &str) -> Arg {
        let arg = Arg::new(self.id()).long(self.long()).value_name(self.value_name()).help(self.help(command));
        match self {
            Self::Config | Self::Store | Self::Keys => arg.value_parser(clap::value_parser!(PathBuf)),
            Self::Tenant | Self::Origin => arg,
        }
    }
}

use PlaneFlag::{Config, Keys, Origin, Store, Tenant};

/// A command: the plane flags it uses, and an example for its help.
pub struct Usage {
    pub command: &'static str,
    pub flags: &'static [PlaneFlag],
    pub examples: &'static [&'static str],
}

/// Every command (a test holds this list to the commands clap knows).
pub const USAGES: &[Usage] = &[
    Usage {
        command: "init",
        flags: &[Store, Keys],
        examples: &[
            "agentplane init --tenant-name shop --tenant-name search --witness \"http://127.0.0.1:7380=$(cat witness.vkey)\"",
        ],
    },
    Usage {
        command: "demo",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane demo", "agentplane demo --tenant shop"],
    },
    Usage {
        command: "keygen",
        flags: &[Config, Store, Keys, Origin],
        examples: &["agentplane keygen --origin example.com/plane/default > log.vkey"],
    },
    Usage {
        command: "keys",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane keys --tenant shop", "agentplane keys --tenant shop --print log-key > shop.vkey"],
    },
    Usage {
        command: "sweep",
        flags: &[Config, Store, Keys, Tenant],
        examples: &["agentplane sweep", "agentplane sweep --every 5m --json >> sweep.jsonl"],
    },
    Usage {
        command: "runs",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &[
            "agentplane runs --outcome failed",
            "agentplane runs --store postgres://plane@db/agentplane --tenant shop --json",
        ],
    },
    Usage {
        command: "show",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane show \"$(agentplane runs --ids | head -n 1)\""],
    },
    Usage {
        command: "verify",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane verify --require-signature --assert-complete"],
    },
    Usage {
        command: "audit",
        flags: &[Config, Store, Tenant, Origin],
        examples: &[
            "agentplane audit --store agentplane.redb --tenant shop --log-key \"$(cat shop.vkey)\" --record-key \"$(cat record.key)\" --require-signature --checkpoint saved.note",
        ],
    },
    Usage {
        command: "checkpoint",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane checkpoint --tenant shop > saved.note", "agentplane checkpoint --cosigned --json"],
    },
    Usage {
        command: "prove",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane prove RUN --json", "agentplane prove --consistency 5"],
    },
    Usage {
        command: "cost",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane cost --since 2026-11-01 --until 2026-12-01"],
    },
    Usage {
        command: "diff",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane diff RUN run.export"],
    },
    Usage { command: "fork", flags: &[Config, Store, Keys, Tenant, Origin], examples: &["agentplane fork RUN --at 6"] },
    Usage {
        command: "resume",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane resume RUN --raise tokens=1000", "agentplane resume \"$(agentplane fork RUN --at 6)\""],
    },
    Usage {
        command: "export",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane export RUN -o run.export"],
    },
    Usage {
        command: "verify-export",
        flags: &[],
        examples: &[
            "agentplane verify-export run.export --log-key \"$(cat shop.vkey)\" --record-key \"$(cat record.key)\" --require-signature --witness-key \"$(cat witness.vkey)\" --quorum 1",
        ],
    },
    Usage {
        command: "verify-proof",
        flags: &[],
        examples: &[
            "agentplane prove RUN --json > proof.json && agentplane verify-proof proof.json --checkpoint saved.note --log-key \"$(cat shop.vkey)\"",
            "agentplane verify-proof proof.json --root 5f3c...e1 --size 12",
        ],
    },
    Usage { command: "repair", flags: &[Config, Store], examples: &["agentplane repair --store agentplane.redb"] },
    Usage { command: "compact", flags: &[Config, Store], examples: &["agentplane compact --store agentplane.redb"] },
    Usage {
        command: "migrate",
        flags: &[Config, Store],
        examples: &["agentplane migrate --store postgres://plane@db/agentplane"],
    },
    Usage {
        command: "console",
        flags: &[Config, Store, Keys, Tenant, Origin],
        examples: &["agentplane console", "agentplane console --listen 0.0.0.0:7390 --token-file console.token"],
    },
];

/// The top-level help's examples.
const TOP_EXAMPLES: &str = "Examples:\n  agentplane demo\n  agentplane init --tenant-name shop && agentplane demo --tenant shop\n  agentplane runs --store postgres://plane@db/agentplane --tenant shop --json\n  agentplane <COMMAND> --help";

/// The command line as clap reads it: the derived one, with each command's
/// plane flags and examples added.
pub fn command() -> clap::Command {
    let mut cli = Cli::command().after_help(TOP_EXAMPLES);
    for usage in USAGES {
        if cli.find_subcommand(usage.command).is_none() {
            continue;
        }
        cli = cli.mut_subcommand(usage.command, |mut sub| {
            for flag in usage.flags {
                // A command with a flag of its own of that name keeps its own.
                if !sub.get_arguments().any(|arg| arg.get_long() == Some(flag.long())) {
                    sub = sub.arg(flag.arg(usage.command));
                }
            }
            let examples: Vec<String> = usage.examples.iter().map(|example| format!("  {example}")).collect();
            sub.after_help(format!("Example{}:\n{}", if examples.len() > 1 { "s" } else { "" }, examples.join("\n")))
        });
    }
    cli
}

/// Reads the command line; clap's own errors (and `--help`) end the process
/// as clap does (exit 2, or 0 for help).
pub fn parse() -> Result<Cli, Failure> {
    let matches = match command().try_get_matches() {
        Ok(matches) => matches,
        Err(err) if asked_for_json() && err.use_stderr() => {
            // A script asked for JSON reads the failure object (`main`
            // prints it, and the message on stderr).
            return Err(Failure::Usage(parser_message(&err.render().to_string())));
        }
        // Help and version, and usage errors in text mode, as the parser says.
        Err(err) => err.exit(),
    };
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let (name, sub) = matches.subcommand().ok_or_else(|| Failure::Usage("no command given".into()))?;
    merge(&mut cli, name, sub)?;
    Ok(cli)
}

/// Whether the command line asks for JSON (`--json` before any `--`):
/// known before it parses, so that a line that does not parse, or names a
/// plane flag its command does not take, still answers with JSON.
pub fn asked_for_json() -> bool {
    std::env::args_os().skip(1).take_while(|arg| arg != "--").any(|arg| arg == "--json")
}

/// The parser's message without its `error: ` prefix (`main` says
/// `agentplane: `), its usage and tip lines kept.
fn parser_message(rendered: &str) -> String {
    rendered.strip_prefix("error: ").unwrap_or(rendered).trim_end().to_owned()
}

/// The plane flags of `name`, given before or after it, into `cli`.
fn merge(cli: &mut Cli, name: &str, sub: &ArgMatches) -> Result<(), Failure> {
    let takes = USAGES.iter().find(|usage| usage.command == name).map_or(&[][..], |usage| usage.flags);
    let path = |flag: PlaneFlag| sub.try_get_one::<PathBuf>(flag.id()).ok().flatten().cloned();
    let text = |flag: PlaneFlag| sub.try_get_one::<String>(flag.id()).ok().flatten().cloned();
    merge_one(&mut cli.config, path(Config), Config, name, takes)?;
    merge_one(&mut cli.store, path(Store), Store, name, takes)?;
    merge_one(&mut cli.keys, path(Keys), Keys, name, takes)?;
    merge_one(&mut cli.tenant, text(Tenant), Tenant, name, takes)?;
    merge_one(&mut cli.origin, text(Origin), Origin, name, takes)?;
    Ok(())
}

fn merge_one<T: PartialEq>(
    before: &mut Option<T>,
    after: Option<T>,
    flag: PlaneFlag,
    command: &str,
    takes: &[PlaneFlag],
) -> Result<(), Failure> {
    if before.is_some() && !takes.contains(&flag) {
        let taken: Vec<String> = takes.iter().map(|flag| format!("--{}", flag.long())).collect();
        let taken = if taken.is_empty() {
            "it takes none of the plane flags".to_owned()
        } else {
            format!("of the plane flags it takes {}", taken.join(", "))
        };
        return Err(Failure::Usage(format!(
            "--{} does not apply to `agentplane {command}` ({taken}; see `agentplane {command} --help`)",
            flag.long()
        )));
    }
    match (before.as_ref(), after) {
        (Some(first), Some(second)) if *first != second => Err(Failure::Usage(format!(
            "--{} is given twice (before and after `{command}`) with two values; give it once",
            flag.long()
        ))),
        (_, Some(value)) => {
            *before = Some(value);
            Ok(())
        }
        (_, None) => Ok(()),
    }
}

impl Command {
    /// Whether the command was asked for JSON: its failures are then printed
    /// as a JSON object too.
    pub fn json(&self) -> bool {
        match self {
            Self::Keys { json, .. }
            | Self::Sweep { json, .. }
            | Self::Runs { json, .. }
            | Self::Show { json, .. }
            | Self::Verify { json, .. }
            | Self::Checkpoint { json, .. }
            | Self::Prove { json, .. }
            | Self::Cost { json, .. }
            | Self::Diff { json, .. }
            | Self::VerifyExport { json, .. }
            | Self::VerifyProof { json, .. } => *json,
            Self::Audit(args) => args.json,
            _ => false,
        }
    }

    /// Whether its JSON is a stream in JSON Lines (`sweep`): a failure is
    /// then one line of it.
    pub fn json_lines(&self) -> bool {
        matches!(self, Self::Sweep { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_usage_and_every_usage_a_command() {
        let cli = Cli::command();
        let known: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
        for name in &known {
            assert!(USAGES.iter().any(|usage| usage.command == *name), "{name} has no entry in USAGES");
        }
        for usage in USAGES {
            assert!(known.contains(&usage.command), "USAGES names {}, which is not a command", usage.command);
            assert!(!usage.examples.is_empty(), "{} has no example", usage.command);
        }
        command().debug_assert();
    }
}
