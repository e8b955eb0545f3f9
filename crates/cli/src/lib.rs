//! What of the `agentplane` command other code reads: the format of the
//! plane's configuration file, `agentplane.toml` (its fuzz target parses it).
//! The command itself is the binary.
//!
//! ```
//! let config = agentplane_cli::plane_config::parse(
//!     "store = \"agentplane.redb\"\nkeys = \"agentplane.key\"\n\n[[tenant]]\nname = \"shop\"\norigin = \"example.com/shop\"\n",
//! )?;
//! assert_eq!(config.tenants[0].name, "shop");
//! # Ok::<(), toml::de::Error>(())
//! ```

pub mod plane_config;
