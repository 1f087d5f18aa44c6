//! The hello's token is a secret (drivers/PROTOCOL.md, "Credentials"): no reply and no log line on
//! stderr shows it, even where the crate's own messages would quote it.

use std::io::Write;
use std::sync::RwLock;

const HIDDEN: &str = "***";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

pub fn hide(secret: &str) {
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !secret.is_empty() && !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
}

pub fn redact(text: &str) -> String {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    secrets
        .iter()
        .fold(text.to_string(), |shown, secret| shown.replace(secret.as_str(), HIDDEN))
}

/// Stderr, each line redacted: the logger's target (env_logger writes one record per call).
pub struct RedactingStderr {
    pending: Vec<u8>,
}

impl RedactingStderr {
    pub fn new() -> RedactingStderr {
        RedactingStderr { pending: Vec::new() }
    }
}

impl Write for RedactingStderr {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(data);
        if let Some(cut) = self.pending.iter().rposition(|b| *b == b'\n') {
            let lines: Vec<u8> = self.pending.drain(..=cut).collect();
            std::io::stderr().write_all(redact(&String::from_utf8_lossy(&lines)).as_bytes())?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_never_shown() {
        hide("s3cr3t-token");
        assert_eq!(redact("Bearer s3cr3t-token."), "Bearer ***.");
    }
}
