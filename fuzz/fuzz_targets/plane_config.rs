//! `agentplane.toml`: parsed as the command reads it; what parses writes back
//! and reads the same, and its names and origins go through their validators.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = agentplane_cli::plane_config::parse(text) else { return };
    if let Ok(written) = toml::to_string_pretty(&config) {
        assert_eq!(agentplane_cli::plane_config::parse(&written).ok(), Some(config.clone()));
    }
    for tenant in &config.tenants {
        let _ = journal_core::TenantId::new(&tenant.name);
        let _ = witness::Origin::new(&tenant.origin);
    }
    for entry in &config.witnesses {
        let _ = witness::TrustedWitness::parse(&entry.key);
    }
    if let Some(every) = &config.sweep_every {
        let _ = agentplane_cli::plane_config::interval(every);
    }
});
